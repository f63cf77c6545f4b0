//! `report` keeps every step record in memory (issue 45, item 6: 1 GB of
//! records took 3.9 GB), so the records it reads are bounded, before any is
//! read, and the message says so and what to do.

use labrun_report::evidence_file::MAX_RECORDS_FILE;
use std::path::Path;

fn fixture_records() -> String {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/two-tools/raw/records.jsonl");
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn records_over_the_bound_are_refused_before_they_are_read() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("raw")).unwrap();
    let path = tmp.path().join("raw/records.jsonl");
    // Real records, then a hole (sparse: no disk) up to one byte over.
    std::fs::write(&path, fixture_records()).unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(MAX_RECORDS_FILE + 1).unwrap();
    let err = labrun_report::summarize(tmp.path())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!("{} bytes", MAX_RECORDS_FILE + 1)),
        "{err}"
    );
    assert!(err.contains("in memory"), "{err}");
    assert!(err.contains("head -n"), "{err}");
}

#[test]
fn the_bound_holds_what_real_runs_record_and_no_more_than_memory_allows() {
    // A real record is under 1 kB (the docs' runs: 830 bytes); kept, one
    // takes about 3 kB. 256 MiB is some 300,000 real steps.
    assert!(MAX_RECORDS_FILE <= 256 << 20);
    assert!(labrun_report::evidence_file::MAX_RECORDS <= 200_000);
}
