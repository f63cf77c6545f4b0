//! Durable times: after a timed step that wrote, the agent flushes the file
//! system it wrote and records what the step left unwritten and how long
//! the flush took (issue 46, item 4).

mod common;

use common::*;
use labrun_evidence::StepRecord;
use serde_json::json;

fn record<'a>(records: &'a [StepRecord], step: &str) -> &'a StepRecord {
    records
        .iter()
        .find(|r| r.tool == "lazy" && r.step.as_str() == step)
        .unwrap_or_else(|| panic!("no {step} record in {records:#?}"))
}

#[test]
fn a_backup_that_leaves_its_writes_dirty_has_them_flushed_and_counted() {
    let lab = Lab::new();
    // 8 MiB into the repository without fsync: the kernel keeps it dirty.
    let lazy = sh_tool(
        "lazy",
        json!({"backup": {
            "argv": ["{bin}", "-c", "cp -a . {repo}/snapshots/{snapshot} && head -c 8388608 /dev/zero > {repo}/pad-{snapshot}"],
            "cwd": "{source}"
        }}),
    );
    let out = lab.run(&base_plan("flush-1", 1, vec![lazy]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let records = lab.records();

    let full = record(&records, "backup_full");
    assert!(full.ok && full.timed, "{full:?}");
    let flush = full.flush.as_ref().expect("a timed backup has a flush");
    assert!(
        flush.unwritten_bytes.is_some_and(|b| b > 0),
        "8 MiB left dirty: {flush:?}"
    );
    assert!(flush.path.contains("repo"), "the repository's: {flush:?}");
    assert_eq!(full.durable_secs(), Some(full.wall_secs + flush.secs));

    let restore = record(&records, "restore");
    let flush = restore.flush.as_ref().expect("a timed restore has a flush");
    assert!(flush.path.ends_with("/restore"), "the target's: {flush:?}");

    for untouched in ["init", "change", "verify"] {
        let r = record(&records, untouched);
        assert_eq!(r.flush, None, "{untouched} writes nothing timed: {r:?}");
    }
}
