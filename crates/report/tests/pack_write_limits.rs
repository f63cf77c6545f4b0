//! The pack writer checks the reader's bounds (issue 45, item 10): with the
//! same [`Limits`], what `write_with` writes `open_with` opens, and what
//! `open_with` would refuse `write_with` refuses before writing anything.

use labrun_report::pack::{self, Limits, PackError};
use std::path::Path;

fn only_the_run_in(dir: &Path) {
    let names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["run-1".to_string()]);
}

/// `<tmp>/run-1` with raw/ holding files of the given sizes.
fn run_of(tmp: &Path, sizes: &[usize]) -> std::path::PathBuf {
    let run = tmp.join("run-1");
    std::fs::create_dir_all(run.join("raw")).unwrap();
    for (i, size) in sizes.iter().enumerate() {
        std::fs::write(run.join(format!("raw/f{i}.log")), vec![b'x'; *size]).unwrap();
    }
    run
}

fn limits(file: u64, total: u64, entries: usize) -> Limits {
    Limits {
        max_file_bytes: file,
        max_total_bytes: total,
        max_entries: entries,
        ..Limits::default()
    }
}

#[test]
fn at_the_bounds_the_writer_writes_and_the_reader_opens() {
    let tmp = tempfile::tempdir().unwrap();
    let run = run_of(tmp.path(), &[100, 100, 50]);
    // Three files and the manifest: four entries.
    let at = limits(100, 250, 4);
    let out = tmp.path().join("run-1.tar.gz");
    pack::write_with(&run, &out, &at).unwrap();
    pack::open_with(&out, &at).unwrap();
}

#[test]
fn over_a_bound_the_writer_refuses_before_writing() {
    for (sizes, bounds, says) in [
        (
            vec![101, 10],
            limits(100, 1000, 10),
            "101 bytes, more than the 100",
        ),
        (
            vec![100, 100, 51],
            limits(100, 250, 10),
            "more than the 250",
        ),
        (vec![1, 1, 1], limits(100, 1000, 3), "at most 3 entries"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let run = run_of(tmp.path(), &sizes);
        let out = tmp.path().join("run-1.tar.gz");
        // The reader refuses such a pack (made with room to spare) ...
        let roomy = limits(1 << 20, 1 << 20, 100);
        pack::write_with(&run, &out, &roomy).unwrap();
        assert!(pack::open_with(&out, &bounds).is_err(), "{says}");
        std::fs::remove_file(&out).unwrap();
        // ... so the writer refuses it, and writes nothing.
        let err = pack::write_with(&run, &out, &bounds).unwrap_err();
        assert!(matches!(err, PackError::TooLarge { .. }), "{err}");
        assert!(err.to_string().contains(says), "{says}: {err}");
        assert!(err.to_string().contains("report"), "{err}");
        only_the_run_in(tmp.path());
    }
}
