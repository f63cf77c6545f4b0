//! The streamed sample against the in-memory one: the same manifest file,
//! byte for byte, for several fractions and seeds, the keep-at-least-one
//! case, hard-link groups, and folders whose entries do not follow them
//! (`a`, `a-b`, `a/x`).

use labrun_dataset::{
    copy_sample, copy_sample_from_file, sample, sample_to_file, scan, scan_metadata, write_manifest,
};
use labrun_evidence::Manifest;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

/// Folders, names that sort around `/`, empty folders, symlinks and
/// hard-link groups (one spread over folders).
fn tree(root: &Path) {
    for i in 0..200 {
        let dir = ["a", "a-b", "a.b", "a/deep/er", "b", "b/c d"][i % 6];
        write(root, &format!("{dir}/f{i}"), &format!("file {i}"));
    }
    write(root, "a0", "a0");
    fs::create_dir_all(root.join("empty/inner")).unwrap();
    fs::create_dir_all(root.join("a/empty")).unwrap();
    symlink("a/f0", root.join("a-link")).unwrap();
    for i in 0..10 {
        write(root, &format!("links/f{i}"), &format!("linked {i}"));
        fs::hard_link(
            root.join(format!("links/f{i}")),
            root.join(format!("a.b/g{i}")),
        )
        .unwrap();
    }
}

fn assert_same(manifest: &Manifest, file: &Path, fraction: f64, seed: u64, scratch: &Path) {
    let held = scratch.join("held.jsonl");
    let expected = sample(manifest, fraction, seed);
    write_manifest(&held, &expected).unwrap();
    let streamed = scratch.join("streamed.jsonl");
    let written = sample_to_file(file, fraction, seed, &streamed).unwrap();
    let bytes = fs::read(&held).unwrap();
    assert!(
        fs::read(&streamed).unwrap() == bytes,
        "fraction {fraction}, seed {seed}"
    );
    assert_eq!(written.sha256, labrun_evidence::digest::sha256_hex(&bytes));
    assert_eq!(written.entries, expected.entries.len());
}

#[test]
fn the_streamed_sample_is_the_in_memory_one_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("tree");
    tree(&root);
    for manifest in [scan_metadata(&root).unwrap(), scan(&root).unwrap()] {
        let file = tmp.path().join("tree.jsonl");
        write_manifest(&file, &manifest).unwrap();
        let linked = manifest.entries.iter().any(|e| e.link_group.is_some());
        for seed in [1, 2, 3, 8, 99] {
            for fraction in [0.01, 0.05, 0.1, 0.3, 0.5, 0.9, 1.0, 2.0] {
                assert_same(&manifest, &file, fraction, seed, tmp.path());
            }
            // Keep at least one: a file, or a whole link group.
            for fraction in [0.0, -1.0, f64::NAN, 1e-15] {
                assert_same(&manifest, &file, fraction, seed, tmp.path());
            }
        }
        if linked {
            // Some seed's lowest score is a link group's: it is kept whole.
            let whole_group = (0..200).any(|seed| {
                let s = sample(&manifest, 0.0, seed);
                s.entries.iter().filter(|e| e.link_group.is_some()).count() == 2
            });
            assert!(whole_group, "no seed keeps a link group alone");
        }
    }
}

#[test]
fn an_empty_and_an_unsorted_manifest_sample_alike() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("tree");
    tree(&root);
    let file = tmp.path().join("tree.jsonl");
    let empty = Manifest::default();
    write_manifest(&file, &empty).unwrap();
    assert_same(&empty, &file, 0.5, 1, tmp.path());

    // Read whole when not in manifest order (written elsewhere).
    let mut unsorted = scan_metadata(&root).unwrap();
    unsorted.entries.reverse();
    write_manifest(&file, &unsorted).unwrap();
    for fraction in [0.0, 0.2, 1.0] {
        assert_same(&unsorted, &file, fraction, 5, tmp.path());
    }
}

#[test]
fn a_sample_copies_from_its_file_and_a_changed_tree_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("tree");
    tree(&root);
    // A read-only folder: its mode is set once what it holds is copied.
    write(&root, "locked/inner/f", "locked");
    fs::set_permissions(
        root.join("locked"),
        std::os::unix::fs::PermissionsExt::from_mode(0o555),
    )
    .unwrap();
    for (n, manifest) in [scan_metadata(&root).unwrap(), scan(&root).unwrap()]
        .into_iter()
        .enumerate()
    {
        let file = tmp.path().join("tree.jsonl");
        write_manifest(&file, &manifest).unwrap();
        for fraction in [0.3, 1.0] {
            let subset_file = tmp.path().join("subset.jsonl");
            sample_to_file(&file, fraction, 4, &subset_file).unwrap();
            let subset = sample(&manifest, fraction, 4);

            let held_to = tmp.path().join(format!("held-{n}-{fraction}"));
            let held = copy_sample(&root, &held_to, &subset, &mut |_, _| {}).unwrap();
            let held_file = tmp.path().join("held-copy.jsonl");
            write_manifest(&held_file, &held).unwrap();

            let to = tmp.path().join(format!("streamed-{n}-{fraction}"));
            let copy_file = tmp.path().join("copy.jsonl");
            let mut last = (0, 0);
            let written =
                copy_sample_from_file(&root, &to, &subset_file, &copy_file, &mut |d, t| {
                    last = (d, t)
                })
                .unwrap();
            assert_eq!(fs::read(&copy_file).unwrap(), fs::read(&held_file).unwrap());
            assert_eq!(written.entries, held.entries.len());
            assert_eq!(last, (subset.total_file_bytes(), subset.total_file_bytes()));
            // The copy is the sample, metadata too when it records any.
            let rescanned = if n == 0 {
                scan_metadata(&to)
            } else {
                scan(&to)
            };
            assert_eq!(rescanned.unwrap(), subset, "fraction {fraction}");
        }
    }

    // Not into a folder with something in it; not from a tree that changed.
    let file = tmp.path().join("tree.jsonl");
    write_manifest(&file, &scan_metadata(&root).unwrap()).unwrap();
    let subset_file = tmp.path().join("subset.jsonl");
    sample_to_file(&file, 1.0, 4, &subset_file).unwrap();
    let copy_file = tmp.path().join("copy.jsonl");
    let err = copy_sample_from_file(
        &root,
        &tmp.path().join("streamed-0-1"),
        &subset_file,
        &copy_file,
        &mut |_, _| {},
    )
    .unwrap_err();
    assert!(err.to_string().contains("not empty"), "{err}");
    fs::write(root.join("b/f4"), "different").unwrap();
    fs::remove_file(&copy_file).unwrap();
    let err = copy_sample_from_file(
        &root,
        &tmp.path().join("again"),
        &subset_file,
        &copy_file,
        &mut |_, _| {},
    )
    .unwrap_err();
    assert!(err.to_string().contains("differs"), "{err}");
    assert!(err.to_string().contains("b/f4"), "{err}");
    assert!(!copy_file.exists(), "no manifest of a copy that is wrong");
}
