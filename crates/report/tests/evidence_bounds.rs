//! Item 10 of issue 33: evidence is read only from regular files inside the
//! run, each with a size limit. A link to `/dev/zero` or a FIFO must be
//! refused by name, never read (memory) or waited on (a hang): each case
//! runs on a thread with a deadline.

mod common;
use common::copy_dir;
use labrun_report::compare::{self, Request, Settings};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn run_copy() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("two-tools");
    copy_dir(&fixture("two-tools"), &run);
    (tmp, run)
}

/// Runs `f` on its own thread; fails the test if it has not returned in 20 s
/// (the thread is left behind: it is stuck, which is the failure).
fn within_deadline<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20)).expect(
        "report/compare did not return within 20 s (blocked on a FIFO or reading without end)",
    )
}

fn replace_with_link(path: &Path, to: &str) {
    std::fs::remove_file(path).ok();
    std::os::unix::fs::symlink(to, path).unwrap();
}

fn replace_with_fifo(path: &Path) {
    std::fs::remove_file(path).ok();
    let ok = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mkfifo {}", path.display());
}

fn warnings_of(run: PathBuf) -> Vec<String> {
    let summary = within_deadline(move || labrun_report::summarize(&run)).unwrap();
    summary.warnings.into_iter().map(|w| w.message).collect()
}

#[test]
fn environment_linked_to_dev_zero_is_refused_by_name() {
    let (_tmp, run) = run_copy();
    replace_with_link(&run.join("raw/environment.json"), "/dev/zero");
    let warnings = warnings_of(run);
    assert!(
        warnings.iter().any(|w| w.contains("environment.json")
            && w.contains("refused")
            && w.contains("outside the run")),
        "{warnings:#?}"
    );
}

#[test]
fn records_linked_to_dev_zero_stop_the_report_naming_the_file() {
    let (_tmp, run) = run_copy();
    replace_with_link(&run.join("raw/records.jsonl"), "/dev/zero");
    let err = within_deadline(move || labrun_report::summarize(&run)).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("records.jsonl") && text.contains("refused"),
        "{text}"
    );
}

#[test]
fn a_fifo_for_the_plan_does_not_hang_report_and_is_named() {
    let (_tmp, run) = run_copy();
    replace_with_fifo(&run.join("raw/plan.json"));
    let warnings = warnings_of(run);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("plan.json") && w.contains("FIFO")),
        "{warnings:#?}"
    );
}

#[test]
fn a_fifo_for_the_records_does_not_hang_compare() {
    let (_tmp, run) = run_copy();
    replace_with_fifo(&run.join("raw/records.jsonl"));
    let request = Request::Paired {
        run,
        baseline: "restic".into(),
        candidate: "borg".into(),
    };
    let err = within_deadline(move || compare::compare(&request, &Settings::default()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("records.jsonl") && err.contains("FIFO"),
        "{err}"
    );
}

#[test]
fn a_fifo_in_raw_does_not_hang_compare_of_two_runs() {
    let (_tmp, a) = run_copy();
    let (_tmp2, b) = run_copy();
    replace_with_fifo(&b.join("raw/environment.json"));
    let request = Request::Unpaired {
        baseline_run: a,
        candidate_run: b,
        baseline: "restic".into(),
        candidate: "restic".into(),
        force: true,
    };
    // Whatever the verdict, it must come back.
    let _ = within_deadline(move || compare::compare(&request, &Settings::default()));
}

#[test]
fn an_oversized_environment_is_refused_with_its_size() {
    let (_tmp, run) = run_copy();
    // Sparse: 64 MiB of nothing, costs no disk.
    let f = std::fs::File::create(run.join("raw/environment.json")).unwrap();
    f.set_len(64 << 20).unwrap();
    let warnings = warnings_of(run);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("environment.json") && w.contains("more than the limit")),
        "{warnings:#?}"
    );
}

#[test]
fn a_timeline_path_leading_out_of_the_run_is_not_read() {
    let (_tmp, run) = run_copy();
    let outside = run.parent().unwrap().join("secret.jsonl");
    std::fs::write(&outside, "{}\n").unwrap();
    let records = std::fs::read_to_string(run.join("raw/records.jsonl")).unwrap();
    let mut lines: Vec<serde_json::Value> = records
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    lines[1]["tree"] =
        serde_json::json!({"source": "cgroup", "timeline_path": "../../secret.jsonl"});
    let text: String = lines.iter().map(|v| format!("{v}\n")).collect();
    std::fs::write(run.join("raw/records.jsonl"), text).unwrap();
    let warnings = warnings_of(run);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("secret.jsonl") && w.contains("outside the run")),
        "{warnings:#?}"
    );
}

#[test]
fn a_link_inside_the_run_is_still_read() {
    let (_tmp, run) = run_copy();
    std::fs::rename(run.join("raw/plan.json"), run.join("plan-copy.json")).unwrap();
    replace_with_link(&run.join("raw/plan.json"), "../plan-copy.json");
    let warnings = warnings_of(run);
    assert!(
        !warnings.iter().any(|w| w.contains("plan.json")),
        "{warnings:#?}"
    );
}
