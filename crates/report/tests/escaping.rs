//! Item 5 of issue 33: lab text (tool names, versions) lands in Markdown,
//! which renders inline HTML, and in CSV, which spreadsheets evaluate.
//! `<img src=x onerror=...>` must not reach summary.md or compare.md as
//! markup, nor `=HYPERLINK(...)` reach summary.csv as a live formula.

use labrun_report::compare::{self, Request, Settings};
use std::path::{Path, PathBuf};

const HOSTILE_TOOL: &str = "<img src=x onerror=alert(1)>";
const FORMULA_TOOL: &str = "=HYPERLINK(\"http://127.0.0.1/x\",\"y\")";

/// The two-tools fixture with `borg` renamed to `name` everywhere.
fn run_with_tool_named(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    std::fs::create_dir_all(run.join("raw")).unwrap();
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/two-tools/raw");
    let quoted = serde_json::to_string(name).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let text = std::fs::read_to_string(e.path()).unwrap();
        let text = text.replace("\"borg\"", &quoted);
        std::fs::write(run.join("raw").join(e.file_name()), text).unwrap();
    }
    (tmp, run)
}

#[test]
fn summary_md_carries_no_markup_from_a_tool_name() {
    let (_tmp, run) = run_with_tool_named(HOSTILE_TOOL);
    let (summary, _) = labrun_report::make_report(&run).unwrap();
    assert!(summary.tools.iter().any(|t| t.tool == HOSTILE_TOOL));
    let md = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(!md.contains("<img"), "{md}");
    assert!(md.contains("&lt;img src=x onerror=alert(1)>"), "{md}");
}

#[test]
fn compare_md_carries_no_markup_from_a_tool_name() {
    let (_tmp, run) = run_with_tool_named(HOSTILE_TOOL);
    let request = Request::Paired {
        run: run.clone(),
        baseline: "restic".into(),
        candidate: HOSTILE_TOOL.into(),
    };
    let c = compare::compare(&request, &Settings::default()).unwrap();
    let md = compare::render::markdown(&c);
    assert!(!md.contains("<img"), "{md}");
    assert!(md.contains("&lt;img"), "{md}");
}

#[test]
fn summary_csv_carries_no_live_formula() {
    let (_tmp, run) = run_with_tool_named(FORMULA_TOOL);
    labrun_report::make_report(&run).unwrap();
    let text = std::fs::read_to_string(run.join("summary.csv")).unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let mut seen = false;
    for row in reader.records() {
        for cell in row.unwrap().iter() {
            assert!(
                !cell.starts_with(['=', '+', '@', '\t', '\r']),
                "a cell a spreadsheet would evaluate: {cell}"
            );
            seen |= cell == format!("'{FORMULA_TOOL}");
        }
    }
    assert!(seen, "the tool's name is kept, made inert: {text}");
}
