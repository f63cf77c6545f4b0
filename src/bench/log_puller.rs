//! The log puller: one consumer of a followed run's events. Each finished
//! step's two logs are pulled as soon as its event arrives, so a lost
//! connection loses nothing already measured; at the end the whole evidence
//! folder is pulled ([`pull_all`]) and the guest's own files replace the
//! host's copies.
//!
//! The logs come in one exec, framed as `<bytes> <path>` lines each followed
//! by exactly that many bytes. The puller runs on its own task
//! ([`crate::bench::consumers`]): a slow pull never holds back the display.

use crate::bench::layout::{RemoteRun, sh_quote};
use labrun_evidence::StepRecord;
use labrun_ssh::Session;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a finished step's logs come from: the run's machine, or a fake in
/// tests.
pub trait StepLogs: Send + 'static {
    /// Pulls `record`'s logs into the host's evidence. Failures are not
    /// fatal: the final pull gets everything again.
    fn pull(&self, record: &StepRecord) -> impl Future<Output = ()> + Send;
}

/// A step's logs pulled from the run's machine over its SSH session.
pub struct SessionLogs {
    pub session: Arc<Session>,
    pub remote: RemoteRun,
    pub raw: PathBuf,
}

impl StepLogs for SessionLogs {
    async fn pull(&self, record: &StepRecord) {
        let wanted: Vec<String> = [&record.stdout_path, &record.stderr_path]
            .into_iter()
            .flatten()
            .filter(|rel| safe_join(&self.raw, rel).is_some())
            .cloned()
            .collect();
        if wanted.is_empty() {
            return;
        }
        let script = framed_cat_script(&self.remote.evidence(), &wanted);
        let Ok(out) = self.session.exec(&script).await else {
            return;
        };
        for (rel, bytes) in parse_framed(&out.stdout) {
            let Some(local) = safe_join(&self.raw, &rel).filter(|_| wanted.contains(&rel)) else {
                continue;
            };
            let _ = write_replacing(&local, &bytes);
        }
    }
}

/// Pulls the whole evidence folder (the agent's copy of events included).
pub async fn pull_all(session: &Session, remote: &RemoteRun, raw: &Path) -> anyhow::Result<()> {
    session.download_dir(&remote.evidence(), raw).await?;
    Ok(())
}

/// Logs bigger than this wait for the final pull (one exec's output is
/// held in memory).
const STEP_PULL_MAX_FILE: u64 = 8 << 20;

/// Prints each file of `rels` (relative to `dir`) that exists as a
/// `<bytes> <path>` line and exactly that many bytes. `head -c` so a file
/// that grows meanwhile still matches its header.
fn framed_cat_script(dir: &str, rels: &[String]) -> String {
    let list: Vec<String> = rels.iter().map(|r| sh_quote(r)).collect();
    format!(
        "cd {dir} || exit 1\n\
         for f in {list}; do\n\
         [ -f \"$f\" ] || continue\n\
         n=$(wc -c < \"$f\") || continue\n\
         [ \"$n\" -le {max} ] || continue\n\
         printf '%s %s\\n' \"$n\" \"$f\" && head -c \"$n\" \"$f\"\n\
         done",
        dir = sh_quote(dir),
        list = list.join(" "),
        max = STEP_PULL_MAX_FILE,
    )
}

/// Splits [`framed_cat_script`]'s output; stops at anything malformed or cut.
fn parse_framed(mut out: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    while let Some(nl) = out.iter().position(|&b| b == b'\n') {
        let header = String::from_utf8_lossy(&out[..nl]).into_owned();
        let Some((n, name)) = header.split_once(' ') else {
            break;
        };
        let Ok(n) = n.parse::<usize>() else { break };
        let body = &out[nl + 1..];
        if body.len() < n {
            break;
        }
        files.push((name.to_string(), body[..n].to_vec()));
        out = &body[n..];
    }
    files
}

/// Writes `path` through a temporary file beside it, so a reader (or a
/// crash) never sees half of it.
fn write_replacing(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut name = std::ffi::OsString::from(".");
    name.push(path.file_name().unwrap_or_default());
    name.push(".labrun-part");
    let tmp = path.with_file_name(name);
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// Joins a relative path from the guest under `base`, refusing anything that
/// would climb out of it.
fn safe_join(base: &Path, rel: &str) -> Option<PathBuf> {
    let p = Path::new(rel);
    if p.is_absolute()
        || p.components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return None;
    }
    Some(base.join(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framed_files_round_trip_through_sh() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("logs/restic")).unwrap();
        std::fs::write(dir.path().join("records.jsonl"), "{\"a\":1}\n{\"b\"").unwrap();
        std::fs::write(dir.path().join("logs/restic/c1-init.out"), "").unwrap();
        let binary: Vec<u8> = (0..=255u8).chain(b"\n12 x\n".iter().copied()).collect();
        std::fs::write(dir.path().join("logs/restic/c1-init.err"), &binary).unwrap();
        let rels = [
            "records.jsonl",
            "logs/restic/c1-init.out",
            "logs/restic/missing.out",
            "logs/restic/c1-init.err",
        ]
        .map(String::from);
        let script = framed_cat_script(&dir.path().display().to_string(), &rels);
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let files = parse_framed(&out.stdout);
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "records.jsonl",
                "logs/restic/c1-init.out",
                "logs/restic/c1-init.err"
            ]
        );
        assert_eq!(files[0].1, b"{\"a\":1}\n{\"b\"");
        assert!(files[1].1.is_empty());
        assert_eq!(files[2].1, binary);
        // A cut stream gives the files that came whole, and no more.
        let cut = &out.stdout[..out.stdout.len() - 1];
        assert_eq!(parse_framed(cut).len(), 2);
    }

    #[test]
    fn safe_join_refuses_escapes() {
        let b = Path::new("/r");
        assert_eq!(
            safe_join(b, "logs/a.out"),
            Some(PathBuf::from("/r/logs/a.out"))
        );
        assert_eq!(safe_join(b, "../x"), None);
        assert_eq!(safe_join(b, "/etc/passwd"), None);
    }
}
