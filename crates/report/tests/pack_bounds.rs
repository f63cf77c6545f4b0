//! A pack `pack` writes is one `report` opens (issue 45, item 10): the
//! reader's bounds follow what a real run writes (a tool's log is kept
//! whole; runs have written 200 and 300 MB logs), and the writer refuses,
//! before it writes anything, what the reader would refuse, by the same
//! bounds and the same path rule.

use labrun_report::pack::{self, Limits, PackError};
use std::path::{Path, PathBuf};

fn fixture_raw() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/two-tools/raw")
}

fn run_folder(dir: &Path) {
    std::fs::create_dir_all(dir.join("raw/logs/restic")).unwrap();
    for f in std::fs::read_dir(fixture_raw()).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), dir.join("raw").join(f.file_name())).unwrap();
    }
}

/// Nothing but the run folder in `dir`: no pack, no temporary file.
fn only_the_run_in(dir: &Path) {
    let names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["run-1".to_string()]);
}

#[test]
fn a_tool_log_as_large_as_real_runs_write_fits_a_pack() {
    // A run keeps every tool log whole; one wrote a 300 MB log, which the
    // reader's old per-file bound (256 MiB) refused. A log may take as much
    // of a pack as the whole run may.
    let limits = Limits::default();
    assert!(limits.max_file_bytes >= 300 << 20, "{limits:?}");
    assert_eq!(limits.max_file_bytes, limits.max_total_bytes, "{limits:?}");
}

#[test]
fn the_writer_refuses_a_name_the_reader_refuses() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run-1");
    run_folder(&run);
    std::fs::write(run.join("raw/logs/restic/c1\\init.out"), "out\n").unwrap();
    let err = pack::write(&run, &tmp.path().join("run-1.tar.gz")).unwrap_err();
    assert!(matches!(err, PackError::Unpackable { .. }), "{err}");
    assert!(err.to_string().contains("c1\\init.out"), "{err}");
    only_the_run_in(tmp.path());
}
