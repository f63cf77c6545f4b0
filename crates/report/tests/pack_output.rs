//! Where the report of a pack goes (issue 45, item 9): a folder named after
//! the pack file, never after the name its manifest gives, never one that
//! holds another run; and a manifest's run name keeps to a safe alphabet, so
//! no pack makes a folder called `--help` or one holding terminal escapes.

use labrun_report::pack::{self, MANIFEST_FILE, PackError};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

fn fixture_raw() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/two-tools/raw")
}

/// A run folder `dir` with the fixture's raw/ and a summary of its own.
fn run_folder(dir: &Path, summary: &str) {
    std::fs::create_dir_all(dir.join("raw")).unwrap();
    for f in std::fs::read_dir(fixture_raw()).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), dir.join("raw").join(f.file_name())).unwrap();
    }
    std::fs::write(dir.join("summary.md"), summary).unwrap();
}

/// What `labrun report PACK` does, with the output folder it would choose.
fn report_of(opened: &pack::OpenedRun, out: &Path) -> Result<Vec<PathBuf>, PackError> {
    let (_, written) = labrun_report::make_report(opened.dir()).unwrap();
    opened.publish(&written, out)
}

#[test]
fn the_report_of_a_pack_is_named_after_the_pack_file() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("made/run-1");
    run_folder(&run, "# at the time\n");
    let shared = tmp.path().join("shared.tar.gz");
    pack::write(&run, &shared).unwrap();
    let opened = pack::open(&shared).unwrap();
    assert_eq!(opened.default_output_dir(), tmp.path().join("shared"));
    // A pack file without the usual ending gets a folder beside it, not
    // its own name.
    let odd = tmp.path().join("run.pack");
    std::fs::copy(&shared, &odd).unwrap();
    let opened = pack::open(&odd).unwrap();
    assert_eq!(
        opened.default_output_dir(),
        tmp.path().join("run.pack.report")
    );
}

#[test]
fn a_pack_naming_a_sibling_run_does_not_overwrite_it() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    // The sibling: a run of its own, with its own summary.
    let sibling = results.join("run-1");
    run_folder(&sibling, "# the sibling's own summary\n");
    // Another run, whose folder happened to have the same name, packed and
    // put beside it under another name.
    let other = tmp.path().join("elsewhere/run-1");
    run_folder(&other, "# the other's\n");
    let pack_path = results.join("other.tar.gz");
    pack::write(&other, &pack_path).unwrap();

    let opened = pack::open(&pack_path).unwrap();
    let out = opened.default_output_dir();
    let written = report_of(&opened, &out).unwrap();
    assert!(written.iter().all(|p| p.starts_with(results.join("other"))));
    assert_eq!(
        std::fs::read_to_string(sibling.join("summary.md")).unwrap(),
        "# the sibling's own summary\n"
    );

    // Named outright, a folder holding another run is refused, untouched.
    let err = report_of(&opened, &sibling).unwrap_err();
    assert!(err.to_string().contains("--out"), "{err}");
    assert_eq!(
        std::fs::read_to_string(sibling.join("summary.md")).unwrap(),
        "# the sibling's own summary\n"
    );
    assert!(!sibling.join("summary.json").exists());
}

/// The pack at `path` written again with its manifest's run name replaced.
fn renamed_pack(good: &Path, path: &Path, run: &str) {
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(good).unwrap());
    let mut archive = tar::Archive::new(gz);
    let out = flate2::write::GzEncoder::new(
        std::fs::File::create(path).unwrap(),
        flate2::Compression::fast(),
    );
    let mut tar = tar::Builder::new(out);
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().to_string_lossy().into_owned();
        let mut body = Vec::new();
        entry.read_to_end(&mut body).unwrap();
        if name == MANIFEST_FILE {
            let mut manifest: serde_json::Value = serde_json::from_slice(&body).unwrap();
            manifest["run"] = run.into();
            body = serde_json::to_vec(&manifest).unwrap();
        }
        let mut header = entry.header().clone();
        header.set_size(body.len() as u64);
        header.set_cksum();
        tar.append(&header, &body[..]).unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap().flush().unwrap();
}

#[test]
fn a_manifest_run_name_outside_the_safe_alphabet_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run-1");
    run_folder(&run, "# x\n");
    let good = tmp.path().join("good.tar.gz");
    pack::write(&run, &good).unwrap();
    pack::open(&good).unwrap();
    for hostile in ["--help", "run\u{1b}[2J", "-x", ".hidden", "a b", "tab\t"] {
        let path = tmp.path().join("hostile.tar.gz");
        renamed_pack(&good, &path, hostile);
        let err = pack::open(&path).unwrap_err();
        assert!(
            matches!(err, PackError::BadManifest { .. }),
            "{hostile:?}: {err}"
        );
        assert!(err.to_string().contains("a-z, A-Z, 0-9"), "{err}");
    }
    // And the writer refuses a run folder with such a name before writing.
    let dashed = tmp.path().join("--help");
    run_folder(&dashed, "# x\n");
    let out = tmp.path().join("dashed.tar.gz");
    let err = pack::write(&dashed, &out).unwrap_err();
    assert!(matches!(err, PackError::Unpackable { .. }), "{err}");
    assert!(!out.exists());
}
