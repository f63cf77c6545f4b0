//! `labrun bench` end to end without a VM: the lab names an existing machine,
//! which here is an OpenSSH server on 127.0.0.1 that this test starts. The
//! real binary pushes the agent, runs restic and borg from Debian's packages
//! at a tiny scale, pulls the evidence back and summarizes it.

mod common;
mod run_output;

use labrun_ssh::test_support::Sshd;
use run_output::{only_run_dir, records};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LABRUN: &str = env!("CARGO_BIN_EXE_labrun");

fn write_lab(dir: &Path, sshd: &Sshd, cycles: u32, scale: f64) -> PathBuf {
    common::target_lab(
        dir,
        sshd,
        "lab.yaml",
        "e2e",
        &format!("dataset: {{kind: synthetic, seed: 7, scale: {scale}}}"),
        cycles,
    )
}

fn labrun(lab: &Path, results: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(LABRUN);
    c.arg("-f")
        .arg(lab)
        .arg("bench")
        .arg("--plain")
        .arg("--tools")
        .arg("restic,borg")
        .arg("--results")
        .arg(results)
        .args(extra);
    c
}

/// Every (tool, cycle) has the four timed steps and a passing restore.
fn assert_complete(run: &Path, cycles: u64) {
    let recs = records(run);
    for tool in ["restic", "borg"] {
        for cycle in 1..=cycles {
            for step in ["init", "backup_full", "backup_incremental", "restore"] {
                let r = recs
                    .iter()
                    .find(|r| r["tool"] == tool && r["cycle"] == cycle && r["step"] == step)
                    .unwrap_or_else(|| panic!("no {tool} cycle {cycle} {step} record"));
                assert_eq!(r["ok"], true, "{tool} c{cycle} {step}: {r}");
                assert_eq!(r["timed"], true);
            }
            // The restored tree's check is its own (untimed) record.
            let verify = recs
                .iter()
                .find(|r| r["tool"] == tool && r["cycle"] == cycle && r["step"] == "verify")
                .unwrap_or_else(|| panic!("no {tool} cycle {cycle} verify record"));
            assert_eq!(verify["verify"]["passed"], true, "{verify}");
            assert_eq!(verify["ok"], true, "{verify}");
            let full = recs
                .iter()
                .find(|r| r["tool"] == tool && r["cycle"] == cycle && r["step"] == "backup_full")
                .expect("full");
            let incr = recs
                .iter()
                .find(|r| {
                    r["tool"] == tool && r["cycle"] == cycle && r["step"] == "backup_incremental"
                })
                .expect("incremental");
            let (a, b) = (
                full["repo_size_bytes"].as_u64().unwrap_or(0),
                incr["repo_size_bytes"].as_u64().unwrap_or(0),
            );
            assert!(a > 0 && b > a, "{tool} c{cycle}: repo {a} -> {b}");
        }
    }
    let md = std::fs::read_to_string(run.join("summary.md")).expect("summary.md");
    for needle in ["restic", "borg", "restore", "ncremental"] {
        assert!(md.contains(needle), "summary.md lacks {needle}:\n{md}");
    }
    for f in [
        "summary.json",
        "summary.csv",
        "raw/environment.json",
        "raw/binary-sha256.txt",
        "raw/lab.yaml",
        "raw/plan.json",
    ] {
        assert!(run.join(f).is_file(), "{f} missing in {}", run.display());
    }
    let digests = std::fs::read_to_string(run.join("raw/binary-sha256.txt")).expect("digests");
    assert!(digests.contains("/usr/bin/restic") && digests.contains("/usr/bin/borg"));
    // The password reaches the tools through their environment only.
    for entry in walk(run) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("lab-only-not-a-secret"),
            "a secret leaked into {}",
            entry.display()
        );
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn bench_over_ssh_runs_every_cycle_and_summarizes() {
    let sshd = Sshd::start().expect("sshd");
    let dir = tempfile::tempdir().expect("tempdir");
    let lab = write_lab(dir.path(), &sshd, 2, 0.001);
    let results = dir.path().join("results");
    let out = labrun(&lab, &results, &[]).output().expect("run labrun");
    let text = format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}\nsshd log:\n{}", sshd.log());
    assert!(text.contains("estimated duration"), "{text}");
    let run = only_run_dir(&results);
    assert_complete(&run, 2);
}

#[test]
fn attach_finishes_a_run_whose_client_was_killed() {
    let sshd = Sshd::start().expect("sshd");
    let dir = tempfile::tempdir().expect("tempdir");
    let lab = write_lab(dir.path(), &sshd, 2, 0.001);
    let results = dir.path().join("results");
    let mut child = labrun(&lab, &results, &[])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn labrun");
    // Wait until the first step's evidence is on the host, then cut the client.
    let deadline = Instant::now() + Duration::from_secs(300);
    let run = loop {
        assert!(Instant::now() < deadline, "no evidence pulled within 300 s");
        let first = std::fs::read_dir(&results)
            .ok()
            .and_then(|mut rd| rd.next())
            .and_then(Result::ok);
        if let Some(e) = first.filter(|e| !records(&e.path()).is_empty()) {
            break e.path();
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    child.kill().expect("kill client");
    let _ = child.wait();
    let before = records(&run).len();
    assert!(before >= 1);

    let out = labrun(&lab, &results, &["--attach"])
        .output()
        .expect("run labrun --attach");
    assert!(
        out.status.success(),
        "attach failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        records(&run).len() > before,
        "attach pulled nothing new ({before} records before):\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_complete(&run, 2);
}
