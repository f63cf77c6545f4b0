//! `labrun bisect` end to end without a VM: a toy backup tool in a local git
//! repository of eight commits (the fifth makes every backup 1.5 s slower),
//! built from each commit it probes, run paired against the good commit on
//! an OpenSSH server this test starts on 127.0.0.1 as the lab's machine.
//! The bisection must name the planted commit within ceil(log2 n) + 1
//! probes, keep its state, and say "inconclusive" where one pair cannot
//! decide.

mod toy_repo;

use labrun_ssh::test_support::Sshd;
use std::path::Path;
use std::process::Command;

fn bisect(lab: &Path, dir: &Path, results: &str, extra: &[&str]) -> (i32, String) {
    bisect_between(lab, dir, results, ["v1", "v3"], extra)
}

fn bisect_between(
    lab: &Path,
    dir: &Path,
    results: &str,
    [good, bad]: [&str; 2],
    extra: &[&str],
) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_labrun"))
        .arg("-f")
        .arg(lab)
        .arg("--cache")
        .arg(dir.join("cache"))
        .arg("--state")
        .arg(dir.join("state"))
        .args(["bisect", "toy", "--good", good, "--bad", bad])
        .args(["--phase", "backup_full"])
        .arg("--results")
        .arg(dir.join(results))
        .args(extra)
        .output()
        .expect("run labrun");
    let text = format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// Three pairs a probe (two more while a verdict is open), a margin of
/// 50%: the planted step is about 6x, while the toy's backups are short
/// enough that a 5% margin could not see through their noise in a few
/// pairs (the probe would be said inconclusive, rightly).
const THREE_PAIRS: [&str; 6] = [
    "--cycles",
    "3",
    "--until-conclusive",
    "2",
    "--margin",
    "50%",
];

/// The bisection's one folder under `results`.
fn bisect_folder(results: &Path) -> std::path::PathBuf {
    let dirs: Vec<_> = std::fs::read_dir(results)
        .expect("results")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

#[test]
#[ignore = "builds a Go program at several commits and runs it end to end over SSH, for minutes: `make test` runs it"]
fn bisect_finds_the_planted_commit_and_says_when_a_probe_is_inconclusive() {
    let sshd = Sshd::start().expect("sshd");
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("toy");
    let ids = toy_repo::write(&repo);
    let lab = toy_repo::lab(dir.path(), &sshd, &repo, &ids[0]);

    // One pair has no interval: the bad end cannot be told from good, and
    // the bisection says so instead of guessing.
    let (code, text) = bisect(
        &lab,
        dir.path(),
        "one-pair",
        &["--cycles", "1", "--until-conclusive", "0"],
    );
    assert_eq!(code, 1, "{text}\nsshd log:\n{}", sshd.log());
    assert!(text.contains("inconclusive: the probe of"), "{text}");
    assert!(text.contains(&format!("probe {}", &ids[7][..12])), "{text}");

    // Three pairs: the planted commit, within the bound.
    let (code, text) = bisect(&lab, dir.path(), "results", &THREE_PAIRS);
    assert_eq!(code, 0, "{text}\nsshd log:\n{}", sshd.log());
    // What the bisection said, for the test's log (`--nocapture`).
    println!("{text}");
    let slow = &ids[toy_repo::SLOW_COMMIT];
    assert!(text.contains(&format!("first bad commit {slow}")), "{text}");
    let folder = bisect_folder(&dir.path().join("results"));
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("bisect.json")).expect("bisect.json"),
    )
    .expect("json");
    let probes = state["outcomes"]
        .as_array()
        .expect("outcomes")
        .iter()
        .filter(|o| !o.is_null())
        .count();
    // 8 commits from v1 to v3: the bad end, then ceil(log2 7) = 3 halvings.
    assert!((2..=4).contains(&probes), "{probes} probes\n{text}");
    assert!(folder.join("bisect.md").is_file());
    // Every probe kept its run.
    let runs = std::fs::read_dir(folder.join("runs"))
        .expect("runs")
        .count();
    assert_eq!(runs, probes, "{text}");
    // Each probe asked about the bisected row alone (so only it could keep
    // `--until-conclusive` adding pairs).
    for run in std::fs::read_dir(folder.join("runs")).expect("runs") {
        let plan = run.expect("run").path().join("raw/compare-plan.json");
        let plan: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&plan).expect("compare plan"))
                .expect("json");
        assert_eq!(plan["pairs"][0]["phase"], "backup_full", "{plan}");
        assert_eq!(plan["pairs"][0]["figure"], "wall_time", "{plan}");
    }

    // Run again: nothing is probed twice, the answer is the same.
    let (code, again) = bisect(&lab, dir.path(), "results", &THREE_PAIRS);
    assert_eq!(code, 0, "{again}");
    assert!(
        again.contains(&format!("continuing: {probes} probe(s) on record")),
        "{again}"
    );
    assert!(
        again.contains(&format!("first bad commit {slow}")),
        "{again}"
    );
    assert!(!again.contains("probe 1 (of"), "{again}");
}

#[test]
#[ignore = "builds a Go program that does not compile: `make test` runs it"]
fn a_good_commit_that_does_not_build_stops_the_search() {
    let sshd = Sshd::start().expect("sshd");
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("toy");
    let ids = toy_repo::write(&repo);
    let (broken, fixed) = toy_repo::break_then_fix(&repo);
    let lab = toy_repo::lab(dir.path(), &sshd, &repo, &ids[0]);
    let (code, text) = bisect_between(&lab, dir.path(), "results", [&broken, &fixed], &[]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(&format!(
            "the good commit {} does not build, so no probe can run against it",
            &broken[..12]
        )),
        "{text}"
    );
    // Nothing was counted: the state on record has no outcome, and no run.
    let folder = bisect_folder(&dir.path().join("results"));
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("bisect.json")).expect("bisect.json"),
    )
    .expect("json");
    assert!(
        state["outcomes"]
            .as_array()
            .expect("outcomes")
            .iter()
            .all(|o| o.is_null()),
        "{state}"
    );
    assert!(!folder.join("runs").exists(), "{text}");
}
