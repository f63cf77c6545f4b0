//! Import and query, the same tests against the embedded SQLite store and
//! against a real PostgreSQL server each test starts on a loopback port
//! (`labrun_store::test_support`; ignored by a plain `cargo test`, run by
//! `make test`, and failing there when the server cannot start).

use labrun_store::test_support::{Auth, TestPostgres};
use labrun_store::{Imported, Location, RunFilter, Store, StoreError};
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

/// The committed packs of one run each (a variants run is refused).
fn single_run_packs() -> Vec<PathBuf> {
    committed_packs()
        .into_iter()
        .filter(|p| {
            let opened = labrun_report::pack::open(p).unwrap();
            !labrun_report::variants::is_variants_run(opened.dir())
        })
        .collect()
}

fn first_pack() -> PathBuf {
    committed_packs()
        .into_iter()
        .next()
        .expect("docs/ holds committed packs")
}

/// A fresh, empty store of either kind, and what keeps it alive.
struct Fresh {
    location: Location,
    _dir: tempfile::TempDir,
    _server: Option<TestPostgres>,
}

impl Fresh {
    fn sqlite() -> Fresh {
        let dir = tempfile::tempdir().unwrap();
        Fresh {
            location: Location::Sqlite(dir.path().join("runs.sqlite")),
            _dir: dir,
            _server: None,
        }
    }

    fn postgres() -> Fresh {
        let server = TestPostgres::start(Auth::Trust)
            .unwrap_or_else(|e| panic!("cannot start the test PostgreSQL server: {e}"));
        server.create_database("store").unwrap();
        Fresh {
            location: Location::Postgres(server.url("store")),
            _dir: tempfile::tempdir().unwrap(),
            _server: Some(server),
        }
    }

    fn open(&self) -> Store {
        Store::connect(&self.location).unwrap()
    }

    fn scratch(&self) -> &Path {
        self._dir.path()
    }
}

/// Each case runs on SQLite (always) and on PostgreSQL (`make test`).
macro_rules! on_both {
    ($($case:ident),* $(,)?) => {$(
        mod $case {
            #[test]
            fn sqlite() {
                super::$case(&super::Fresh::sqlite());
            }
            #[test]
            #[ignore = "needs PostgreSQL (Debian's postgresql): `make test` runs it"]
            fn postgres() {
                super::$case(&super::Fresh::postgres());
            }
        }
    )*};
}

on_both!(
    every_committed_packs_samples_read_back_equal_to_the_packs_own,
    importing_the_same_run_twice_keeps_one,
    two_imports_of_one_run_at_the_same_time_keep_one,
    a_pack_whose_files_do_not_match_its_manifest_is_refused_and_nothing_is_imported,
    a_truncated_pack_is_refused_and_nothing_is_imported,
    a_filter_string_is_data_never_sql,
    runs_filter_by_every_axis,
    a_run_folder_and_its_pack_are_one_run,
    a_run_folder_still_being_written_is_refused,
    a_run_is_resolved_by_digest_prefix_or_run_id,
    a_variants_run_is_imported_as_each_variants_run,
    the_origin_is_kept,
);

fn every_committed_packs_samples_read_back_equal_to_the_packs_own(fresh: &Fresh) {
    let mut store = fresh.open();
    let packs = committed_packs();
    assert!(!packs.is_empty(), "no committed packs found under docs/");
    let mut imported_any = 0;
    for pack in &packs {
        let opened = labrun_report::pack::open(pack).unwrap();
        if labrun_report::variants::is_variants_run(opened.dir()) {
            let err = store.import(pack, None).unwrap_err();
            assert!(matches!(err, StoreError::VariantsRun { .. }), "{err}");
            continue;
        }
        imported_any += 1;
        let imported = store
            .import(pack, None)
            .unwrap_or_else(|e| panic!("{}: {e}", pack.display()));
        let raw = labrun_report::evidence::load(opened.dir()).unwrap();
        let own = labrun_report::sample::from_records(&raw.records);
        let back = store.samples(imported.digest()).unwrap();
        assert!(!own.is_empty(), "{} has no samples", pack.display());
        assert_eq!(back, own, "{}", pack.display());
        // The pack itself is kept by its digest, byte for byte.
        let kept = store.pack(imported.digest()).unwrap();
        assert_eq!(kept, std::fs::read(pack).unwrap());
    }
    assert!(imported_any >= 10, "only {imported_any} single-run packs");
    // Two committed packs of one run (a copy) would be one row; none are.
    let runs = store.runs(&RunFilter::default()).unwrap();
    assert_eq!(runs.len(), imported_any);
    assert!(runs.iter().filter(|r| r.lab_digest.is_some()).count() >= 10);
    // Every run's facts were read: its lab, class and when it finished.
    for r in &runs {
        assert!(r.lab.is_some(), "{}: no lab", r.run_id);
        assert!(r.machine_class.is_some(), "{}: no machine class", r.run_id);
        // Runs since the lab file was kept in raw/ have its digest.
        if let Some(d) = &r.lab_digest {
            assert_eq!(d.len(), 64, "{}", r.run_id);
        }
        assert!(!r.tools.is_empty(), "{}", r.run_id);
    }
}

fn importing_the_same_run_twice_keeps_one(fresh: &Fresh) {
    let mut store = fresh.open();
    let pack = first_pack();
    let first = store.import(&pack, None).unwrap();
    assert!(matches!(first, Imported::Added { .. }));
    let second = store.import(&pack, None).unwrap();
    assert_eq!(
        second,
        Imported::AlreadyPresent {
            digest: first.digest().to_string()
        }
    );
    assert_eq!(store.runs(&RunFilter::default()).unwrap().len(), 1);
}

fn two_imports_of_one_run_at_the_same_time_keep_one(fresh: &Fresh) {
    drop(fresh.open());
    let pack = first_pack();
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let (location, pack) = (fresh.location.clone(), pack.clone());
            std::thread::spawn(move || {
                Store::connect(&location)
                    .unwrap()
                    .import(&pack, None)
                    .unwrap()
            })
        })
        .collect();
    let results: Vec<Imported> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let added = results
        .iter()
        .filter(|r| matches!(r, Imported::Added { .. }))
        .count();
    assert_eq!(added, 1, "{results:?}");
    assert_eq!(fresh.open().runs(&RunFilter::default()).unwrap().len(), 1);
}

fn a_pack_whose_files_do_not_match_its_manifest_is_refused_and_nothing_is_imported(fresh: &Fresh) {
    let mut store = fresh.open();
    // Unpack a committed pack, change one recorded file, pack it with the
    // old manifest kept: the reader must refuse it.
    let opened = labrun_report::pack::open(&first_pack()).unwrap();
    let run = fresh.scratch().join("run");
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
    let tampered = fresh.scratch().join("tampered.tar.gz");
    write_tar_gz(&run, &tampered);
    let err = store.import(&tampered, None).unwrap_err();
    assert!(matches!(err, StoreError::BadRun { .. }), "{err}");
    assert!(store.runs(&RunFilter::default()).unwrap().is_empty());
}

fn a_truncated_pack_is_refused_and_nothing_is_imported(fresh: &Fresh) {
    let mut store = fresh.open();
    let bytes = std::fs::read(first_pack()).unwrap();
    let truncated = fresh.scratch().join("truncated.tar.gz");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let err = store.import(&truncated, None).unwrap_err();
    assert!(matches!(err, StoreError::BadRun { .. }), "{err}");
    assert!(err.to_string().contains("labrun import"), "{err}");
    assert!(store.runs(&RunFilter::default()).unwrap().is_empty());
}

fn a_filter_string_is_data_never_sql(fresh: &Fresh) {
    let mut store = fresh.open();
    store.import(&first_pack(), None).unwrap();
    for hostile in [
        "x' OR '1'='1",
        "x'); DROP TABLE runs; --",
        // Not a wildcard: no run's strings hold a `%`.
        "%",
    ] {
        let by = |f: fn(&mut RunFilter, String)| {
            let mut filter = RunFilter::default();
            f(&mut filter, hostile.to_string());
            filter
        };
        for filter in [
            by(|f, v| f.tool = Some(v)),
            by(|f, v| f.lab = Some(v)),
            by(|f, v| f.dataset = Some(v)),
            by(|f, v| f.machine = Some(v)),
            by(|f, v| f.run_id_prefix = Some(v)),
            by(|f, v| f.digest_prefix = Some(v)),
        ] {
            assert!(
                store.runs(&filter).unwrap().is_empty(),
                "{hostile} {filter:?}"
            );
        }
    }
    assert_eq!(store.runs(&RunFilter::default()).unwrap().len(), 1);
}

fn runs_filter_by_every_axis(fresh: &Fresh) {
    let mut store = fresh.open();
    store.import(&first_pack(), None).unwrap();
    let all = store.runs(&RunFilter::default()).unwrap();
    let run = all[0].clone();
    let matching = |store: &mut Store, filter: RunFilter| store.runs(&filter).unwrap();
    let tool = run
        .tools
        .first()
        .expect("the run names its tools")
        .name
        .clone();
    let class = run.machine_class.clone().expect("a machine class");
    let finished = run.finished_at.clone().expect("a finish time");
    let day = finished[..10].to_string();
    let wanted = [
        RunFilter {
            tool: Some(tool),
            ..Default::default()
        },
        RunFilter {
            run_id_prefix: Some(run.run_id[..3].to_string()),
            ..Default::default()
        },
        RunFilter {
            lab: run.lab.clone(),
            ..Default::default()
        },
        RunFilter {
            dataset: Some("synthetic".into()),
            ..Default::default()
        },
        RunFilter {
            machine: Some(class.clone()),
            ..Default::default()
        },
        RunFilter {
            machine: Some("vCPU".into()),
            ..Default::default()
        },
        RunFilter {
            since: Some(day.clone()),
            ..Default::default()
        },
        RunFilter {
            until: Some("2999".into()),
            ..Default::default()
        },
        RunFilter {
            digest_prefix: Some(run.digest[..8].to_string()),
            ..Default::default()
        },
    ];
    for filter in wanted {
        assert_eq!(matching(&mut store, filter.clone()), all, "{filter:?}");
    }
    let unwanted = [
        RunFilter {
            tool: Some("no-such-tool".into()),
            ..Default::default()
        },
        RunFilter {
            run_id_prefix: Some("zzz-not-a-run".into()),
            ..Default::default()
        },
        RunFilter {
            lab: Some("no-such-lab".into()),
            ..Default::default()
        },
        RunFilter {
            dataset: Some("SYNTHETIC".into()),
            ..Default::default()
        },
        RunFilter {
            machine: Some(format!("{class}x")),
            ..Default::default()
        },
        RunFilter {
            since: Some("2999".into()),
            ..Default::default()
        },
        RunFilter {
            until: Some(day),
            ..Default::default()
        },
        RunFilter {
            digest_prefix: Some("x".into()),
            ..Default::default()
        },
    ];
    for filter in unwanted {
        assert!(
            matching(&mut store, filter.clone()).is_empty(),
            "{filter:?}"
        );
    }
}

fn a_run_folder_and_its_pack_are_one_run(fresh: &Fresh) {
    let mut store = fresh.open();
    let opened = labrun_report::pack::open(&first_pack()).unwrap();
    let run = fresh.scratch().join("run");
    copy_tree(opened.dir(), &run);
    let from_folder = store.import(&run, None).unwrap();
    let packed = fresh.scratch().join("run.tar.gz");
    labrun_report::pack::write(&run, &packed).unwrap();
    let from_pack = store.import(&packed, None).unwrap();
    assert!(matches!(from_folder, Imported::Added { .. }));
    assert_eq!(
        from_pack,
        Imported::AlreadyPresent {
            digest: from_folder.digest().to_string()
        }
    );
}

fn a_run_folder_still_being_written_is_refused(fresh: &Fresh) {
    let mut store = fresh.open();
    let opened = labrun_report::pack::open(&first_pack()).unwrap();
    let run = fresh.scratch().join("run");
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
    let err = store.import(&run, None).unwrap_err();
    assert!(matches!(err, StoreError::StillRunning { .. }), "{err}");
    assert!(store.runs(&RunFilter::default()).unwrap().is_empty());
}

fn a_run_is_resolved_by_digest_prefix_or_run_id(fresh: &Fresh) {
    let mut store = fresh.open();
    let packs = committed_packs();
    let mut digests = Vec::new();
    for pack in packs.iter().take(6) {
        if let Ok(i) = store.import(pack, None) {
            digests.push(i.digest().to_string());
        }
    }
    let all = store.runs(&RunFilter::default()).unwrap();
    let one = &all[0];
    assert_eq!(store.resolve(&one.digest[..12]).unwrap(), *one);
    assert_eq!(
        store
            .resolve(&format!("sha256:{}", &one.digest[..12]))
            .unwrap(),
        *one
    );
    assert_eq!(store.resolve(&one.run_id).unwrap(), *one);
    let none = store.resolve("no-such-run").unwrap_err();
    assert!(none.contains("labrun runs"), "{none}");
    // The empty prefix names every run: refused, listing them.
    let many = store.resolve("").unwrap_err();
    assert!(many.contains("give more of the digest"), "{many}");
}

fn a_variants_run_is_imported_as_each_variants_run(fresh: &Fresh) {
    let mut store = fresh.open();
    let pack = committed_packs()
        .into_iter()
        .find(|p| {
            let opened = labrun_report::pack::open(p).unwrap();
            labrun_report::variants::is_variants_run(opened.dir())
        })
        .expect("a committed variants pack");
    let results = store.import_all(&pack, None);
    assert!(results.len() >= 2, "{results:?}");
    for (label, result) in &results {
        assert!(label.contains("(variant "), "{label}");
        assert!(
            matches!(result, Ok(Imported::Added { .. })),
            "{label}: {result:?}"
        );
    }
    let runs = store.runs(&RunFilter::default()).unwrap();
    assert_eq!(runs.len(), results.len());
    for r in &runs {
        assert!(r.lab.is_some(), "{}", r.run_id);
        assert!(!store.samples(&r.digest).unwrap().is_empty());
    }
    // Again: each variant is there already.
    for (_, result) in store.import_all(&pack, None) {
        assert!(matches!(result, Ok(Imported::AlreadyPresent { .. })));
    }
    // A single run through import_all is one result.
    let single = store.import_all(&first_pack(), None);
    assert_eq!(single.len(), 1);
}

fn the_origin_is_kept(fresh: &Fresh) {
    let mut store = fresh.open();
    let packs = single_run_packs();
    let theirs = store
        .import(&packs[0], Some("alice's workstation"))
        .unwrap();
    let ours = store.import(&packs[1], None).unwrap();
    let runs = store.runs(&RunFilter::default()).unwrap();
    let origin = |d: &str| runs.iter().find(|r| r.digest == d).unwrap().origin.clone();
    assert_eq!(
        origin(theirs.digest()).as_deref(),
        Some("alice's workstation")
    );
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_eq!(origin(ours.digest()).as_deref(), Some(host.trim()));
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
#[ignore = "needs PostgreSQL (Debian's postgresql): `make test` runs it"]
fn a_postgres_database_that_is_not_a_labrun_store_is_refused_and_left_alone() {
    let server = TestPostgres::start(Auth::Trust).unwrap();
    server.create_database("theirs").unwrap();
    server
        .psql("theirs", "CREATE TABLE runs (x INTEGER)")
        .unwrap();
    let err = Store::connect(&Location::Postgres(server.url("theirs")))
        .err()
        .expect("another program's database is refused");
    assert!(matches!(err, StoreError::Foreign { .. }), "{err}");
    assert!(err.to_string().contains("another store"), "{err}");
    // Nothing was added to it: a second look finds the same refusal.
    let again = Store::connect(&Location::Postgres(server.url("theirs"))).err();
    assert!(matches!(again, Some(StoreError::Foreign { .. })));
}

#[test]
#[ignore = "needs PostgreSQL (Debian's postgresql): `make test` runs it"]
fn a_postgres_store_from_a_newer_labrun_is_refused() {
    let server = TestPostgres::start(Auth::Trust).unwrap();
    server.create_database("store").unwrap();
    let location = Location::Postgres(server.url("store"));
    drop(Store::connect(&location).unwrap());
    server
        .psql(
            "store",
            &format!(
                "UPDATE labrun_schema SET version = {}",
                labrun_store::latest() + 1
            ),
        )
        .unwrap();
    let err = Store::connect(&location)
        .err()
        .expect("a newer store is refused");
    assert!(matches!(err, StoreError::Newer { .. }), "{err}");
}

#[test]
#[ignore = "needs PostgreSQL (Debian's postgresql): `make test` runs it"]
fn an_unreachable_postgres_server_says_so() {
    // A port nothing listens on: bound, then let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = Store::connect(&Location::Postgres(format!(
        "postgres://labrun@127.0.0.1:{port}/store"
    )))
    .err()
    .expect("nothing listens there");
    assert!(matches!(err, StoreError::Unreachable { .. }), "{err}");
    assert!(err.to_string().contains("check that it runs"), "{err}");
}

#[test]
fn a_url_with_a_password_is_refused_before_connecting() {
    let err = Store::connect(&Location::Postgres(
        "postgres://labrun:hunter2@127.0.0.1:1/store".into(),
    ))
    .err()
    .expect("a password in the URL is refused");
    assert!(matches!(err, StoreError::BadUrl { .. }), "{err}");
    assert!(err.to_string().contains("PGPASSWORD"), "{err}");
    assert!(!err.to_string().contains("hunter2"), "{err}");
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
