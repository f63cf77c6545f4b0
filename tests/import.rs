//! `labrun import` and `labrun runs --db`: committed packs into a store in a
//! temporary folder, listed back from it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const LABRUN: &str = env!("CARGO_BIN_EXE_labrun");

fn docs(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs").join(rel)
}

fn labrun(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(LABRUN)
        .args(args)
        .env_remove("LABRUN_DB")
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn imported_runs_are_listed_from_the_store_once_and_by_tool() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store/runs.sqlite");
    let a = docs("fidelity/default-20261201T144749Z-2ab023.tar.gz");
    let b = docs("reproduction/default-20261201T092703Z-d922cc.tar.gz");
    for _ in 0..2 {
        let out = labrun(&[
            "import".as_ref(),
            "--db".as_ref(),
            db.as_os_str(),
            a.as_os_str(),
            b.as_os_str(),
        ]);
        assert!(out.status.success(), "{}", text(&out));
    }
    let out = labrun(&["runs".as_ref(), "--db".as_ref(), db.as_os_str()]);
    let listed = text(&out);
    assert!(out.status.success(), "{listed}");
    assert_eq!(listed.lines().count(), 2, "{listed}");
    assert!(
        listed.contains("default-20261201T144749Z-2ab023"),
        "{listed}"
    );
    assert!(
        listed.contains("default-20261201T092703Z-d922cc"),
        "{listed}"
    );
    let out = labrun(&[
        "runs".as_ref(),
        "--db".as_ref(),
        db.as_os_str(),
        "--tool".as_ref(),
        "no-such-tool".as_ref(),
    ]);
    assert!(
        text(&out).contains("no runs in the store"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_failed_import_says_what_to_do_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    let junk = dir.path().join("junk.tar.gz");
    std::fs::write(&junk, b"not a pack").unwrap();
    let out = labrun(&[
        "import".as_ref(),
        "--db".as_ref(),
        db.as_os_str(),
        junk.as_os_str(),
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("then run `labrun import` again"),
        "{}",
        text(&out)
    );
}
