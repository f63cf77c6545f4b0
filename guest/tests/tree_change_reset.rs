//! The change of any tree (`labrun_dataset::tree_change`) is undone by the
//! runner's reset between tool cycles (`reset_tree`, fed the change's
//! `touched()`): every byte, mode, mtime, link and folder as it was, and the
//! next cycle's change gives the same tree again.
//!
//! The agent is a binary crate with no library to import `reset_tree` from,
//! so this test compiles the runner's own `reset.rs` in (its unit tests run
//! here too).

#[allow(dead_code)]
#[path = "../src/run/reset.rs"]
mod reset;

use labrun_dataset::{TreeChange, apply_tree_change, scan, scan_metadata};
use labrun_evidence::ChangeSpec;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

fn write(root: &Path, rel: &str, seed: u64, len: usize) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut x = seed | 1;
    let content: Vec<u8> = (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    fs::write(&path, content).unwrap();
}

/// Small files in nested folders, two large files, odd names, an empty
/// file and folder, links of both kinds, a read-only file.
fn tree(root: &Path) {
    for i in 0..120u64 {
        let dir = ["a", "a/b", "c d", "ü/文件"][(i % 4) as usize];
        write(
            root,
            &format!("{dir}/f{i}"),
            i + 1,
            1 + (i as usize * 331) % 20_000,
        );
    }
    write(root, "big/one.bin", 900, (1 << 20) + 12_345);
    write(root, "big/two.bin", 901, 3 << 19);
    write(root, "odd/new\nline", 902, 300);
    write(root, "odd/with space", 903, 300);
    write(root, "empty", 0, 0);
    fs::create_dir_all(root.join("empty-dir")).unwrap();
    symlink("a/f0", root.join("link")).unwrap();
    write(root, "hard/x", 904, 500);
    fs::hard_link(root.join("hard/x"), root.join("hard/y")).unwrap();
    write(root, "readonly", 905, 700);
    fs::set_permissions(root.join("readonly"), fs::Permissions::from_mode(0o444)).unwrap();
}

fn cp_a(from: &Path, to: &Path) {
    let ok = std::process::Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

#[test]
fn reset_tree_undoes_a_tree_change_and_the_next_cycle_changes_it_alike() {
    let dir = tempfile::tempdir().unwrap();
    let (pristine, source) = (dir.path().join("pristine"), dir.path().join("source"));
    tree(&pristine);
    cp_a(&pristine, &source);
    let before = scan_metadata(&pristine).unwrap();
    assert_eq!(scan_metadata(&source).unwrap(), before);

    for (fraction, seed) in [(0.05, 2), (0.3, 7), (1.0, 3)] {
        let spec = ChangeSpec { fraction, seed };
        let change = TreeChange::plan(&before, &spec);
        let sum = change.summary();
        assert!(sum.files_removed > 0 && sum.files_renamed > 0 && sum.files_added > 0);
        assert!(sum.files_rewritten > 0, "{sum:?}");

        let first = apply_tree_change(&source, &change, &spec, &mut |_, _| {}).unwrap();
        let first_metadata = scan_metadata(&source).unwrap();
        assert_ne!(first, scan(&pristine).unwrap());

        let stats = reset::reset_tree(&pristine, &source, &change.touched()).unwrap();
        assert_eq!(
            scan_metadata(&source).unwrap(),
            before,
            "fraction {fraction}: {stats:?}"
        );
        // The next tool cycle: the same change, the same tree.
        let second = apply_tree_change(&source, &change, &spec, &mut |_, _| {}).unwrap();
        assert_eq!(second, first, "fraction {fraction}");
        assert_eq!(scan_metadata(&source).unwrap(), first_metadata);
        reset::reset_tree(&pristine, &source, &change.touched()).unwrap();
        assert_eq!(
            scan_metadata(&source).unwrap(),
            before,
            "fraction {fraction}"
        );
    }
}
