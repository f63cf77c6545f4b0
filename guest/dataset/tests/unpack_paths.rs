//! Hostile paths in a dataset archive: names too deep or too long for the
//! tree to hold, and hard links that land a symbolic link where its target
//! leaves the tree. `check`'s listing and the unpack refuse each alike,
//! naming the entry, with an archive each test makes itself.

use labrun_dataset::{DatasetError, UnpackLimits, list_file, unpack_file};
use labrun_evidence::ArchiveFormat;
use std::path::Path;

const ROOMY: UnpackLimits = UnpackLimits {
    max_bytes: 1 << 30,
    max_entries: 1_000_000,
};

/// One tar entry; the builder writes GNU long-name records for long names.
enum E<'a> {
    File(&'a str),
    Dir(&'a str),
    Symlink(&'a str, &'a str),
    HardLink(&'a str, &'a str),
}

fn tar_bytes(entries: &[E]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for e in entries {
        let mut h = tar::Header::new_gnu();
        h.set_mtime(1_700_000_000);
        match e {
            E::File(name) => {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_mode(0o644);
                h.set_size(1);
                b.append_data(&mut h, name, &b"x"[..]).unwrap();
            }
            E::Dir(name) => {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_mode(0o755);
                h.set_size(0);
                b.append_data(&mut h, name, &b""[..]).unwrap();
            }
            E::Symlink(name, target) | E::HardLink(name, target) => {
                let kind = match e {
                    E::Symlink(..) => tar::EntryType::Symlink,
                    _ => tar::EntryType::Link,
                };
                h.set_entry_type(kind);
                h.set_mode(0o777);
                h.set_size(0);
                b.append_link(&mut h, name, target).unwrap();
            }
        }
    }
    b.into_inner().unwrap()
}

/// The archive written as `archive.tar` in a new folder, and that folder.
fn archive(entries: &[E]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("archive.tar");
    std::fs::write(&path, tar_bytes(entries)).unwrap();
    (dir, path)
}

/// What `check` (the listing) and the unpack each say of the archive.
fn both(archive: &Path, dest: &Path) -> [Result<(), DatasetError>; 2] {
    [
        list_file(archive, ArchiveFormat::Tar, ROOMY).map(|_| ()),
        unpack_file(archive, ArchiveFormat::Tar, dest, ROOMY, &mut |_, _| {}).map(|_| ()),
    ]
}

/// Both refuse, with an error of the kind `is_kind` accepts, naming `entry`
/// and saying each of `words`.
fn assert_refused(
    archive: &Path,
    dest: &Path,
    is_kind: fn(&DatasetError) -> bool,
    entry: &str,
    words: &[&str],
) {
    for (who, result) in ["check", "unpack"].iter().zip(both(archive, dest)) {
        let e = result.expect_err(who);
        let message = e.to_string();
        assert!(is_kind(&e), "{who}: {e:?}");
        assert!(message.contains(&format!("`{entry}")), "{who}: {message}");
        for w in words {
            assert!(message.contains(w), "{who}: {w:?} missing: {message}");
        }
    }
}

fn unsupported(e: &DatasetError) -> bool {
    matches!(e, DatasetError::ArchiveUnsupported { .. })
}

fn unsafe_entry(e: &DatasetError) -> bool {
    matches!(e, DatasetError::UnsafeEntry { .. })
}

#[test]
fn a_path_deeper_than_the_bound_is_refused_by_check_and_unpack_alike() {
    // 1,024 components (1,023 folders and a file) is the deepest allowed.
    let deepest = format!("{}f", "d/".repeat(1023));
    let (dir, ok) = archive(&[E::File(&deepest)]);
    for (who, result) in ["check", "unpack"]
        .iter()
        .zip(both(&ok, &dir.path().join("ok")))
    {
        result.unwrap_or_else(|e| panic!("{who}: {e}"));
    }
    // One more is refused before anything of it is kept or made. (A file
    // 70,000 folders deep, 141 bytes compressed, took check to 2.8 GB.)
    let deeper = format!("{}f", "d/".repeat(1024));
    let (dir, bad) = archive(&[E::File("first"), E::File(&deeper)]);
    let dest = dir.path().join("dest");
    assert_refused(&bad, &dest, unsupported, "d/d/d/", &["1024", "deep"]);
    assert!(
        !dest.join("d").exists(),
        "a folder of the refused entry was made"
    );
}

#[test]
fn a_name_or_component_longer_than_linux_allows_is_refused_by_check_and_unpack_alike() {
    // 21 folders of 200 bytes: 4,221 bytes, past PATH_MAX.
    let long = format!("{}f", format!("{}/", "n".repeat(200)).repeat(21));
    let (dir, bad) = archive(&[E::File(&long)]);
    let dest = dir.path().join("dest");
    assert_refused(
        &bad,
        &dest,
        unsupported,
        "nnnn",
        &["4095 bytes", "PATH_MAX"],
    );
    // One component of 256 bytes: no file system takes it.
    let wide = format!("a/{}", "w".repeat(256));
    let (dir, bad) = archive(&[E::File(&wide)]);
    let dest = dir.path().join("dest");
    assert_refused(
        &bad,
        &dest,
        unsupported,
        "a/www",
        &["255 bytes", "NAME_MAX"],
    );
    // A link target longer than a path.
    let far = "t/".repeat(2100);
    let (dir, bad) = archive(&[E::Symlink("l", &far)]);
    let dest = dir.path().join("dest");
    assert_refused(&bad, &dest, unsupported, "l", &["4095 bytes", "PATH_MAX"]);
}

#[test]
fn a_hard_link_to_a_symbolic_link_is_checked_where_it_lands() {
    // Each symbolic link stays in the tree where it stands; a hard link at
    // the root to it is the same link two folders higher, where `../..`
    // leaves the tree.
    let (dir, bad) = archive(&[
        E::Dir("a/"),
        E::Dir("a/b/"),
        E::Symlink("a/b/l", "../.."),
        E::Symlink("a/b/pw", "../../etc/passwd"),
        E::HardLink("top", "a/b/l"),
        E::HardLink("toppw", "a/b/pw"),
    ]);
    let dest = dir.path().join("dest");
    assert_refused(
        &bad,
        &dest,
        unsafe_entry,
        "top`",
        &["a hard link to `a/b/l`", "above the tree's root"],
    );
    assert!(std::fs::symlink_metadata(dest.join("top")).is_err());

    // Through a chain of hard links too: the second lands at the root.
    let (dir, chain) = archive(&[
        E::Dir("a/b/"),
        E::Symlink("a/b/up", "../x"),
        E::HardLink("a/c", "a/b/up"),
        E::HardLink("c", "a/c"),
    ]);
    let dest = dir.path().join("dest");
    assert_refused(&chain, &dest, unsafe_entry, "c`", &["a hard link to `a/c`"]);

    // A hard link to a symbolic link that stays in the tree where it lands,
    // and a hard link to a file, are made.
    let (dir, good) = archive(&[
        E::Dir("a/b/"),
        E::File("a/f"),
        E::Symlink("a/b/near", "../f"),
        E::HardLink("a/c/near", "a/b/near"),
        E::Symlink("a/b/same", "g"),
        E::HardLink("same", "a/b/same"),
        E::HardLink("f2", "a/f"),
    ]);
    let dest = dir.path().join("dest");
    let listed = list_file(&good, ArchiveFormat::Tar, ROOMY).unwrap();
    let made = unpack_file(&good, ArchiveFormat::Tar, &dest, ROOMY, &mut |_, _| {}).unwrap();
    assert_eq!(listed, made);
    assert_eq!(made.hard_links, 3);
    assert_eq!(
        std::fs::read_link(dest.join("a/c/near")).unwrap(),
        Path::new("../f")
    );
    assert_eq!(
        std::fs::read_link(dest.join("same")).unwrap(),
        Path::new("g")
    );
}
