//! `labrun import`, `labrun runs --db` and `labrun compare --db`: committed
//! packs into a store (an SQLite file in a temporary folder, or a
//! PostgreSQL server the test starts on a loopback port), listed, filtered
//! and compared back from it.

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

/// Imports two committed runs twice into `db`, then lists, filters and
/// compares them from it, as a user would.
fn import_list_filter_compare(db: &std::ffi::OsStr) {
    let a = docs("fidelity/default-20261201T144749Z-2ab023.tar.gz");
    let b = docs("reproduction/default-20261201T092703Z-d922cc.tar.gz");
    // Another run of b's lab and dataset (borg only): the two compare.
    let c = docs("reproduction/default-20261201T123449Z-d922cc.tar.gz");
    for _ in 0..2 {
        let out = labrun(&[
            "import".as_ref(),
            "--db".as_ref(),
            db,
            "--from".as_ref(),
            "the docs".as_ref(),
            a.as_os_str(),
            b.as_os_str(),
            c.as_os_str(),
        ]);
        assert!(out.status.success(), "{}", text(&out));
    }
    let runs = |extra: &[&str]| {
        let mut args: Vec<&std::ffi::OsStr> = vec!["runs".as_ref(), "--db".as_ref(), db];
        args.extend(extra.iter().map(|a| std::ffi::OsStr::new(*a)));
        let out = labrun(&args);
        assert!(out.status.success(), "{}", text(&out));
        text(&out)
    };
    let listed = runs(&[]);
    let rows = |t: &str| t.lines().filter(|l| l.contains("-2026120")).count();
    assert_eq!(rows(&listed), 3, "{listed}");
    assert!(
        listed.contains("default-20261201T144749Z-2ab023"),
        "{listed}"
    );
    assert!(
        listed.contains("default-20261201T092703Z-d922cc"),
        "{listed}"
    );
    assert!(listed.contains("the docs"), "{listed}");
    assert!(listed.contains("restic@0.19.1"), "{listed}");
    assert_eq!(
        rows(&runs(&["--machine", "tcg", "--lab-name", "default"])),
        3
    );
    assert_eq!(rows(&runs(&["--tool", "kopia"])), 2);
    assert_eq!(rows(&runs(&["--since", "2026-12-01T14"])), 1);
    assert!(runs(&["--tool", "no-such-tool"]).contains("no runs in the store"));
    let json: serde_json::Value = serde_json::from_str(&runs(&["--json"])).unwrap();
    let listed = json.as_array().unwrap();
    assert_eq!(listed.len(), 3);
    let baseline = listed
        .iter()
        .find(|r| r["run_id"] == "default-20261201T092703Z-d922cc")
        .unwrap()["digest"]
        .as_str()
        .unwrap()[..12]
        .to_string();

    let work = tempfile::tempdir().unwrap();
    let out = Command::new(LABRUN)
        .args([
            "compare",
            // By digest prefix and by run id.
            &baseline,
            "default-20261201T123449Z-d922cc",
            "--tool",
            "borg",
            "--db",
        ])
        .arg(db)
        .env_remove("LABRUN_DB")
        .current_dir(work.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("rows:"), "{}", text(&out));
    assert!(work.path().join("results/from-store").is_dir());
}

#[test]
fn imported_runs_are_listed_filtered_and_compared_from_an_sqlite_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store/runs.sqlite");
    import_list_filter_compare(db.as_os_str());
}

#[test]
#[ignore = "needs PostgreSQL (Debian's postgresql): `make test` runs it"]
fn imported_runs_are_listed_filtered_and_compared_from_a_postgres_store() {
    use labrun_store::test_support::{Auth, TestPostgres};
    let server = TestPostgres::start(Auth::Trust).unwrap();
    server.create_database("team").unwrap();
    import_list_filter_compare(server.url("team").as_ref());
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
