//! A restore over older data (`over:`, issue 46 item 5), run by the agent
//! with `sh` stand-ins for tools: `{target}` holds the generated tree (s1's)
//! when the restore of s2 (after the 5% change) starts. A tool that
//! overwrites and deletes passes with the older files removed; one that
//! leaves a stale file passes with them reported kept (a tool's documented
//! mode may keep them: borg's `extract`); one that leaves old content in a
//! file fails.

mod common;

use common::*;
use labrun_evidence::{OlderFiles, StepRecord};
use serde_json::{Value, json};

fn over_plan(restore: &str) -> Value {
    let restore = json!({"restore": {"argv": ["{bin}", "-c", restore]}});
    let mut plan = base_plan("over-1", 1, vec![sh_tool("alpha", restore)]);
    plan["protocol"] = json!([
        "source",
        {"run": "init"},
        {"run": "backup", "name": "backup_full", "makes": "s1"},
        "change",
        {"run": "backup", "name": "backup_incremental", "makes": "s2"},
        {"run": "restore", "restores": "s2", "over": "s1", "repo_size": false},
        "verify"
    ]);
    plan
}

fn record<'a>(records: &'a [StepRecord], step: &str) -> &'a StepRecord {
    records
        .iter()
        .find(|r| r.step.as_str() == step)
        .unwrap_or_else(|| panic!("no {step} record in {records:#?}"))
}

#[test]
fn a_restore_that_overwrites_and_deletes_passes_with_the_older_files_removed() {
    let lab = Lab::new();
    let out = lab.run(&over_plan(
        "find {target} -mindepth 1 -delete && cp -a {repo}/snapshots/{snapshot}/. {target}",
    ));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let records = lab.records();
    let fill = record(&records, "fill_restore");
    assert!(fill.ok && !fill.timed, "{fill:?}");
    let v = record(&records, "verify");
    let outcome = v.verify.as_ref().expect("a verify outcome");
    assert!(v.ok && outcome.passed, "{v:?}");
    assert_eq!(outcome.older_files, Some(OlderFiles::Removed), "{v:?}");
}

#[test]
fn a_restore_that_leaves_a_stale_file_passes_and_says_it_kept_it() {
    let lab = Lab::new();
    // The synthetic change deletes nothing: the stale file stands for one
    // the older tree had and the restored snapshot does not.
    let out = lab.run(&over_plan(
        "touch {target}/stale-from-s1 && cp -a {repo}/snapshots/{snapshot}/. {target}",
    ));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let records = lab.records();
    let v = record(&records, "verify");
    let outcome = v.verify.as_ref().expect("a verify outcome");
    assert!(v.ok && outcome.passed && v.error.is_none(), "{v:?}");
    assert_eq!(outcome.older_files, Some(OlderFiles::Kept), "{v:?}");
    assert_eq!(outcome.extra, 1, "{v:?}");
}

#[test]
fn a_restore_that_leaves_old_content_fails_verification() {
    let lab = Lab::new();
    // `-n`: no file that exists is overwritten, so the changed files keep
    // s1's content.
    let out = lab.run(&over_plan(
        "cp -a -n {repo}/snapshots/{snapshot}/. {target}",
    ));
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    let records = lab.records();
    let v = record(&records, "verify");
    let outcome = v.verify.as_ref().expect("a verify outcome");
    assert!(!v.ok && !outcome.passed && outcome.changed > 0, "{v:?}");
    assert_eq!(outcome.older_files, None, "{v:?}");
}

#[test]
fn over_a_changed_tree_is_refused_with_what_to_do() {
    let lab = Lab::new();
    let mut plan = over_plan("cp -a {repo}/snapshots/{snapshot}/. {target}");
    plan["protocol"][5]["over"] = json!("s2");
    plan["protocol"][5]["restores"] = json!("s1");
    let out = lab.run(&plan);
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    let records = lab.records();
    let fill = record(&records, "fill_restore");
    let error = fill.error.as_deref().unwrap_or_default();
    assert!(!fill.ok && error.contains("generated source"), "{fill:?}");
}
