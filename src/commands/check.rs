//! `labrun check`: validate a lab file and say what it will do. The logic
//! lives in `labrun-lab`; this file only decides what to print and the exit
//! status (0 valid, 1 invalid or unreadable, 2 bad `--scale`).

use crate::context::Context;
use labrun_lab::{Lab, LabError, check_scale};
use std::path::Path;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Describe the dataset at this scale (0 < F <= 1) instead of the lab's.
    #[arg(long, value_name = "F")]
    pub scale: Option<f64>,
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let outcome = check(&ctx.lab_path, args.scale);
    print!("{}", outcome.stdout);
    eprint!("{}", outcome.stderr);
    Ok(ExitCode::from(outcome.status))
}

struct Outcome {
    stdout: String,
    stderr: String,
    status: u8,
}

fn check(path: &Path, scale: Option<f64>) -> Outcome {
    let fail = |stderr: String, status| Outcome {
        stdout: String::new(),
        stderr,
        status,
    };
    if let Some(s) = scale
        && let Err(msg) = check_scale(s)
    {
        return fail(format!("labrun check: --scale: {msg}\n"), 2);
    }
    match Lab::load(path) {
        Ok(lab) => Outcome {
            stdout: format!("{}ok: {} is valid\n", lab.describe(scale), path.display()),
            stderr: String::new(),
            status: 0,
        },
        // Already `file:line:column: path: message`, one per problem.
        Err(e @ (LabError::Parse { .. } | LabError::Invalid { .. })) => fail(format!("{e}\n"), 1),
        Err(e) => fail(format!("labrun check: {e}\n"), 1),
    }
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn shipped_labs_pass_and_describe_themselves() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for lab in ["lab.yaml", "labs/restic-borg-kopia.yaml"] {
            let out = check(&root.join(lab), Some(0.01));
            assert_eq!(out.status, 0, "{lab}: {}", out.stderr);
            assert!(out.stdout.contains("timed steps") && out.stdout.contains("ok: "));
        }
    }

    #[test]
    fn every_problem_is_printed_and_the_status_is_1() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.yaml");
        std::fs::write(&path, "name: bad\ncycles: 0\ntools: []\n").unwrap();
        let out = check(&path, None);
        assert_eq!(out.status, 1);
        assert!(
            out.stderr
                .contains("bad.yaml:2:9: cycles: must be at least 1"),
            "{}",
            out.stderr
        );
        assert!(
            out.stderr
                .contains("bad.yaml:3:8: tools: a lab needs at least one tool"),
            "{}",
            out.stderr
        );

        let out = check(&dir.path().join("missing.yaml"), None);
        assert_eq!(out.status, 1);
        assert!(out.stderr.contains("-f FILE"), "{}", out.stderr);

        assert_eq!(check(&path, Some(0.0)).status, 2);
    }
}
