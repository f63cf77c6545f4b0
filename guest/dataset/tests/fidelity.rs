//! Metadata fidelity: the seeded fixture, a scan that records metadata, and
//! a verify that says, kind by kind, what a copy or restore kept.

use labrun_dataset::fidelity::{XATTR_FILE, XATTR_NAME, write_fixture};
use labrun_dataset::{DatasetParams, generate, scan, scan_metadata, verify, verify_fidelity};
use labrun_evidence::{
    EntryKind, Manifest, MetadataCheck, MetadataKind, MetadataStatus, VerifyOutcome,
};
use sha2::{Digest, Sha256};
use std::fs::{self, Permissions};
use std::io::ErrorKind;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The bytes of the manifest of seed 1, scale 0.0005 (generated and
/// scanned alike), as `Manifest::write_to` wrote them BEFORE the manifest
/// gained its optional metadata fields: computed on commit 07fef4e by this
/// very test with the constant printed instead of asserted. Published
/// manifests must stay byte-identical, so the digests recorded in evidence
/// keep meaning the same tree.
const MANIFEST_BYTES_SHA256: &str =
    "7a6d3451dadb3e2ed9668a8d819dd133b80933d11c3d36dca4e8c5a74837e836";

#[test]
fn published_manifests_serialize_as_before_the_metadata_fields() {
    let tmp = tempfile::tempdir().unwrap();
    let params = DatasetParams::published(1, 0.0005);
    let generated = generate(tmp.path(), &params, &mut |_, _| {}).unwrap();
    for m in [generated, scan(tmp.path()).unwrap()] {
        let mut bytes = Vec::new();
        m.write_to(&mut bytes).unwrap();
        assert_eq!(hex::encode(Sha256::digest(&bytes)), MANIFEST_BYTES_SHA256);
    }
}

/// Whether the filesystem under `dir` takes `user.` xattrs: the fixture
/// must then carry one, and otherwise say it could not.
fn takes_user_xattrs(dir: &Path) -> bool {
    let probe = dir.join("xattr-probe");
    fs::write(&probe, b"").unwrap();
    let r = rustix::fs::setxattr(&probe, "user.probe", b"1", rustix::fs::XattrFlags::empty());
    fs::remove_file(&probe).unwrap();
    match r {
        Ok(()) => true,
        Err(rustix::io::Errno::OPNOTSUPP) => false,
        Err(e) => panic!("probing xattrs in {}: {e}", dir.display()),
    }
}

fn fixture(tmp: &Path) -> (PathBuf, Manifest) {
    let dir = tmp.join("fixture");
    let m = write_fixture(&dir, 7).unwrap();
    (dir, m)
}

/// Copies `from` to `to` with `cp` and these flags, under umask 022 (what a
/// copy that ignores modes applies).
fn cp(flags: &str, from: &Path, to: &Path) {
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!("umask 022 && cp {flags} -- \"$0\" \"$1\""))
        .arg(from)
        .arg(to)
        .status()
        .expect("running cp");
    assert!(status.success(), "cp {flags} failed");
}

fn check(out: &VerifyOutcome, kind: MetadataKind) -> &MetadataCheck {
    out.metadata
        .iter()
        .find(|c| c.kind == kind)
        .unwrap_or_else(|| panic!("no verdict for {kind:?}: {out:?}"))
}

fn detail(out: &VerifyOutcome, kind: MetadataKind) -> &str {
    check(out, kind).detail.as_deref().unwrap_or("")
}

fn assert_status(out: &VerifyOutcome, kind: MetadataKind, status: MetadataStatus) {
    let c = check(out, kind);
    assert_eq!(c.status, status, "{kind:?}: {:?}", c.detail);
}

#[test]
fn the_fixture_is_deterministic_and_holds_every_kind() {
    let tmp = tempfile::tempdir().unwrap();
    let a = write_fixture(&tmp.path().join("a"), 7).unwrap();
    let b = write_fixture(&tmp.path().join("b"), 7).unwrap();
    assert_eq!(a, b);
    let other = write_fixture(&tmp.path().join("c"), 8).unwrap();
    assert_ne!(a, other);

    let entry = |path: &str| {
        a.entries
            .iter()
            .find(|e| e.path == path)
            .unwrap_or_else(|| panic!("no {path} in {a:?}"))
    };
    let modes: Vec<u32> = a.entries.iter().map(|e| e.mode).collect();
    for mode in [0o600, 0o755, 0o444, 0o644, 0o664] {
        assert!(modes.contains(&mode), "mode {mode:o}");
    }
    for e in &a.entries {
        match e.kind {
            EntryKind::Symlink => assert_eq!(e.mtime, None, "{}", e.path),
            _ => {
                let t = e.mtime.unwrap_or_else(|| panic!("{} has no mtime", e.path));
                assert!(t.secs < 1_600_000_000 && t.nanos > 0, "{}: {t}", e.path);
            }
        }
    }
    assert_eq!(entry("links/to-file").kind, EntryKind::Symlink);
    assert_eq!(entry("links/to-dir").kind, EntryKind::Symlink);
    assert!(!tmp.path().join("a/links/dangling").exists());
    assert_eq!(entry("links/dangling").kind, EntryKind::Symlink);
    assert_eq!(entry("links/hardlink-a.txt").link_group, Some(0));
    assert_eq!(entry("links/hardlink-b.txt").link_group, Some(0));
    assert_eq!(
        a.entries.iter().filter(|e| e.link_group.is_some()).count(),
        2
    );
    assert_eq!(entry("empty/nested").kind, EntryKind::Dir);
    let sparse = entry("sparse.bin");
    assert!(sparse.sparse && sparse.size == 4 << 20);
    assert_eq!(entry("a dir with spaces/café ünïcødé.txt").size, 200);
    let total: u64 = a.entries.iter().map(|e| e.size).sum::<u64>() - sparse.size;
    assert!(total < 16 << 10, "a few KiB of data, not {total}");

    let tagged = entry(XATTR_FILE).xattrs.clone();
    if takes_user_xattrs(tmp.path()) {
        let tagged = tagged.expect("the fixture's xattr is in the manifest");
        assert_eq!(tagged.keys().collect::<Vec<_>>(), [XATTR_NAME]);
        let other_value = other.entries.iter().find(|e| e.path == XATTR_FILE);
        assert_ne!(Some(&tagged), other_value.and_then(|e| e.xattrs.as_ref()));
    } else {
        assert_eq!(
            tagged, None,
            "xattrs recorded on a filesystem that refuses them"
        );
    }
    // The manifest is exactly what a metadata scan finds, and what it
    // writes reads back the same.
    assert_eq!(scan_metadata(&tmp.path().join("a")).unwrap(), a);
    let mut bytes = Vec::new();
    a.write_to(&mut bytes).unwrap();
    assert_eq!(Manifest::read_from(&bytes[..]).unwrap(), a);
}

#[test]
fn the_fixture_refuses_a_non_empty_directory() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("x"), b"x").unwrap();
    let err = write_fixture(tmp.path(), 1).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AlreadyExists, "{err}");
}

#[test]
fn cp_a_preserves_every_kind() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, m) = fixture(tmp.path());
    let copy = tmp.path().join("copy");
    cp("-a", &dir, &copy);
    let out = verify_fidelity(&copy, &m).unwrap();
    assert!(out.passed, "{out:?}");
    assert_eq!(
        out.metadata.iter().map(|c| c.kind).collect::<Vec<_>>(),
        MetadataKind::ALL
    );
    for kind in MetadataKind::ALL {
        if kind == MetadataKind::Xattr && !takes_user_xattrs(tmp.path()) {
            assert_status(&out, kind, MetadataStatus::NotTested);
            assert!(detail(&out, kind).contains("xattr"), "{out:?}");
        } else {
            assert_status(&out, kind, MetadataStatus::Preserved);
        }
    }
}

#[test]
fn cp_r_loses_modes_mtimes_and_hard_links_but_not_content() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, m) = fixture(tmp.path());
    let copy = tmp.path().join("copy");
    cp("-r", &dir, &copy);
    // The content-only verify of today sees nothing wrong.
    let content_only = verify(&copy, &m).unwrap();
    assert!(content_only.passed && content_only.metadata.is_empty());

    let out = verify_fidelity(&copy, &m).unwrap();
    assert!(out.passed, "{out:?}");
    assert_status(&out, MetadataKind::Mode, MetadataStatus::Lost);
    assert!(
        detail(&out, MetadataKind::Mode).starts_with("shared.txt: mode 0664 -> 0644"),
        "{out:?}"
    );
    assert_status(&out, MetadataKind::Mtime, MetadataStatus::Lost);
    assert!(
        detail(&out, MetadataKind::Mtime).starts_with("a dir with spaces/café ünïcødé.txt: mtime "),
        "{out:?}"
    );
    assert_status(&out, MetadataKind::DirMtime, MetadataStatus::Lost);
    assert!(
        detail(&out, MetadataKind::DirMtime).starts_with("a dir with spaces: mtime "),
        "{out:?}"
    );
    assert_status(&out, MetadataKind::Hardlink, MetadataStatus::Lost);
    assert!(
        detail(&out, MetadataKind::Hardlink)
            .starts_with("links/hardlink-a.txt and links/hardlink-b.txt: two inodes"),
        "{out:?}"
    );
    if takes_user_xattrs(tmp.path()) {
        assert_status(&out, MetadataKind::Xattr, MetadataStatus::Lost);
        assert!(
            detail(&out, MetadataKind::Xattr)
                .starts_with("tagged.txt: xattr user.labrun.fidelity missing"),
            "{out:?}"
        );
    } else {
        assert_status(&out, MetadataKind::Xattr, MetadataStatus::NotTested);
    }
    // What `cp -r` does keep.
    for kind in [
        MetadataKind::Symlink,
        MetadataKind::EmptyDir,
        MetadataKind::UnicodeName,
    ] {
        assert_status(&out, kind, MetadataStatus::Preserved);
    }
}

#[test]
fn a_chmod_after_restore_is_a_lost_mode_not_a_failed_restore() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, m) = fixture(tmp.path());
    let copy = tmp.path().join("copy");
    cp("-a", &dir, &copy);
    fs::set_permissions(copy.join("plain.txt"), Permissions::from_mode(0o600)).unwrap();
    let out = verify_fidelity(&copy, &m).unwrap();
    assert!(out.passed, "{out:?}");
    assert_status(&out, MetadataKind::Mode, MetadataStatus::Lost);
    let mode = detail(&out, MetadataKind::Mode);
    assert!(
        mode.starts_with("plain.txt: mode 0644 -> 0600 (1 of "),
        "{mode}"
    );
    assert_status(&out, MetadataKind::Mtime, MetadataStatus::Preserved);
}

#[test]
fn a_changed_byte_still_fails_the_content_check() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, m) = fixture(tmp.path());
    let copy = tmp.path().join("copy");
    cp("-a", &dir, &copy);
    let path = copy.join("plain.txt");
    let mut bytes = fs::read(&path).unwrap();
    bytes[10] ^= 1;
    fs::write(&path, &bytes).unwrap();
    let out = verify_fidelity(&copy, &m).unwrap();
    assert!(!out.passed);
    assert_eq!((out.changed, out.missing, out.extra), (1, 0, 0));
    assert_eq!(out.first_differences, ["changed: plain.txt"]);
    // Writing it moved its mtime, and the check says so.
    assert!(detail(&out, MetadataKind::Mtime).starts_with("plain.txt: mtime "));
}

#[test]
fn a_symlink_restored_as_a_file_fails_content_and_is_a_lost_symlink() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, m) = fixture(tmp.path());
    let copy = tmp.path().join("copy");
    cp("-a", &dir, &copy);
    let link = copy.join("links/to-file");
    fs::remove_file(&link).unwrap();
    fs::copy(copy.join("plain.txt"), &link).unwrap();
    let out = verify_fidelity(&copy, &m).unwrap();
    assert!(!out.passed);
    assert_eq!(out.first_differences, ["changed: links/to-file"]);
    assert_status(&out, MetadataKind::Symlink, MetadataStatus::Lost);
    assert!(
        detail(&out, MetadataKind::Symlink)
            .starts_with("links/to-file: a symlink came back as a file"),
        "{out:?}"
    );
}

#[test]
fn a_filled_hole_is_a_lost_sparse_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, m) = fixture(tmp.path());
    let copy = tmp.path().join("copy");
    cp("-a --sparse=never", &dir, &copy);
    let out = verify_fidelity(&copy, &m).unwrap();
    assert!(out.passed, "{out:?}");
    assert_status(&out, MetadataKind::Sparse, MetadataStatus::Lost);
    assert!(detail(&out, MetadataKind::Sparse).starts_with("sparse.bin: holes filled"));
}
