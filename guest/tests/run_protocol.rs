//! A lab's own protocol, run by the agent with `sh` stand-ins for tools:
//! a step the code has never seen, an optional step a tool lacks, a backup
//! killed on purpose and resumed, and the metadata-fidelity fixture backed
//! up and restored by a copy that keeps metadata and by one that does not.

mod common;

use common::*;
use labrun_evidence::{MetadataKind, MetadataStatus, StepRecord};
use serde_json::{Value, json};

fn with_protocol(tools: Vec<Value>, protocol: Value) -> Value {
    let mut plan = base_plan("proto-1", 1, tools);
    plan["protocol"] = protocol;
    plan
}

fn record<'a>(records: &'a [StepRecord], tool: &str, step: &str) -> &'a StepRecord {
    records
        .iter()
        .find(|r| r.tool == tool && r.step.as_str() == step)
        .unwrap_or_else(|| panic!("no {tool} {step} record in {records:#?}"))
}

#[test]
fn a_step_no_code_knows_and_an_optional_one() {
    let lab = Lab::new();
    let stats = json!({"stats": {"argv": ["{bin}", "-c", "du -sb {repo}"]}});
    let plan = with_protocol(
        vec![sh_tool("alpha", stats), sh_tool("beta", json!({}))],
        json!([
            "source",
            {"run": "init"},
            {"run": "backup", "name": "backup_full", "makes": "s1"},
            {"run": "stats", "optional": true},
            {"run": "restore", "restores": "s1", "repo_size": false},
            "verify"
        ]),
    );
    let out = lab.run(&plan);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let records = lab.records();
    let stats = record(&records, "alpha", "stats");
    assert!(stats.ok && stats.timed && stats.cache_dropped, "{stats:?}");
    assert!(
        stats.repo_size_bytes.is_some() && stats.tree.is_some(),
        "{stats:?}"
    );
    assert!(
        !records
            .iter()
            .any(|r| r.tool == "beta" && r.step.as_str() == "stats"),
        "beta has no stats command: the optional step is skipped"
    );
    // The restore of s1 is checked against the generated tree (no change ran).
    for tool in ["alpha", "beta"] {
        let v = record(&records, tool, "verify");
        assert!(v.ok && v.verify.as_ref().unwrap().passed, "{v:?}");
    }
}

#[test]
fn a_backup_killed_on_purpose_then_resumed() {
    let lab = Lab::new();
    let slow =
        json!({"slow_backup": {"argv": ["{bin}", "-c", "mkdir -p {repo}/partial && sleep 30"]}});
    let plan = with_protocol(
        vec![sh_tool("alpha", slow)],
        json!([
            "source",
            {"run": "init"},
            {"run": "slow_backup", "name": "backup_interrupted", "kill_after_secs": 0.5},
            {"run": "backup", "name": "backup_resumed", "makes": "s1"},
            {"run": "restore", "restores": "s1", "repo_size": false},
            "verify"
        ]),
    );
    let out = lab.run(&plan);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let records = lab.records();
    let cut = record(&records, "alpha", "backup_interrupted");
    let kill = cut
        .planned_kill
        .as_ref()
        .expect("the planned kill is recorded");
    assert!(cut.ok && kill.killed && kill.after_secs == 0.5, "{cut:?}");
    assert!(cut.wall_secs >= 0.5 && cut.wall_secs < 10.0, "{cut:?}");
    assert!(
        cut.repo_size_bytes.is_some(),
        "what the killed run left is measured"
    );
    // Nothing of the killed tree outlived its step.
    assert!(
        cut.tree.as_ref().is_none_or(|t| t.leftovers.is_empty()),
        "{cut:?}"
    );
    assert!(record(&records, "alpha", "backup_resumed").ok);
    assert!(
        record(&records, "alpha", "verify")
            .verify
            .as_ref()
            .unwrap()
            .passed
    );
}

fn fidelity_of(copy: &str) -> Vec<(MetadataKind, MetadataStatus)> {
    let lab = Lab::new();
    let tool = sh_tool(
        "alpha",
        json!({"restore": {"argv": ["{bin}", "-c", format!("{copy} {{repo}}/snapshots/{{snapshot}}/. {{target}}")]}}),
    );
    let plan = with_protocol(
        vec![tool],
        json!([
            "source",
            {"run": "init"},
            "fixture",
            {"run": "backup", "name": "backup_fixture", "makes": "f1", "timed": false},
            {"run": "restore", "name": "restore_fixture", "restores": "f1", "timed": false},
            {"do": "verify", "name": "verify_fixture"}
        ]),
    );
    let out = lab.run(&plan);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let records = lab.records();
    let fixture = record(&records, "alpha", "fixture");
    assert!(fixture.ok && fixture.files.unwrap_or(0) > 5, "{fixture:?}");
    assert!(lab.evidence().join("manifests/fidelity.jsonl").is_file());
    let v = record(&records, "alpha", "verify_fixture");
    let outcome = v.verify.as_ref().expect("a verify outcome");
    assert!(
        outcome.passed,
        "content is the same either way: {outcome:?}"
    );
    outcome
        .metadata
        .iter()
        .map(|c| (c.kind, c.status))
        .collect()
}

#[test]
fn the_fixture_shows_what_a_restore_kept() {
    // `cp -a` keeps everything (the xattr where this filesystem holds one).
    for (kind, status) in fidelity_of("cp -a") {
        assert!(
            status == MetadataStatus::Preserved
                || (kind == MetadataKind::Xattr && status == MetadataStatus::NotTested),
            "cp -a: {kind:?} {status:?}"
        );
    }
    // `cp -r` keeps neither modes beyond the umask nor mtimes nor hard links.
    let plain = fidelity_of("cp -r");
    for kind in [
        MetadataKind::Mode,
        MetadataKind::Mtime,
        MetadataKind::Hardlink,
    ] {
        assert!(
            plain.contains(&(kind, MetadataStatus::Lost)),
            "cp -r: {kind:?} not lost in {plain:?}"
        );
    }
}

#[test]
fn change_rounds_make_snapshots_that_differ_and_restore_whole() {
    let lab = Lab::new();
    let plan = with_protocol(
        vec![sh_tool("alpha", json!({})), sh_tool("beta", json!({}))],
        json!([
            "source",
            {"run": "init"},
            {"run": "backup", "name": "backup_full", "makes": "s1"},
            "change",
            {"run": "backup", "name": "backup_2", "makes": "s2"},
            {"do": "change", "name": "change_3"},
            {"run": "backup", "name": "backup_3", "makes": "s3"},
            {"run": "restore", "name": "restore_first", "restores": "s1", "repo_size": false},
            {"do": "verify", "name": "verify_first"},
            {"run": "restore", "name": "restore_last", "restores": "s3", "repo_size": false},
            {"do": "verify", "name": "verify_last"}
        ]),
    );
    let out = lab.run(&plan);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let records = lab.records();
    // Two tool cycles: the second resets the first one's tree, both rounds undone.
    for tool in ["alpha", "beta"] {
        for step in ["verify_first", "verify_last"] {
            let v = record(&records, tool, step);
            assert!(
                v.ok && v.verify.as_ref().unwrap().passed,
                "{tool} {step}: {v:?}"
            );
        }
    }
    let manifests = lab.evidence().join("manifests");
    let one = std::fs::read(manifests.join("changed.jsonl")).unwrap();
    let two = std::fs::read(manifests.join("changed-2.jsonl")).unwrap();
    assert_ne!(one, two, "each round has its own seed");
    assert!(
        !manifests.join("changed-2-c1-beta.jsonl").exists(),
        "beta's rounds match alpha's"
    );
}

#[test]
fn a_slow_version_command_runs_beside_the_untimed_work_and_ends_before_the_first_timed_step() {
    let lab = Lab::new();
    // Longer than this tiny dataset's generation: it is still running when
    // the first tool cycle's source is prepared.
    let slow = json!({"version": {"argv": ["{bin}", "-c", "sleep 1.5; echo slowtool 9.9"]}});
    let plan = base_plan("versions-1", 1, vec![sh_tool("alpha", slow)]);
    let out = lab.run(&plan);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let versions: serde_json::Value = serde_json::from_slice(
        &std::fs::read(lab.evidence().join("tool-versions.json")).expect("tool-versions.json"),
    )
    .expect("json");
    assert_eq!(versions["alpha"], "slowtool 9.9");
    // The command's output was written before the first timed step began:
    // no version command shares the machine with a measured one.
    let answered = std::fs::metadata(lab.evidence().join("logs/alpha/version.out"))
        .and_then(|m| m.modified())
        .expect("version.out")
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as u64;
    let records = lab.records();
    let first_timed = records
        .iter()
        .filter(|r| r.timed)
        .map(|r| r.started_unix_ms)
        .min()
        .expect("a timed step");
    assert!(
        answered <= first_timed,
        "version answered at {answered}, first timed step began at {first_timed}"
    );
}
