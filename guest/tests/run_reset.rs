//! Every tool cycle backs up the same pristine tree, though only the first
//! one copies the dataset: the others take over the previous source tree
//! and reset it. Checked from the tool's side: the full backup prints a
//! fingerprint of the tree it sees (every entry's path, kind, mode, size,
//! mtime and link target, and every file's SHA-256), and a messy tool
//! leaves state and a modified file in its source after each cycle.

mod common;

use common::*;
use labrun_evidence::Step;
use serde_json::json;

/// Prints the fingerprint of the current folder, then backs it up as the
/// stand-in tool does (leaving out the messy tool's state folder).
const BACKUP: &str = "\
find . -printf '%p %y %m %s %T@ %l\\n' | LC_ALL=C sort | sha256sum && \
find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum && \
cp -a . {repo}/snapshots/{snapshot} && rm -rf {repo}/snapshots/{snapshot}/.tool-state";

/// Restores, then leaves a mess in the source, as a careless tool could:
/// a state folder, and a file with new bytes, size, mode and mtime.
const MESSY_RESTORE: &str = "\
cp -a {repo}/snapshots/{snapshot}/. {target} && cd {source} && \
mkdir -p .tool-state/cache && echo state > .tool-state/prefs && \
f=$(find . -type f | LC_ALL=C sort | head -n 1) && echo junk >> \"$f\" && chmod 600 \"$f\"";

#[test]
fn every_tool_cycle_backs_up_the_pristine_tree() {
    let lab = Lab::new();
    let backup = json!({"argv": ["{bin}", "-c", BACKUP], "cwd": "{source}"});
    let tidy = sh_tool("tidy", json!({"backup": backup}));
    let messy = sh_tool(
        "messy",
        json!({"backup": backup, "restore": {"argv": ["{bin}", "-c", MESSY_RESTORE]}}),
    );
    let mut plan = base_plan("reset", 2, vec![messy, tidy]);
    plan["drop_caches"] = json!(false);
    let out = lab.run(&plan);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let records = lab.records();
    assert!(records.iter().all(|r| r.ok), "{records:#?}");

    let fingerprint = |tool: &str, cycle: u32| {
        let r = records
            .iter()
            .find(|r| r.tool == tool && r.cycle == cycle && r.step == Step::BACKUP_FULL)
            .unwrap();
        std::fs::read_to_string(lab.evidence().join(r.stdout_path.as_ref().unwrap())).unwrap()
    };
    let first = fingerprint("messy", 1);
    assert_eq!(first.lines().count(), 2, "{first}");
    for (tool, cycle) in [("tidy", 1), ("tidy", 2), ("messy", 2)] {
        assert_eq!(fingerprint(tool, cycle), first, "{tool} cycle {cycle}");
    }

    // One copy of the dataset; each later tool cycle wrote a small part of it.
    let dataset_bytes = records[0].bytes.unwrap();
    let prepared: Vec<_> = records
        .iter()
        .filter(|r| !r.tool.is_empty() && r.step == Step::GENERATE)
        .collect();
    assert_eq!(prepared.len(), 4);
    assert_eq!(prepared[0].argv.first().map(String::as_str), Some("cp"));
    for r in &prepared[1..] {
        assert!(r.argv.is_empty(), "{r:?}");
        let written = r.bytes.unwrap();
        assert!(
            written > 0 && written * 5 < dataset_bytes,
            "{} cycle {}: {written} of {dataset_bytes} bytes",
            r.tool,
            r.cycle
        );
    }
    assert!(!lab.work().join("reset").exists(), "work tree left behind");
}

#[test]
fn a_source_that_cannot_be_reset_fails_that_cycle_only() {
    // The first tool removes the pristine tree the reset copies from: the
    // next tool cycle says so and fails, and the run goes on and ends.
    let lab = Lab::new();
    let vandal = sh_tool(
        "vandal",
        json!({"restore": {"argv": ["{bin}", "-c", "cp -a {repo}/snapshots/{snapshot}/. {target} && rm -rf {source}/../../pristine"]}}),
    );
    let mut plan = base_plan("noreset", 1, vec![vandal, sh_tool("next", json!({}))]);
    plan["drop_caches"] = json!(false);
    plan["rotate_tools"] = json!(false);
    let out = lab.run(&plan);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let records = lab.records();
    assert_eq!(steps_of(&records, "vandal", 1), full_cycle());
    assert_eq!(steps_of(&records, "next", 1), vec![Step::GENERATE]);
    let failed = records.iter().find(|r| r.tool == "next").unwrap();
    assert!(
        failed
            .error
            .as_deref()
            .unwrap_or("")
            .contains("cannot reset the source tree"),
        "{failed:?}"
    );
    assert!(
        !lab.work().join("noreset").exists(),
        "work tree left behind"
    );
}
