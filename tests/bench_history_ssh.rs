//! `labrun bench` with `labs/history.yaml` end to end, without a VM: the lab
//! is pointed at an OpenSSH server on 127.0.0.1 that this test starts, and
//! shrunk to a 3-commit history. The real binary pushes the agent, which
//! backs up each commit with restic, borg and duplicity from Debian's
//! packages and restores every snapshot; the evidence comes back and the
//! summary has the per-snapshot table.

mod common;
mod run_output;

use labrun_ssh::test_support::Sshd;
use run_output::{only_run_dir, records};
use std::path::{Path, PathBuf};
use std::process::Command;

const COMMITS: u64 = 3;

fn write_lab(dir: &Path, sshd: &Sshd) -> PathBuf {
    common::target_lab(
        dir,
        sshd,
        "labs/history.yaml",
        "history-e2e",
        &format!(
            "dataset:\n  kind: git-history\n  generate: {{seed: 4, commits: {COMMITS}, files: 50, mean_file_bytes: 2000, churn: 0.1}}"
        ),
        1,
    )
}

#[test]
#[ignore = "runs real backup tools end to end over SSH, for minutes: `make test` runs it"]
fn bench_over_ssh_backs_up_each_commit_and_restores_every_snapshot() {
    let sshd = Sshd::start().expect("sshd");
    let dir = tempfile::tempdir().expect("tempdir");
    let lab = write_lab(dir.path(), &sshd);
    let results = dir.path().join("results");
    common::bench_ok(&lab, &results, "restic,borg,duplicity", &[], &sshd);
    let run = &only_run_dir(&results);
    let records = records(run);
    for tool in ["restic", "borg", "duplicity"] {
        for k in 1..=COMMITS {
            for step in ["restore", "verify"] {
                let r = records
                    .iter()
                    .find(|r| r["tool"] == tool && r["step"] == step && r["history"]["index"] == k)
                    .unwrap_or_else(|| panic!("no {tool} {step} of snapshot {k}"));
                assert_eq!(r["ok"], true, "{tool} {step} s{k}: {r}");
            }
            let backup = if k == 1 {
                "backup_full"
            } else {
                "backup_incremental"
            };
            assert!(
                records.iter().any(|r| r["tool"] == tool
                    && r["step"] == backup
                    && r["history"]["index"] == k
                    && r["ok"] == true
                    && r["timed"] == true),
                "{tool}: no timed {backup} of snapshot {k}"
            );
        }
    }
    for k in 1..=COMMITS {
        let m = run.join(format!("raw/manifests/commit-{k:04}.jsonl"));
        assert!(m.is_file(), "{} missing", m.display());
    }
    let md = std::fs::read_to_string(run.join("summary.md")).expect("summary.md");
    assert!(md.contains("## Per snapshot (git history)"), "{md}");
    for tool in ["restic", "borg", "duplicity"] {
        // One row per snapshot (the results table names the version too).
        let rows = md
            .lines()
            .filter(|l| l.starts_with(&format!("| {tool} | ")))
            .count();
        assert_eq!(rows, COMMITS as usize, "{tool} in\n{md}");
    }
    assert!(run.join("history.svg").is_file());
}

/// A repository on the host is pushed into the guest as a bundle and read
/// there: the plan kept as evidence names the guest's copy, and every
/// snapshot is restored and verified.
#[test]
#[ignore = "runs real backup tools end to end over SSH, for minutes: `make test` runs it"]
fn a_repository_on_the_host_is_pushed_into_the_guest() {
    let sshd = Sshd::start().expect("sshd");
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("src-repo");
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(args)
            .output()
            .expect("git");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    std::fs::create_dir_all(&repo).unwrap();
    git(&["init", "-q"]);
    for k in 1..=3 {
        std::fs::write(repo.join(format!("file{k}.txt")), format!("commit {k}\n")).unwrap();
        std::fs::write(repo.join("common.txt"), format!("version {k}\n")).unwrap();
        git(&["add", "-A"]);
        git(&["commit", "-q", "-m", &format!("c{k}")]);
    }
    let lab = common::target_lab(
        dir.path(),
        &sshd,
        "labs/history.yaml",
        "history-push",
        &format!(
            "dataset:\n  kind: git-history\n  repository: {}\n  commits: [HEAD~2, HEAD~1, HEAD]",
            repo.display()
        ),
        1,
    );
    let results = dir.path().join("results");
    let text = common::bench_ok(&lab, &results, "restic,borg", &[], &sshd);
    assert!(text.contains("pushed the repository"), "{text}");
    let run = only_run_dir(&results);
    let plan = std::fs::read_to_string(run.join("raw/plan.json")).unwrap();
    assert!(plan.contains("/repository.bundle"), "{plan}");
    assert!(!plan.contains(&repo.display().to_string()), "{plan}");
    let records = records(&run);
    for tool in ["restic", "borg"] {
        for k in 1..=3u64 {
            let v = records
                .iter()
                .find(|r| r["tool"] == tool && r["step"] == "verify" && r["history"]["index"] == k)
                .unwrap_or_else(|| panic!("no {tool} verify of snapshot {k}"));
            assert_eq!(v["ok"], true, "{tool} s{k}: {v}");
        }
    }
}
