//! Running `ip`, `tc` and `ssh-keygen`: their output when they succeed,
//! their own words when they do not.

use super::error::StorageError;
use std::process::{Command, Stdio};

/// Runs `argv` to its end; its stdout, or an error with its stderr.
pub fn run(argv: &[&str]) -> Result<String, StorageError> {
    let failed = |message: String| StorageError::Command {
        command: argv.join(" "),
        message,
    };
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| failed("empty command".into()))?;
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| failed(format!("cannot start it ({e})")))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        Err(failed(if stderr.is_empty() {
            out.status.to_string()
        } else {
            stderr
        }))
    }
}

/// Whether `program` can be started at all (`program arg` ran, whatever it
/// answered).
pub fn exists(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}
