//! Item 7 of issue 33: a second record for the same tool, cycle and step
//! must not be counted (it made "6 of 6" cycles of a 3-cycle plan and could
//! replace a figure): report and compare refuse, naming both lines.

use labrun_report::compare::{self, Request, Settings};
use std::path::{Path, PathBuf};

fn run_copy() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("two-tools");
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/two-tools/raw");
    std::fs::create_dir_all(run.join("raw")).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), run.join("raw").join(e.file_name())).unwrap();
    }
    (tmp, run)
}

/// Appends a copy of the first timed record of `tool`; returns (its line,
/// the copy's line).
fn duplicate_a_timed_record(run: &Path, tool: &str) -> (usize, usize) {
    let path = run.join("raw/records.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let (index, line) = lines
        .iter()
        .enumerate()
        .find(|(_, l)| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["tool"] == tool && v["timed"] == true && v["ok"] == true
        })
        .unwrap();
    let mut copy: serde_json::Value = serde_json::from_str(line).unwrap();
    // A different figure, as a replayed or forged record would carry.
    copy["wall_secs"] = serde_json::json!(1.0);
    let mut out = text.clone();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!("{copy}\n"));
    std::fs::write(&path, out).unwrap();
    (index + 1, lines.len() + 1)
}

#[test]
fn report_refuses_a_second_record_of_a_step_naming_both_lines() {
    let (_tmp, run) = run_copy();
    let (first, second) = duplicate_a_timed_record(&run, "restic");
    let err = labrun_report::summarize(&run)
        .expect_err("a duplicate record must not be summarized")
        .to_string();
    assert!(
        err.contains("records.jsonl")
            && err.contains(&format!("line {first}"))
            && err.contains(&format!("line {second}"))
            && err.contains("restic"),
        "{err}"
    );
}

#[test]
fn compare_refuses_a_second_record_of_a_step() {
    let (_tmp, run) = run_copy();
    let (first, second) = duplicate_a_timed_record(&run, "borg");
    let request = Request::Paired {
        run,
        baseline: "restic".into(),
        candidate: "borg".into(),
    };
    let err = compare::compare(&request, &Settings::default())
        .expect_err("a duplicate record must not be compared")
        .to_string();
    assert!(
        err.contains(&format!("line {first}")) && err.contains(&format!("line {second}")),
        "{err}"
    );
}
