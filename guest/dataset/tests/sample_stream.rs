//! The streamed sample against the in-memory one: the same manifest file,
//! byte for byte, for several fractions and seeds, the keep-at-least-one
//! case, hard-link groups, and folders whose entries do not follow them
//! (`a`, `a-b`, `a/x`).

use labrun_dataset::{sample, sample_to_file, scan, scan_metadata, write_manifest};
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
