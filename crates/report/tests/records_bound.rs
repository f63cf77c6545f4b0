//! `report` keeps every step record in memory (issue 45, item 6: 1 GB of
//! records took 3.9 GB), so the records it reads are bounded, before any is
//! read, and the message says so and what to do.

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
    // Real records, then a hole (sparse: no disk) up to one byte over the
    // bound: 256 MiB, some 300,000 real steps.
    std::fs::write(&path, fixture_records()).unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len((256 << 20) + 1).unwrap();
    let err = labrun_report::summarize(tmp.path())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("268435457 bytes of step records, more than the 268435456"),
        "{err}"
    );
    assert!(err.contains("in memory"), "{err}");
    assert!(err.contains("head -n"), "{err}");
}
