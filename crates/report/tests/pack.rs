//! A run as one file: `pack::write` then `pack::open` gives the same folder
//! back, the same run packs to the same bytes, and a pack that was changed,
//! or that tries to write outside its run, is refused with the entry named.

use labrun_report::pack::{self, Limits, MANIFEST_FILE, PackError};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

fn fixture_raw() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/two-tools/raw")
}

/// A run folder `<tmp>/run-1` with the fixture's raw/, a summary and a
/// nested folder, so the pack has depth.
fn run_folder(tmp: &Path) -> PathBuf {
    let run = tmp.join("run-1");
    std::fs::create_dir_all(run.join("raw")).unwrap();
    for f in std::fs::read_dir(fixture_raw()).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), run.join("raw").join(f.file_name())).unwrap();
    }
    std::fs::create_dir_all(run.join("raw/logs/a-very-long-folder-name-that-makes-the-path-longer-than-one-hundred-bytes-of-a-tar-header")).unwrap();
    std::fs::write(
        run.join("raw/logs/a-very-long-folder-name-that-makes-the-path-longer-than-one-hundred-bytes-of-a-tar-header/step.out"),
        "out\n",
    )
    .unwrap();
    std::fs::write(run.join("summary.md"), "# made at the time\n").unwrap();
    run
}

fn files_under(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    fn walk(base: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn a_packed_run_opens_as_the_folder_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let run = run_folder(tmp.path());
    let packed = pack::write(&run, &tmp.path().join("run-1.tar.gz")).unwrap();
    assert_eq!(packed.files, files_under(&run).len());
    assert_eq!(packed.run, "run-1");

    let opened = pack::open(&packed.path).unwrap();
    assert_eq!(
        opened.manifest_sha256(),
        Some(packed.manifest_sha256.as_str())
    );
    assert_eq!(opened.pack(), Some(packed.path.as_path()));
    assert_eq!(opened.dir().file_name().unwrap(), "run-1");
    assert_eq!(files_under(opened.dir()), files_under(&run));
    assert_eq!(opened.default_output_dir(), tmp.path().join("run-1"));
    // And it summarizes as the folder does.
    let from_pack = labrun_report::summarize(opened.dir()).unwrap();
    let from_folder = labrun_report::summarize(&run).unwrap();
    assert_eq!(
        labrun_report::render_terminal(&from_pack),
        labrun_report::render_terminal(&from_folder)
    );

    // A folder opens in place.
    let folder = pack::open(&run).unwrap();
    assert_eq!(folder.dir(), run);
    assert_eq!(folder.pack(), None);
    assert_eq!(folder.default_output_dir(), run);
}

#[test]
fn the_same_run_packs_to_the_same_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let run = run_folder(tmp.path());
    let a = pack::write(&run, &tmp.path().join("a.tar.gz")).unwrap();
    // A later copy of the same files: other mtimes, same pack.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let again = tmp.path().join("again");
    std::fs::create_dir(&again).unwrap();
    let copy = again.join("run-1");
    for (rel, bytes) in files_under(&run) {
        let to = copy.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::write(to, bytes).unwrap();
    }
    let b = pack::write(&copy, &tmp.path().join("b.tar.gz")).unwrap();
    assert_eq!(a.manifest_sha256, b.manifest_sha256);
    assert_eq!(
        std::fs::read(&a.path).unwrap(),
        std::fs::read(&b.path).unwrap()
    );
    // A changed file changes the address.
    std::fs::write(copy.join("summary.md"), "# changed\n").unwrap();
    let c = pack::write(&copy, &tmp.path().join("c.tar.gz")).unwrap();
    assert_ne!(a.manifest_sha256, c.manifest_sha256);
}

#[test]
fn a_pack_is_not_written_into_the_run_it_packs() {
    let tmp = tempfile::tempdir().unwrap();
    let run = run_folder(tmp.path());
    let err = pack::write(&run, &run.join("raw/self.tar.gz")).unwrap_err();
    assert!(matches!(err, PackError::OutputInsideRun { .. }), "{err}");
    let err = pack::write(tmp.path(), &tmp.path().join("x.tar.gz")).unwrap_err();
    assert!(matches!(err, PackError::NotARunFolder { .. }), "{err}");
}

#[test]
fn a_run_with_a_link_is_not_packed() {
    let tmp = tempfile::tempdir().unwrap();
    let run = run_folder(tmp.path());
    std::os::unix::fs::symlink("/etc/passwd", run.join("raw/passwd")).unwrap();
    let err = pack::write(&run, &tmp.path().join("x.tar.gz")).unwrap_err();
    assert!(err.to_string().contains("raw/passwd"), "{err}");
    assert!(err.to_string().contains("symbolic link"), "{err}");
}

// ---- Changed packs: each names its file ----

/// The entries of a pack: (path, bytes), the manifest first.
fn entries(pack: &Path) -> Vec<(String, Vec<u8>)> {
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(pack).unwrap());
    let mut archive = tar::Archive::new(gz);
    archive
        .entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let name = e.path().unwrap().to_string_lossy().into_owned();
            let mut bytes = Vec::new();
            e.read_to_end(&mut bytes).unwrap();
            (name, bytes)
        })
        .collect()
}

/// A header whose name is written as raw bytes, so it can say what
/// `tar::Builder` itself refuses to write (`..`, `/abs`).
fn raw_header(name: &str, kind: tar::EntryType, size: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
    h.set_entry_type(kind);
    h.set_mode(0o644);
    h.set_size(size);
    h.set_mtime(0);
    h
}

/// Writes `entries` (a raw header each, then the body) as a .tar.gz.
fn write_pack(path: &Path, entries: Vec<(tar::Header, Vec<u8>)>) {
    let gz = flate2::write::GzEncoder::new(
        std::fs::File::create(path).unwrap(),
        flate2::Compression::fast(),
    );
    let mut tar = tar::Builder::new(gz);
    for (mut header, body) in entries {
        header.set_cksum();
        tar.append(&header, &body[..]).unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap().flush().unwrap();
}

fn regular(name: &str, body: &[u8]) -> (tar::Header, Vec<u8>) {
    (
        raw_header(name, tar::EntryType::Regular, body.len() as u64),
        body.to_vec(),
    )
}

/// A valid pack of the fixture, and its entries.
fn good_pack(tmp: &Path) -> (PathBuf, Vec<(String, Vec<u8>)>) {
    let run = tmp.join("src");
    std::fs::create_dir_all(run.join("raw")).unwrap();
    for f in std::fs::read_dir(fixture_raw()).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), run.join("raw").join(f.file_name())).unwrap();
    }
    let path = tmp.join("good.tar.gz");
    pack::write(&run, &path).unwrap();
    let e = entries(&path);
    assert_eq!(e[0].0, MANIFEST_FILE);
    (path, e)
}

/// The good pack's entries, `change`d, written to `name`, opened.
fn open_changed(
    name: &str,
    change: impl FnOnce(&mut Vec<(tar::Header, Vec<u8>)>),
) -> Result<pack::OpenedRun, PackError> {
    open_changed_with(name, &Limits::default(), change)
}

fn open_changed_with(
    name: &str,
    limits: &Limits,
    change: impl FnOnce(&mut Vec<(tar::Header, Vec<u8>)>),
) -> Result<pack::OpenedRun, PackError> {
    let tmp = tempfile::tempdir().unwrap();
    let (_, good) = good_pack(tmp.path());
    let mut list: Vec<(tar::Header, Vec<u8>)> = good.iter().map(|(n, b)| regular(n, b)).collect();
    change(&mut list);
    let path = tmp.path().join(name);
    write_pack(&path, list);
    // Keep `tmp` alive until the pack is read.
    let opened = pack::open_with(&path, limits);
    drop(tmp);
    opened
}

fn name_of(h: &tar::Header) -> String {
    String::from_utf8_lossy(&h.path_bytes()).into_owned()
}

#[test]
fn the_good_pack_opens_through_the_test_writer() {
    // The writer below is the same for every refused case: unchanged, it opens.
    open_changed("same.tar.gz", |_| {}).unwrap();
}

#[test]
fn a_changed_file_is_named() {
    let err = open_changed("tampered.tar.gz", |list| {
        let i = list
            .iter()
            .position(|(h, _)| name_of(h) == "raw/plan.json")
            .unwrap();
        let mut body = list[i].1.clone();
        body[0] ^= 1; // same size, other bytes
        list[i] = regular("raw/plan.json", &body);
    })
    .unwrap_err();
    assert!(
        matches!(&err, PackError::Tampered { file, .. } if file == "raw/plan.json"),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("`raw/plan.json` does not match the manifest"),
        "{err}"
    );
}

#[test]
fn an_added_file_is_named() {
    let err = open_changed("extra.tar.gz", |list| {
        list.push(regular("raw/added.txt", b"not in the manifest\n"));
    })
    .unwrap_err();
    assert!(
        matches!(&err, PackError::Extra { file, .. } if file == "raw/added.txt"),
        "{err}"
    );
}

#[test]
fn a_removed_file_is_named() {
    let err = open_changed("missing.tar.gz", |list| {
        list.retain(|(h, _)| name_of(h) != "raw/records.jsonl");
    })
    .unwrap_err();
    assert!(
        matches!(&err, PackError::Missing { file, .. } if file == "raw/records.jsonl"),
        "{err}"
    );
}

#[test]
fn a_pack_without_its_manifest_first_is_refused() {
    let err = open_changed("no-manifest.tar.gz", |list| {
        list.remove(0);
    })
    .unwrap_err();
    assert!(err.to_string().contains(MANIFEST_FILE), "{err}");
}

// ---- Hostile packs: refused before anything is written outside ----

fn assert_refused(err: PackError, entry: &str, reason: &str) {
    match &err {
        PackError::Refused {
            entry: e,
            reason: r,
            ..
        } => {
            assert_eq!(e, entry, "{err}");
            assert!(r.contains(reason), "{err}");
        }
        other => panic!("not refused: {other}"),
    }
}

#[test]
fn a_path_climbing_out_of_the_run_is_refused() {
    let err = open_changed("dotdot.tar.gz", |list| {
        list.insert(1, regular("raw/../../x", b"escape\n"));
    })
    .unwrap_err();
    assert_refused(err, "raw/../../x", "`..`");
    let err = open_changed("dotdot2.tar.gz", |list| {
        list.insert(1, regular("../x", b"escape\n"));
    })
    .unwrap_err();
    assert_refused(err, "../x", "`..`");
}

#[test]
fn an_absolute_path_is_refused() {
    let err = open_changed("absolute.tar.gz", |list| {
        list.insert(1, regular("/tmp/labrun-pack-escape", b"escape\n"));
    })
    .unwrap_err();
    assert_refused(err, "/tmp/labrun-pack-escape", "absolute path");
    assert!(!Path::new("/tmp/labrun-pack-escape").exists());
}

#[test]
fn a_link_out_of_the_run_is_refused() {
    let err = open_changed("symlink.tar.gz", |list| {
        let mut h = raw_header("raw/evil", tar::EntryType::Symlink, 0);
        let target = b"../../../../etc";
        h.as_old_mut().linkname[..target.len()].copy_from_slice(target);
        list.insert(1, (h, Vec::new()));
        // The classic follow-up: a file written through the link.
        list.insert(2, regular("raw/evil/passwd", b"root::0:0\n"));
    })
    .unwrap_err();
    assert_refused(err, "raw/evil", "a link (to `../../../../etc`)");
    let err = open_changed("hardlink.tar.gz", |list| {
        let mut h = raw_header("raw/hard", tar::EntryType::Link, 0);
        let target = b"/etc/passwd";
        h.as_old_mut().linkname[..target.len()].copy_from_slice(target);
        list.insert(1, (h, Vec::new()));
    })
    .unwrap_err();
    assert_refused(err, "raw/hard", "regular files and folders only");
}

#[test]
fn a_huge_entry_is_refused_before_it_is_read() {
    // The header claims a terabyte; the body is not there. The size alone
    // refuses it.
    let err = open_changed("huge.tar.gz", |list| {
        list.insert(
            1,
            (
                raw_header("raw/huge.bin", tar::EntryType::Regular, 1 << 40),
                Vec::new(),
            ),
        );
    })
    .unwrap_err();
    assert_refused(err, "raw/huge.bin", "more than the");

    // A real file over a small bound, and a run over a small total.
    let small = Limits {
        max_file_bytes: 1000,
        ..Limits::default()
    };
    let err = open_changed_with("big.tar.gz", &small, |list| {
        list.insert(1, regular("raw/big.bin", &[0u8; 1001]));
    })
    .unwrap_err();
    assert_refused(err, "raw/big.bin", "1001 bytes, more than the 1000");
    let total = Limits {
        max_total_bytes: 100,
        ..Limits::default()
    };
    let err = open_changed_with("total.tar.gz", &total, |_| {}).unwrap_err();
    assert!(matches!(err, PackError::Refused { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("more than the 100 a pack may hold"),
        "{err}"
    );
}

#[test]
fn a_device_entry_is_refused() {
    let err = open_changed("fifo.tar.gz", |list| {
        list.insert(
            1,
            (raw_header("raw/pipe", tar::EntryType::Fifo, 0), Vec::new()),
        );
    })
    .unwrap_err();
    assert_refused(err, "raw/pipe", "regular files and folders only");
}

#[test]
fn a_file_that_is_not_a_pack_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("notes.txt");
    std::fs::write(&path, "not a pack\n").unwrap();
    let err = pack::open(&path).unwrap_err();
    assert!(matches!(err, PackError::NotAPack { .. }), "{err}");
}

#[test]
fn a_header_record_that_declares_gigabytes_is_refused_before_it_is_read() {
    // A GNU long name or a PAX header declaring 2.5 GiB, with a few KB
    // after it: the tar crate would read the record whole (2.5 GiB of
    // memory for a pack whose record really holds it); it is refused from
    // its header, naming it.
    let declared = 2_684_354_560u64;
    for (kind, named) in [
        (tar::EntryType::GNULongName, "GNU long-name record"),
        (tar::EntryType::XHeader, "PAX extended header"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("hostile.tar.gz");
        let mut h = tar::Header::new_gnu();
        h.as_old_mut().name[..13].copy_from_slice(b"././@LongLink");
        h.set_entry_type(kind);
        h.set_size(declared);
        h.set_cksum();
        let mut gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&path).unwrap(),
            flate2::Compression::fast(),
        );
        gz.write_all(h.as_bytes()).unwrap();
        gz.write_all(&[b'n'; 4096]).unwrap();
        gz.finish().unwrap();
        let err = pack::open(&path).unwrap_err();
        assert!(matches!(err, PackError::NotAPack { .. }), "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains(named) && msg.contains(&declared.to_string()),
            "{msg}"
        );
    }
}

/// A pack read into memory (as the results store's questions read their
/// runs) gives the evidence and the summary an unpacked folder gives, and
/// keeps `raw/` only.
#[test]
fn a_pack_read_in_memory_reads_as_its_unpacked_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let run = run_folder(tmp.path());
    let packed = pack::write(&run, &tmp.path().join("run-1.tar.gz")).unwrap();
    let bytes = std::fs::read(&packed.path).unwrap();
    let in_memory = pack::read_in_memory(&packed.path, &bytes).unwrap();
    let opened = pack::open(&packed.path).unwrap();
    assert_eq!(
        Some(in_memory.manifest_sha256.as_str()),
        opened.manifest_sha256()
    );
    assert_eq!(in_memory.run, "run-1");
    assert!(
        in_memory.files.files.keys().all(|p| p.starts_with("raw")),
        "{:?}",
        in_memory.files.files.keys()
    );
    let from_folder = labrun_report::evidence::load(opened.dir()).unwrap();
    let from_memory =
        labrun_report::evidence::load_in_memory(&in_memory.files, &in_memory.run).unwrap();
    assert_eq!(from_folder.folder_name, from_memory.folder_name);
    let json =
        |raw| serde_json::to_string(&labrun_report::summarize_raw(raw)).expect("summary as JSON");
    assert_eq!(json(from_folder), json(from_memory));
}

/// Read into memory, a changed file is refused as `open` refuses it.
#[test]
fn a_changed_file_is_named_in_memory_too() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, good) = good_pack(tmp.path());
    let list: Vec<(tar::Header, Vec<u8>)> = good
        .iter()
        .map(|(n, b)| {
            let mut body = b.clone();
            if n == "raw/plan.json" {
                body[0] ^= 1;
            }
            regular(n, &body)
        })
        .collect();
    let path = tmp.path().join("tampered.tar.gz");
    write_pack(&path, list);
    let err = pack::read_in_memory(&path, &std::fs::read(&path).unwrap()).unwrap_err();
    assert!(
        matches!(&err, PackError::Tampered { file, .. } if file == "raw/plan.json"),
        "{err}"
    );
}
