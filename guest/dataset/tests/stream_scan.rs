//! The streamed scan and verify (issue 31: memory that does not grow with
//! the number of files) against the in-memory ones they replace: the same
//! entries in `Manifest::sort` order, the same manifest bytes and digest,
//! and the same verdict, difference by difference.

use labrun_dataset::{compare, scan, scan_to_file, verify, verify_against_file, write_manifest};
use labrun_evidence::Manifest;
use proptest::prelude::*;
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fs;
use std::os::unix::ffi::OsStringExt;
use std::path::Path;

/// The in-memory scan: walks everything, hashes, then sorts the manifest
/// (`scan_with_progress` still takes that road).
fn in_memory_scan(dir: &Path) -> Manifest {
    labrun_dataset::scan_with_progress(dir, &mut |_, _| {}).unwrap()
}

/// Name bytes that sort around `/` (0x2f): `-` 0x2d, `.` 0x2e, `0` 0x30,
/// and a byte that is not UTF-8 on its own (read as U+FFFD).
fn name() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop::sample::select(vec![b'a', b'b', b'-', b'.', b'0', b'_', b' ', 0xff]),
        1..4,
    )
    .prop_filter("not . or ..", |n| n != b"." && n != b"..")
}

/// A tree as a set of relative paths, some of them folders.
fn tree() -> impl Strategy<Value = Vec<(Vec<Vec<u8>>, bool)>> {
    prop::collection::vec((prop::collection::vec(name(), 1..4), any::<bool>()), 1..40)
}

/// Builds the tree; a path whose parent is a file is left out. Names that
/// read alike once made UTF-8 (two different non-UTF-8 bytes) are kept
/// apart: their order is the listing's in either scan.
fn build(root: &Path, paths: &[(Vec<Vec<u8>>, bool)]) {
    let mut seen_lossy = BTreeSet::new();
    for (parts, is_dir) in paths {
        let lossy = parts
            .iter()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect::<Vec<_>>()
            .join("/");
        let mut p = root.to_path_buf();
        for part in parts {
            p.push(OsString::from_vec(part.clone()));
        }
        if !seen_lossy.insert(lossy) {
            continue;
        }
        let Some(parent) = p.parent() else { continue };
        if fs::create_dir_all(parent).is_err() || p.exists() {
            continue;
        }
        if *is_dir {
            fs::create_dir(&p).unwrap();
        } else {
            fs::write(&p, p.as_os_str().len().to_string()).unwrap();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn the_streamed_scan_comes_in_manifest_sort_order(paths in tree()) {
        let tmp = tempfile::tempdir().unwrap();
        build(tmp.path(), &paths);
        let streamed = scan(tmp.path()).unwrap();
        let mut sorted = streamed.clone();
        sorted.sort();
        prop_assert_eq!(&streamed, &sorted);
        prop_assert_eq!(&streamed, &in_memory_scan(tmp.path()));
    }
}

#[test]
fn the_order_puts_a_folders_children_after_its_dotted_siblings() {
    let tmp = tempfile::tempdir().unwrap();
    for d in ["a", "a/b", "a-b"] {
        fs::create_dir(tmp.path().join(d)).unwrap();
    }
    for f in ["a.b", "a/b/c", "a/b.c", "a-b/x", "a0", "b"] {
        fs::write(tmp.path().join(f), f).unwrap();
    }
    let paths: Vec<String> = scan(tmp.path())
        .unwrap()
        .entries
        .into_iter()
        .map(|e| e.path)
        .collect();
    assert_eq!(
        paths,
        [
            "a", "a-b", "a-b/x", "a.b", "a/b", "a/b.c", "a/b/c", "a0", "b"
        ]
    );
}

#[test]
fn the_streamed_manifest_file_is_the_in_memory_ones_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    build(
        &tree,
        &(0..300u32)
            .map(|i| {
                let parts = vec![
                    format!("d{}", i % 7).into_bytes(),
                    format!("f.{i}").into_bytes(),
                ];
                (parts, i % 50 == 0)
            })
            .collect::<Vec<_>>(),
    );
    let streamed = tmp.path().join("streamed.jsonl");
    let written = scan_to_file(&tree, &streamed).unwrap();
    let held = tmp.path().join("held.jsonl");
    let manifest = in_memory_scan(&tree);
    write_manifest(&held, &manifest).unwrap();
    let bytes = fs::read(&held).unwrap();
    assert_eq!(fs::read(&streamed).unwrap(), bytes);
    assert_eq!(written.sha256, labrun_evidence::digest::sha256_hex(&bytes));
    assert_eq!(written.entries, manifest.entries.len());
    assert_eq!(written.file_bytes, manifest.total_file_bytes());
    let leftovers: Vec<_> = fs::read_dir(tmp.path()).unwrap().collect();
    assert_eq!(leftovers.len(), 3, "only the tree and the two manifests");
}

#[test]
fn a_streamed_verify_reports_missing_extra_and_changed_files_as_before() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    fs::create_dir(&tree).unwrap();
    for i in 0..40 {
        fs::write(tree.join(format!("f{i:02}")), format!("{i}")).unwrap();
    }
    fs::create_dir(tree.join("sub")).unwrap();
    fs::write(tree.join("sub/x"), "x").unwrap();
    let expected = in_memory_scan(&tree);
    let manifest = tmp.path().join("m.jsonl");
    write_manifest(&manifest, &expected).unwrap();

    // Missing, extra, and changed (content, and a file become a folder),
    // more of them than are named.
    fs::remove_file(tree.join("f00")).unwrap();
    fs::remove_file(tree.join("sub/x")).unwrap();
    fs::write(tree.join("f01"), "other").unwrap();
    fs::write(tree.join("zz"), "new").unwrap();
    fs::write(tree.join("sub.txt"), "new").unwrap();
    fs::remove_file(tree.join("f39")).unwrap();
    fs::create_dir(tree.join("f39")).unwrap();
    for i in 10..35 {
        fs::write(tree.join(format!("f{i:02}")), "changed").unwrap();
    }

    let before = compare(&expected, &in_memory_scan(&tree));
    let from_file = verify_against_file(&tree, &manifest).unwrap();
    let from_memory = verify(&tree, &expected).unwrap();
    // The scan held, the expected side read from its file (a series' check
    // of a moved tree).
    let found = in_memory_scan(&tree);
    let held_scan = labrun_dataset::compare_against_file(&manifest, &found).unwrap();
    assert_eq!(from_file, before);
    assert_eq!(from_memory, before);
    assert_eq!(held_scan, before);
    assert!(!before.passed);
    assert_eq!((before.missing, before.extra), (2, 2));
    assert_eq!(before.changed, 1 + 25 + 1);
    assert_eq!(
        before.first_differences.len(),
        labrun_dataset::NAMED_DIFFERENCES
    );
    assert_eq!(before.first_differences[0], "missing: f00");
    assert_eq!(before.first_differences[1], "changed: f01");

    // And a tree that matches passes, from the file as from memory.
    let same = tmp.path().join("same");
    fs::create_dir(&same).unwrap();
    fs::write(same.join("a"), "a").unwrap();
    let m = tmp.path().join("same.jsonl");
    write_manifest(&m, &in_memory_scan(&same)).unwrap();
    assert!(verify_against_file(&same, &m).unwrap().passed);
}

#[test]
fn an_unsorted_or_truncated_manifest_file_is_handled_as_before() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    fs::create_dir(&tree).unwrap();
    for f in ["a", "b", "c"] {
        fs::write(tree.join(f), f).unwrap();
    }
    let mut expected = in_memory_scan(&tree);
    expected.entries.reverse();
    let manifest = tmp.path().join("m.jsonl");
    write_manifest(&manifest, &expected).unwrap();
    // Not in order: read whole and compared as compare() does.
    assert!(verify_against_file(&tree, &manifest).unwrap().passed);

    let text = fs::read_to_string(&manifest).unwrap();
    let cut: String = text.lines().take(2).map(|l| format!("{l}\n")).collect();
    fs::write(&manifest, cut).unwrap();
    let err = verify_against_file(&tree, &manifest).unwrap_err();
    assert!(err.to_string().contains("truncated"), "{err}");
}

#[test]
fn streamed_gen_and_change_write_the_in_memory_manifests_byte_for_byte() {
    use labrun_dataset::{DatasetParams, DatasetProfile};
    let tmp = tempfile::tempdir().unwrap();
    for profile in [DatasetProfile::TinyFiles, DatasetProfile::Published] {
        let params = DatasetParams {
            seed: 7,
            scale: if profile == DatasetProfile::TinyFiles {
                0.003
            } else {
                0.0005
            },
            profile,
        };
        let (held_tree, streamed_tree) = (
            tmp.path().join(format!("{profile}-held")),
            tmp.path().join(format!("{profile}-streamed")),
        );
        let held = labrun_dataset::generate(&held_tree, &params, &mut |_, _| {}).unwrap();
        let held_file = tmp.path().join(format!("{profile}-held.jsonl"));
        write_manifest(&held_file, &held).unwrap();
        let streamed_file = tmp.path().join(format!("{profile}-streamed.jsonl"));
        let written = labrun_dataset::generate_to_file(
            &streamed_tree,
            &params,
            &streamed_file,
            &mut |_, _| {},
        )
        .unwrap();
        assert_eq!(
            fs::read(&streamed_file).unwrap(),
            fs::read(&held_file).unwrap(),
            "{profile}"
        );
        assert_eq!(written.entries, held.entries.len());
        assert_eq!(scan(&streamed_tree).unwrap(), held, "{profile}: the tree");

        // The change: from the base in memory, and from its file.
        let changed =
            labrun_dataset::apply_change_from(&held_tree, &params, 8, &held, &mut |_, _| {})
                .unwrap();
        let out = tmp.path().join(format!("{profile}-changed.jsonl"));
        labrun_dataset::apply_change_from_file(
            &streamed_tree,
            &params,
            8,
            &streamed_file,
            &out,
            &mut |_, _| {},
        )
        .unwrap();
        let mut expected = Vec::new();
        changed.write_to(&mut expected).unwrap();
        assert_eq!(fs::read(&out).unwrap(), expected, "{profile}: the change");
        assert!(verify_against_file(&streamed_tree, &out).unwrap().passed);
        // In place: the new manifest replaces the base it was read from.
        write_manifest(&held_file, &changed).unwrap();
        labrun_dataset::apply_change_from_file(
            &held_tree,
            &params,
            9,
            &held_file,
            &held_file,
            &mut |_, _| {},
        )
        .unwrap();
        assert!(verify_against_file(&held_tree, &held_file).unwrap().passed);
    }
}

#[test]
fn a_file_profiles_streamed_change_writes_the_in_memory_manifest_byte_for_byte() {
    use labrun_dataset::{DatasetParams, DatasetProfile};
    let tmp = tempfile::tempdir().unwrap();
    for profile in [
        DatasetProfile::TinyFiles,
        DatasetProfile::Media,
        DatasetProfile::Published,
    ] {
        let params = DatasetParams {
            seed: 11,
            scale: match profile {
                DatasetProfile::TinyFiles => 0.003,
                DatasetProfile::Published => 0.002,
                _ => 0.0005,
            },
            profile,
        };
        let dir = |name: &str| tmp.path().join(format!("{profile}-{name}"));
        let gen_to = |tree: &Path| labrun_dataset::generate(tree, &params, &mut |_, _| {}).unwrap();
        let base = gen_to(&dir("held"));
        gen_to(&dir("rescanned"));
        gen_to(&dir("merged"));
        let base_file = dir("base.jsonl");
        write_manifest(&base_file, &base).unwrap();

        let held = labrun_dataset::apply_change(&dir("held"), &params, 4, &mut |_, _| {}).unwrap();
        let mut expected = Vec::new();
        held.write_to(&mut expected).unwrap();
        // Without a base: the change streamed, then the tree rescanned into
        // the file.
        let rescanned = dir("rescanned.jsonl");
        let written = labrun_dataset::apply_change_to_file(
            &dir("rescanned"),
            &params,
            4,
            &rescanned,
            &mut |_, _| {},
        )
        .unwrap();
        assert_eq!(fs::read(&rescanned).unwrap(), expected, "{profile}");
        assert_eq!(
            written.sha256,
            labrun_evidence::digest::sha256_hex(&expected),
            "{profile}"
        );
        // With one: merged as both are read.
        let merged = dir("merged.jsonl");
        labrun_dataset::apply_change_from_file(
            &dir("merged"),
            &params,
            4,
            &base_file,
            &merged,
            &mut |_, _| {},
        )
        .unwrap();
        assert_eq!(fs::read(&merged).unwrap(), expected, "{profile}");
    }
}
