//! `labs/regression.yaml`'s verdicts, end to end without a VM (an OpenSSH
//! server on 127.0.0.1 that this test starts as the machine): borg with
//! `--compression zstd,22` is found `slower` than its default on the full
//! backup; an A/A pair (the same binary and settings under two names) is
//! never `slower` or `faster`; the pair whose tools were not run is said
//! not to be made; `--until-conclusive` adds cycles while a verdict is
//! open, never beyond its maximum. The verdicts are in the summary, made
//! from raw/ alone.

mod common;
mod run_output;

use labrun_ssh::test_support::Sshd;
use run_output::{only_run_dir, records};

#[test]
#[ignore = "runs real backup tools end to end over SSH, for minutes: `make test` runs it"]
fn the_regression_lab_finds_the_slower_setting_and_no_difference_in_a_a() {
    let sshd = Sshd::start().expect("sshd");
    let dir = tempfile::tempdir().expect("tempdir");
    let lab = common::target_lab(
        dir.path(),
        &sshd,
        "labs/regression.yaml",
        "regression",
        "dataset: {kind: synthetic, seed: 7, scale: 0.001}",
        3,
    );
    // target_lab keeps only the shipped lab's protocol and tools: the
    // lab's `compare:` and `noise_floor:` are added here (the floor adds
    // `borg@aa` and its pair after the others). The zstd pair asks about
    // the one row this test judges, the full backup's wall time: its
    // verdict is then Holm-adjusted over that row alone, not over twenty,
    // so a loaded host's noise (seen: relative deviations of 40% at this
    // tiny scale) does not turn a 2.5x slowdown into "inconclusive".
    let mut text = std::fs::read_to_string(&lab).unwrap();
    text.push_str(
        "compare:\n  pairs:\n    - {baseline: borg, candidate: borg@zstd22, phase: backup_full, figure: wall_time}\n    - {baseline: restic, candidate: restic@0.14.0}\nnoise_floor: {tool: borg}\n",
    );
    std::fs::write(&lab, text).unwrap();
    let results = dir.path().join("results");
    // 3 cycles of the lab, then up to 2 more while a verdict is open (the
    // A/A pair's cannot close in 5 pairs: it needs its interval within 5%).
    let text = common::bench_ok(
        &lab,
        &results,
        "borg,borg@zstd22",
        &["--until-conclusive", "2"],
        &sshd,
    );
    let run = only_run_dir(&results);
    let added: labrun_evidence::compare::AddedPairs = serde_json::from_str(
        &std::fs::read_to_string(run.join("raw/added-pairs.json")).expect("added-pairs.json"),
    )
    .unwrap();
    assert!(added.added >= 1 && added.added <= 2, "{added:?}");
    assert_eq!(added.rounds.len() as u32, added.added);
    assert!(
        added
            .rounds
            .iter()
            .all(|r| r.tools.contains(&"borg@aa".to_string()))
    );
    // Never beyond the maximum: no record past cycle 3 + added.
    let last = records(&run)
        .iter()
        .filter_map(|r| r["cycle"].as_u64())
        .max()
        .unwrap();
    assert_eq!(last, 3 + u64::from(added.added), "{text}");
    if added.added < 2 {
        assert!(
            text.contains("every verdict the lab asked for is conclusive"),
            "{text}"
        );
    } else {
        assert!(
            text.contains("still inconclusive after 2 added pair(s)"),
            "{text}"
        );
    }
    assert!(run.join("raw/compare-plan.json").is_file());
    // The setting under test reached the candidate's backups only.
    for r in records(&run) {
        if r["step"] == "backup_full" {
            let zstd = r["argv"]
                .to_string()
                .contains(r#""--compression","zstd,22""#);
            assert_eq!(zstd, r["tool"] == "borg@zstd22", "{r}");
        }
    }

    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let comparisons = summary["comparisons"].as_array().expect("comparisons");
    assert_eq!(comparisons.len(), 2, "the restic pair was not run");
    let find = |c: &serde_json::Value, phase: &str, figure: &str| {
        c["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["phase"] == phase && r["figure"] == figure)
            .cloned()
            .unwrap_or_else(|| panic!("no {phase} {figure} row in {c}"))
    };
    let zstd = &comparisons[0];
    assert_eq!(zstd["candidate"]["tool"], "borg@zstd22");
    let full = find(zstd, "backup_full", "wall_time");
    assert_eq!(full["verdict"], "worse", "{full}");
    assert_eq!(full["verdict_word"], "slower");
    // Its pairs: the lab's 3, and one per added cycle it was still open in.
    let pairs = full["pairs"].as_u64().unwrap();
    assert!((3..=5).contains(&pairs), "{full}");
    // Only the row asked about is judged and shown.
    assert_eq!(zstd["rows"].as_array().unwrap().len(), 1, "{zstd}");

    let aa = &comparisons[1];
    assert_eq!(aa["candidate"]["tool"], "borg@aa");
    assert_eq!(summary["noise_floor"]["copy"], "borg@aa");
    for row in aa["rows"].as_array().unwrap() {
        let v = row["verdict"].as_str().unwrap();
        assert!(
            v == "no_change" || v == "inconclusive",
            "an A/A row came out {v}: {row}"
        );
    }

    let md = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(md.contains("## Verdict: borg@zstd22 against borg"), "{md}");
    assert!(
        md.contains("## Noise floor: borg@aa against borg (A/A)"),
        "{md}"
    );
    assert!(md.contains("`--until-conclusive 2` added"), "{md}");
    assert!(
        md.contains(
            "The comparison of restic@0.14.0 (candidate) against restic (baseline) was not made"
        ),
        "{md}"
    );
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(html.contains("Verdict: borg@zstd22 against borg"));

    // Re-made from raw/ alone, the verdicts are the same.
    std::fs::remove_file(run.join("summary.json")).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_labrun"))
        .arg("report")
        .arg(&run)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let again: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    assert_eq!(again["comparisons"], summary["comparisons"]);
}
