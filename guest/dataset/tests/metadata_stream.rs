//! The streamed metadata scan against the in-memory one it replaces for big
//! trees: the same manifest file, byte for byte, on trees with hard links
//! (inside and outside the tree), symlinks, empty folders, xattrs and holes;
//! the same errors.

use labrun_dataset::{scan_metadata, scan_metadata_to_file, write_manifest};
use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

/// Writes `root`'s manifest both ways and checks that the files are equal
/// and that the streamed one reports its digest and totals.
fn assert_same_file(root: &Path, scratch: &Path) {
    let held = scratch.join("held.jsonl");
    let manifest = scan_metadata(root).unwrap();
    write_manifest(&held, &manifest).unwrap();
    let streamed = scratch.join("streamed.jsonl");
    let mut last = (0, 0);
    let written =
        scan_metadata_to_file(root, &streamed, &mut |done, total| last = (done, total)).unwrap();
    let bytes = fs::read(&held).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&fs::read(&streamed).unwrap()),
        String::from_utf8_lossy(&bytes)
    );
    assert_eq!(written.sha256, labrun_evidence::digest::sha256_hex(&bytes));
    assert_eq!(written.entries, manifest.entries.len());
    assert_eq!(written.file_bytes, manifest.total_file_bytes());
    assert_eq!(last, (written.file_bytes, written.file_bytes), "progress");
    let tmp_files: Vec<_> = fs::read_dir(scratch)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(tmp_files.is_empty(), "{tmp_files:?}");
}

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

/// Whether the filesystem under `dir` takes `user.` xattrs.
fn takes_user_xattrs(dir: &Path) -> bool {
    let probe = dir.join("xattr-probe");
    fs::write(&probe, b"").unwrap();
    let r = rustix::fs::setxattr(&probe, "user.probe", b"1", rustix::fs::XattrFlags::empty());
    fs::remove_file(&probe).unwrap();
    r.is_ok()
}

#[test]
fn the_fidelity_fixture_streams_to_the_same_file() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("tree");
    labrun_dataset::fidelity::write_fixture(&root, 3).unwrap();
    assert_same_file(&root, tmp.path());
}

#[test]
fn links_folders_xattrs_and_holes_stream_to_the_same_file() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("tree");
    let outside = tmp.path().join("outside");
    fs::create_dir(&outside).unwrap();
    for i in 0..40 {
        write(&root, &format!("d{}/f{i}", i % 3), &format!("file {i}"));
    }
    // Names that sort around `/`, so groups are numbered across folders.
    write(&root, "a.b", "dot");
    write(&root, "a-b/x", "dash");
    write(&root, "a/z", "slash");
    // Groups of two and three names; one whose first path comes last.
    fs::hard_link(root.join("a/z"), root.join("a-b/z")).unwrap();
    fs::hard_link(root.join("d0/f0"), root.join("zz")).unwrap();
    fs::hard_link(root.join("d0/f0"), root.join("a.link")).unwrap();
    fs::hard_link(root.join("d1/f1"), root.join("d2/f1-too")).unwrap();
    // Two links, one name in the tree: no group.
    write(&root, "lonely", "lonely");
    fs::hard_link(root.join("lonely"), outside.join("other-name")).unwrap();
    symlink("d0/f3", root.join("link")).unwrap();
    symlink("nowhere", root.join("d1/dangling")).unwrap();
    fs::create_dir_all(root.join("empty/inner")).unwrap();
    let sparse = fs::File::create(root.join("sparse.bin")).unwrap();
    sparse.set_len(8 << 20).unwrap();
    drop(sparse);
    let xattrs = takes_user_xattrs(tmp.path());
    if xattrs {
        let set = |rel: &str, value: &[u8]| {
            rustix::fs::setxattr(
                root.join(rel),
                "user.labrun.test",
                value,
                rustix::fs::XattrFlags::empty(),
            )
            .unwrap()
        };
        set("d2/f5", b"tag");
        set("d2", b"folder");
    }
    assert_same_file(&root, tmp.path());
    let m = scan_metadata(&root).unwrap();
    let groups = m.entries.iter().filter(|e| e.link_group.is_some()).count();
    assert_eq!(groups, 7, "three groups of 2, 3 and 2 names");
    let entry = |path: &str| m.entries.iter().find(|e| e.path == path).unwrap();
    assert!(
        entry("sparse.bin").sparse,
        "the test needs a file with holes"
    );
    assert_eq!(entry("d2").xattrs.is_some(), xattrs);
    assert_eq!(entry("lonely").link_group, None);
}

#[test]
fn a_tree_without_links_and_an_empty_tree_stream_alike() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("tree");
    fs::create_dir(&root).unwrap();
    assert_same_file(&root, tmp.path());
    for i in 0..300 {
        write(&root, &format!("d{}/f.{i}", i % 7), &"x".repeat(i));
    }
    assert_same_file(&root, tmp.path());
}

#[test]
fn an_entry_that_cannot_be_read_is_named_as_in_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("tree");
    write(&root, "ok/file", "fine");
    let fifo = root.join("ok/pipe");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    let out = tmp.path().join("m.jsonl");
    let streamed = scan_metadata_to_file(&root, &out, &mut |_, _| {}).unwrap_err();
    let held = scan_metadata(&root).unwrap_err();
    assert_eq!(streamed.to_string(), held.to_string());
    assert!(streamed.to_string().contains("ok/pipe"), "{streamed}");
    assert!(
        !out.exists(),
        "no manifest of a tree that was not read whole"
    );

    // An unreadable folder (root reads any folder: then there is none).
    fs::remove_file(&fifo).unwrap();
    let locked = root.join("locked");
    fs::create_dir(&locked).unwrap();
    fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
    if fs::read_dir(&locked).is_err() {
        let streamed = scan_metadata_to_file(&root, &out, &mut |_, _| {}).unwrap_err();
        let held = scan_metadata(&root).unwrap_err();
        assert_eq!(streamed.to_string(), held.to_string());
        assert!(streamed.to_string().contains("locked"), "{streamed}");
    }
    fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}
