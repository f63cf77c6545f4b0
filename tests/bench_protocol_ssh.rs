//! Labs with their own protocol, run end to end by the real binary over SSH
//! to this host (as tests/bench_ssh.rs): `labs/maintenance.yaml` and
//! `labs/interrupted.yaml` with restic and borg from Debian's packages at a
//! tiny scale. The maintenance lab also gets a step labrun's code has never
//! seen (`restic stats`), added to the lab text alone.

mod common;
mod run_output;

use labrun_ssh::test_support::Sshd;
use run_output::{only_run_dir, records};
use serde_json::Value;
use std::path::Path;

/// Runs `shipped` (restic and borg) after `edit` changed its lab text; gives
/// the run folder and every record.
fn bench(
    shipped: &str,
    edit: impl Fn(String) -> String,
) -> (tempfile::TempDir, std::path::PathBuf, Vec<Value>) {
    let sshd = Sshd::start().expect("sshd");
    let dir = tempfile::tempdir().expect("tempdir");
    let lab = common::target_lab(
        dir.path(),
        &sshd,
        shipped,
        "protocol-e2e",
        "dataset: {kind: synthetic, seed: 7, scale: 0.002}",
        1,
    );
    let text = std::fs::read_to_string(&lab).expect("lab");
    std::fs::write(&lab, edit(text)).expect("write lab");
    let results = dir.path().join("results");
    common::bench_ok(&lab, &results, "restic,borg", &[], &sshd);
    let run = only_run_dir(&results);
    let recs = records(&run);
    (dir, run, recs)
}

fn record<'a>(recs: &'a [Value], tool: &str, step: &str) -> &'a Value {
    recs.iter()
        .find(|r| r["tool"] == tool && r["step"] == step)
        .unwrap_or_else(|| panic!("no {tool} {step} record"))
}

fn summary(run: &Path) -> String {
    std::fs::read_to_string(run.join("summary.md")).expect("summary.md")
}

#[test]
#[ignore = "runs real backup tools end to end over SSH, for minutes: `make test` runs it"]
fn maintenance_steps_and_a_step_labrun_never_saw() {
    let (_dir, run, recs) = bench("labs/maintenance.yaml", |lab| {
        lab.replace(
            "  - {run: prune}\n",
            "  - {run: prune}\n  - {run: stats, optional: true}\n",
        )
        .replace(
            "      prune: [\"{bin}\", prune, -r, \"{repo}\"]\n",
            "      prune: [\"{bin}\", prune, -r, \"{repo}\"]\n      stats: [\"{bin}\", stats, -r, \"{repo}\", --mode, raw-data]\n",
        )
    });
    for tool in ["restic", "borg"] {
        for step in [
            "check",
            "check_all_data",
            "forget_s1",
            "prune",
            "restore_after_prune",
        ] {
            let r = record(&recs, tool, step);
            assert_eq!(r["ok"], true, "{tool} {step}: {r}");
            assert_eq!(r["timed"], true, "{tool} {step}");
            assert_eq!(r["cache_dropped"], true, "{tool} {step}");
        }
        for step in ["check", "check_all_data", "forget_s1", "prune"] {
            assert!(
                record(&recs, tool, step)["repo_size_bytes"]
                    .as_u64()
                    .is_some(),
                "{tool} {step}"
            );
        }
        // The snapshot kept is still whole after maintenance.
        let again = record(&recs, tool, "verify_after_prune");
        assert_eq!(again["verify"]["passed"], true, "{tool}: {again}");
        // Forgetting the older snapshot and pruning never grows the repository.
        let size = |s| record(&recs, tool, s)["repo_size_bytes"].as_u64().unwrap();
        assert!(
            size("prune") <= size("forget_s1"),
            "{tool}: prune grew the repository"
        );
    }
    // restic forgot its own snapshot id, not labrun's label.
    let forget = record(&recs, "restic", "forget_s1");
    let id = forget["snapshot"].as_str().unwrap();
    assert!(
        id.len() == 64 && id.chars().all(|c| c.is_ascii_hexdigit()),
        "{forget}"
    );
    // The step only the lab knows: timed for restic, skipped by borg.
    let stats = record(&recs, "restic", "stats");
    assert_eq!(
        (stats["ok"].clone(), stats["timed"].clone()),
        (true.into(), true.into()),
        "{stats}"
    );
    assert!(
        !recs
            .iter()
            .any(|r| r["tool"] == "borg" && r["step"] == "stats")
    );
    let md = summary(&run);
    for phase in [
        "### check (`check`)",
        "### check_all_data",
        "### prune",
        "### stats",
    ] {
        assert!(md.contains(phase), "summary.md lacks {phase}:\n{md}");
    }
}

#[test]
#[ignore = "runs real backup tools end to end over SSH, for minutes: `make test` runs it"]
fn an_interrupted_backup_is_resumed_checked_and_restored() {
    // The lab as shipped: the kill at half of the reference backup's time
    // (restic derives its key with scrypt and borg starts Python before
    // either reads a file, so half-way is still inside the backup).
    let (_dir, run, recs) = bench("labs/interrupted.yaml", |lab| lab);
    let mut killed = 0;
    for tool in ["restic", "borg"] {
        let reference = record(&recs, tool, "backup_reference");
        assert_eq!(reference["ok"], true, "{tool}: {reference}");
        let cut = record(&recs, tool, "backup_interrupted");
        assert_eq!(cut["ok"], true, "{tool}: {cut}");
        let planned = &cut["planned_kill"];
        let of = &planned["fraction_of"];
        assert_eq!(of["step"], "backup_reference", "{tool}: {cut}");
        assert_eq!(
            of["step_wall_secs"], reference["wall_secs"],
            "{tool}: {cut}"
        );
        let half = 0.5 * reference["wall_secs"].as_f64().unwrap();
        assert!(
            (planned["after_secs"].as_f64().unwrap() - half).abs() < 1e-9,
            "{tool}: {cut}"
        );
        if planned["killed"] == true {
            killed += 1;
            assert!(
                cut["wall_secs"].as_f64().unwrap() < half + 5.0,
                "{tool}: {cut}"
            );
        }
        // The check right after the kill may fail; its record says so.
        let first_check = record(&recs, tool, "check_after_kill");
        assert_eq!(first_check["timed"], false, "{tool}: {first_check}");
        if first_check["ok"] == false {
            assert_eq!(first_check["may_fail"], true, "{tool}: {first_check}");
        }
        for step in [
            "drop_reference",
            "backup_resumed",
            "check",
            "restore",
            "verify",
        ] {
            let r = record(&recs, tool, step);
            assert_eq!(r["ok"], true, "{tool} {step}: {r}");
        }
        assert_eq!(record(&recs, tool, "verify")["verify"]["passed"], true);
        assert_eq!(record(&recs, tool, "unlock")["timed"], false);
    }
    assert!(
        killed > 0,
        "neither tool was still running half-way through the reference's time: {recs:?}"
    );
    let md = summary(&run);
    for phase in [
        "### backup_reference",
        "### backup_interrupted",
        "### backup_resumed",
    ] {
        assert!(md.contains(phase), "summary.md lacks {phase}:\n{md}");
    }
}

#[test]
#[ignore = "runs real backup tools end to end over SSH, for minutes: `make test` runs it"]
fn snapshots_pile_up_and_the_first_and_last_restore_whole() {
    let (_dir, run, recs) = bench("labs/snapshots.yaml", |lab| lab);
    for tool in ["restic", "borg"] {
        // Each round's backup grows the repository: its change differs.
        let mut sizes = vec![
            record(&recs, tool, "backup_full")["repo_size_bytes"]
                .as_u64()
                .unwrap(),
        ];
        for k in 2..=6 {
            let r = record(&recs, tool, &format!("backup_{k}"));
            assert_eq!(r["ok"], true, "{tool} backup_{k}: {r}");
            sizes.push(r["repo_size_bytes"].as_u64().unwrap());
        }
        assert!(sizes.windows(2).all(|w| w[1] > w[0]), "{tool}: {sizes:?}");
        for step in ["verify_first", "verify_last"] {
            let v = record(&recs, tool, step);
            assert_eq!(v["verify"]["passed"], true, "{tool} {step}: {v}");
        }
        for step in ["restore_first", "restore_last"] {
            assert_eq!(record(&recs, tool, step)["timed"], true, "{tool} {step}");
        }
    }
    // Each round has its own manifest, and they differ.
    let raw = run.join("raw/manifests");
    let first = std::fs::read(raw.join("changed.jsonl")).expect("changed.jsonl");
    let last = std::fs::read(raw.join("changed-5.jsonl")).expect("changed-5.jsonl");
    assert_ne!(first, last);
    let md = summary(&run);
    assert!(md.contains("### restore_last"), "{md}");
}
