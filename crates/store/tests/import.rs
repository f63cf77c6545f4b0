//! Import and query against the embedded SQLite store.

use labrun_store::{Imported, RunFilter, Store, StoreError};
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The committed packs under docs/, sorted so failures name the same one.
fn committed_packs() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                walk(&p, out);
            } else if kind.is_file() && p.to_string_lossy().ends_with(".tar.gz") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&repo_root().join("docs"), &mut out);
    out.sort();
    out
}

fn first_pack() -> PathBuf {
    committed_packs()
        .into_iter()
        .next()
        .expect("docs/ holds committed packs")
}

fn digest_of(imported: &Imported) -> &str {
    match imported {
        Imported::Added { digest, .. } | Imported::AlreadyPresent { digest } => digest,
    }
}

#[test]
fn every_committed_packs_samples_read_back_equal_to_the_packs_own() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.sqlite")).unwrap();
    let packs = committed_packs();
    assert!(!packs.is_empty(), "no committed packs found under docs/");
    let mut imported_any = 0;
    for pack in &packs {
        let opened = labrun_report::pack::open(pack).unwrap();
        if labrun_report::variants::is_variants_run(opened.dir()) {
            let err = store.import(pack).unwrap_err();
            assert!(matches!(err, StoreError::VariantsRun { .. }), "{err}");
            continue;
        }
        imported_any += 1;
        let imported = store
            .import(pack)
            .unwrap_or_else(|e| panic!("{}: {e}", pack.display()));
        let raw = labrun_report::evidence::load(opened.dir()).unwrap();
        let own = labrun_report::sample::from_records(&raw.records);
        let back = store.samples(digest_of(&imported)).unwrap();
        assert!(!own.is_empty(), "{} has no samples", pack.display());
        assert_eq!(back, own, "{}", pack.display());
        // The pack itself is kept by its digest, byte for byte.
        let kept = std::fs::read(store.pack_path(digest_of(&imported))).unwrap();
        assert_eq!(kept, std::fs::read(pack).unwrap());
    }
    assert!(imported_any >= 10, "only {imported_any} single-run packs");
    // Two committed packs of one run (a copy) would be one row; none are.
    assert_eq!(
        store.runs(&RunFilter::default()).unwrap().len(),
        imported_any
    );
}

#[test]
fn importing_the_same_run_twice_keeps_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.sqlite")).unwrap();
    let pack = first_pack();
    let first = store.import(&pack).unwrap();
    assert!(matches!(first, Imported::Added { .. }));
    let second = store.import(&pack).unwrap();
    assert_eq!(
        second,
        Imported::AlreadyPresent {
            digest: digest_of(&first).to_string()
        }
    );
    assert_eq!(store.runs(&RunFilter::default()).unwrap().len(), 1);
}

#[test]
fn two_imports_of_one_run_at_the_same_time_keep_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    drop(Store::open(&db).unwrap());
    let pack = first_pack();
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let (db, pack) = (db.clone(), pack.clone());
            std::thread::spawn(move || Store::open(&db).unwrap().import(&pack).unwrap())
        })
        .collect();
    let results: Vec<Imported> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let added = results
        .iter()
        .filter(|r| matches!(r, Imported::Added { .. }))
        .count();
    assert_eq!(added, 1, "{results:?}");
    let store = Store::open(&db).unwrap();
    assert_eq!(store.runs(&RunFilter::default()).unwrap().len(), 1);
}

#[test]
fn a_pack_whose_files_do_not_match_its_manifest_is_refused_and_nothing_is_imported() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.sqlite")).unwrap();
    // Unpack a committed pack, change one recorded file, pack it with the
    // old manifest kept: the reader must refuse it.
    let opened = labrun_report::pack::open(&first_pack()).unwrap();
    let run = dir.path().join("run");
    copy_tree(opened.dir(), &run);
    let raw = run.join("raw");
    let victim = std::fs::read_dir(&raw)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_file())
        .expect("raw/ holds a file");
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes.extend_from_slice(b"\n");
    std::fs::write(&victim, bytes).unwrap();
    let tampered = dir.path().join("tampered.tar.gz");
    write_tar_gz(&run, &tampered);
    let err = store.import(&tampered).unwrap_err();
    assert!(matches!(err, StoreError::BadRun { .. }), "{err}");
    assert!(store.runs(&RunFilter::default()).unwrap().is_empty());
}

#[test]
fn a_truncated_pack_is_refused_and_nothing_is_imported() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.sqlite")).unwrap();
    let bytes = std::fs::read(first_pack()).unwrap();
    let truncated = dir.path().join("truncated.tar.gz");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let err = store.import(&truncated).unwrap_err();
    assert!(matches!(err, StoreError::BadRun { .. }), "{err}");
    assert!(err.to_string().contains("labrun import"), "{err}");
    assert!(store.runs(&RunFilter::default()).unwrap().is_empty());
}

#[test]
fn a_file_that_is_not_a_labrun_store_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.sqlite");
    std::fs::write(&text, "these are my notes, not a database\n".repeat(200)).unwrap();
    let err = Store::open(&text).err().expect("a text file is refused");
    assert!(matches!(err, StoreError::Foreign { .. }), "{err}");

    let other = dir.path().join("other.sqlite");
    let conn = rusqlite::Connection::open(&other).unwrap();
    conn.execute_batch("CREATE TABLE mine (x INTEGER)").unwrap();
    drop(conn);
    let err = Store::open(&other)
        .err()
        .expect("another program's db is refused");
    assert!(matches!(err, StoreError::Foreign { .. }), "{err}");
    // Nothing was added to it.
    let conn = rusqlite::Connection::open(&other).unwrap();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 1);
}

#[test]
fn a_store_from_a_newer_labrun_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    drop(Store::open(&db).unwrap());
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(&format!(
        "PRAGMA user_version = {}",
        labrun_store::latest() + 1
    ))
    .unwrap();
    drop(conn);
    let err = Store::open(&db).err().expect("a newer store is refused");
    assert!(matches!(err, StoreError::Newer { .. }), "{err}");
}

#[test]
fn a_filter_string_is_data_never_sql() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.sqlite")).unwrap();
    store.import(&first_pack()).unwrap();
    let hostile = RunFilter {
        tool: Some("x' OR '1'='1".into()),
        run_id_prefix: None,
    };
    assert!(store.runs(&hostile).unwrap().is_empty());
    let drop_attempt = RunFilter {
        tool: Some("x'); DROP TABLE runs; --".into()),
        run_id_prefix: None,
    };
    assert!(store.runs(&drop_attempt).unwrap().is_empty());
    assert_eq!(store.runs(&RunFilter::default()).unwrap().len(), 1);
}

#[test]
fn runs_filter_by_tool_and_run_id() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.sqlite")).unwrap();
    let pack = first_pack();
    store.import(&pack).unwrap();
    let all = store.runs(&RunFilter::default()).unwrap();
    let run = &all[0];
    let tool = run.tools.first().expect("the run names its tools").clone();
    let by_tool = RunFilter {
        tool: Some(tool),
        run_id_prefix: None,
    };
    assert_eq!(store.runs(&by_tool).unwrap(), all);
    let by_absent_tool = RunFilter {
        tool: Some("no-such-tool".into()),
        run_id_prefix: None,
    };
    assert!(store.runs(&by_absent_tool).unwrap().is_empty());
    let by_id = RunFilter {
        tool: None,
        run_id_prefix: Some(run.run_id[..3].to_string()),
    };
    assert_eq!(store.runs(&by_id).unwrap(), all);
    let by_other_id = RunFilter {
        tool: None,
        run_id_prefix: Some("zzz-not-a-run".into()),
    };
    assert!(store.runs(&by_other_id).unwrap().is_empty());
}

#[test]
fn a_run_folder_and_its_pack_are_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.sqlite")).unwrap();
    let opened = labrun_report::pack::open(&first_pack()).unwrap();
    let run = dir.path().join("run");
    copy_tree(opened.dir(), &run);
    let from_folder = store.import(&run).unwrap();
    let packed = dir.path().join("run.tar.gz");
    labrun_report::pack::write(&run, &packed).unwrap();
    let from_pack = store.import(&packed).unwrap();
    assert!(matches!(from_folder, Imported::Added { .. }));
    assert_eq!(
        from_pack,
        Imported::AlreadyPresent {
            digest: digest_of(&from_folder).to_string()
        }
    );
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// A plain tar.gz of `dir`'s contents (manifest included as it is).
fn write_tar_gz(dir: &Path, out: &Path) {
    let status = std::process::Command::new("tar")
        .arg("-czf")
        .arg(out)
        .arg("-C")
        .arg(dir)
        .arg(".")
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn a_run_folder_still_being_written_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.sqlite")).unwrap();
    let opened = labrun_report::pack::open(&first_pack()).unwrap();
    let run = dir.path().join("run");
    copy_tree(opened.dir(), &run);
    // Take away every record of its end, as a run in progress has none yet,
    // and leave the session `bench` writes first.
    let _ = std::fs::remove_file(run.join("raw/done.json"));
    let events = run.join("raw/events.jsonl");
    if let Ok(text) = std::fs::read_to_string(&events) {
        let kept: String = text
            .lines()
            .filter(|l| !l.contains("run_finished"))
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(&events, kept).unwrap();
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    std::fs::write(
        run.join("session.json"),
        format!("{{\"started_unix\": {now}}}"),
    )
    .unwrap();
    let err = store.import(&run).unwrap_err();
    assert!(matches!(err, StoreError::StillRunning { .. }), "{err}");
    assert!(store.runs(&RunFilter::default()).unwrap().is_empty());
}
