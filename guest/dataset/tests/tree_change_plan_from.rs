//! The change of any tree planned in passes over its manifest file
//! (`TreeChange::plan_from`) is the change planned from the manifest in
//! memory, and follows the rules the module docs state, on manifests the
//! tests make up (no tree on disk: the plan reads only the manifest).

use labrun_dataset::tree_change::{
    Entries, EntrySource, ManifestFile, TreeChange, WHOLE_FILE_LIMIT,
};
use labrun_evidence::{ChangeSpec, EntryKind, Manifest, ManifestEntry};
use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::Path;

fn file(path: &str, size: u64) -> ManifestEntry {
    ManifestEntry {
        path: path.to_string(),
        kind: EntryKind::File,
        size,
        mode: 0o644,
        sha256: format!("{size:064x}"),
        ..Default::default()
    }
}

fn dir(path: &str) -> ManifestEntry {
    ManifestEntry {
        path: path.to_string(),
        kind: EntryKind::Dir,
        mode: 0o755,
        ..Default::default()
    }
}

/// `files` files over a few folders (sizes from empty to 2 MiB), odd names,
/// a symlink, hard-link groups, and names the change's fallbacks use.
fn tree(files: u64) -> Manifest {
    let mut entries = Vec::new();
    let folders = ["a", "a/b", "a/b/c", "d", "e with space", "ünï"];
    entries.extend(folders.iter().map(|d| dir(d)));
    for i in 0..files {
        let folder = folders[(i % folders.len() as u64) as usize];
        let size = match i % 50 {
            0 => 0,
            1 => WHOLE_FILE_LIMIT + i * 4099,
            _ => 1 + i * 7919 % 200_000,
        };
        // Names repeat across folders, so a renamed file often meets its
        // own name in the folder it moves to.
        entries.push(file(&format!("{folder}/f{}", i % 97), size));
    }
    entries.push(file("odd\nline", 300));
    entries.push(file("labrun-added-0", 10));
    entries.push(file("labrun-added-1", 10));
    entries.push(dir("labrun-added-2"));
    entries.push(ManifestEntry {
        path: "link".into(),
        kind: EntryKind::Symlink,
        ..Default::default()
    });
    for g in 0..5u32 {
        for name in ["x", "y"] {
            entries.push(ManifestEntry {
                link_group: Some(g),
                ..file(&format!("hard/{g}-{name}"), 4000)
            });
        }
    }
    entries.push(dir("hard"));
    let mut m = Manifest { entries };
    m.sort();
    m.entries.dedup_by(|a, b| a.path == b.path);
    m
}

fn write(dir: &Path, name: &str, m: &Manifest) -> ManifestFile {
    let path = dir.join(name);
    let mut bytes = Vec::new();
    m.write_to(&mut bytes).unwrap();
    std::fs::write(&path, bytes).unwrap();
    ManifestFile::new(path)
}

fn spec(fraction: f64, seed: u64) -> ChangeSpec {
    ChangeSpec { fraction, seed }
}

/// A source that counts its reads.
struct Counted<'a> {
    inner: &'a dyn EntrySource,
    reads: Cell<u32>,
}

impl EntrySource for Counted<'_> {
    fn entries(&self) -> io::Result<Entries<'_>> {
        self.reads.set(self.reads.get() + 1);
        self.inner.entries()
    }
}

#[test]
fn a_manifest_and_its_file_plan_the_same_change() {
    let dir = tempfile::tempdir().unwrap();
    for files in [0, 1, 2, 3, 10, 400, 3000] {
        let m = tree(files);
        let on_disk = write(dir.path(), &format!("m{files}.jsonl"), &m);
        // The in-memory manifest in another order: the plan sorts.
        let mut shuffled = m.clone();
        shuffled.entries.reverse();
        for s in [spec(0.05, 1), spec(0.3, 2), spec(1.0, 3), spec(0.0, 4)] {
            let from_memory = TreeChange::plan(&m, &s);
            let counted = Counted {
                inner: &on_disk,
                reads: Cell::new(0),
            };
            let from_file = TreeChange::plan_from(&counted, &s).unwrap();
            assert_eq!(from_memory, from_file, "{files} files, {s:?}");
            assert_eq!(from_memory, TreeChange::plan(&shuffled, &s));
            // A few reads, whatever the tree's size.
            assert!(counted.reads.get() <= 5, "{} reads", counted.reads.get());
        }
    }
}

#[test]
fn the_counts_follow_the_fraction() {
    let m = tree(3000);
    let by_path: BTreeMap<&str, &ManifestEntry> =
        m.entries.iter().map(|e| (e.path.as_str(), e)).collect();
    let eligible: Vec<&ManifestEntry> = m
        .entries
        .iter()
        .filter(|e| e.kind == EntryKind::File && e.link_group.is_none())
        .collect();
    let n = eligible.len() as u64;
    let round = |x: f64| x.round() as u64;
    for fraction in [0.01, 0.05, 0.2, 0.5, 1.0] {
        let change = TreeChange::plan(&m, &spec(fraction, 9));
        let structural = round(n as f64 * fraction / 5.0).clamp(1, (n - 1) / 2);
        assert_eq!(change.eligible_files, n);
        assert_eq!(change.removed.len() as u64, structural, "{fraction}");
        assert_eq!(change.renamed.len() as u64, structural, "{fraction}");
        let added = round(n as f64 * fraction / 5.0).max(1);
        assert_eq!(change.added.len() as u64, added, "{fraction}");

        let gone: BTreeSet<&str> = change
            .removed
            .iter()
            .chain(change.renamed.iter().map(|(from, _)| from))
            .map(String::as_str)
            .collect();
        assert_eq!(
            gone.len() as u64,
            2 * structural,
            "removed and renamed apart"
        );
        let rest = || eligible.iter().filter(|e| !gone.contains(e.path.as_str()));
        let small_rest = rest()
            .filter(|e| (1..WHOLE_FILE_LIMIT).contains(&e.size))
            .count();
        let large_rest = rest().filter(|e| e.size >= WHOLE_FILE_LIMIT).count();
        assert_eq!(
            change.rewritten.len() as u64,
            round(small_rest as f64 * fraction)
        );
        assert_eq!(change.regions.len(), large_rest, "every large file left");
        for path in &change.rewritten {
            assert!(!gone.contains(path.as_str()), "{path}");
            assert!((1..WHOLE_FILE_LIMIT).contains(&by_path[path.as_str()].size));
        }
        for (path, size) in change.removed.iter().zip(&change.removed_sizes) {
            assert_eq!(by_path[path.as_str()].size, *size);
        }
        // New paths: none the tree has, none twice.
        let new: BTreeSet<&str> = change
            .added
            .iter()
            .map(|(p, _)| p.as_str())
            .chain(change.renamed.iter().map(|(_, to)| to.as_str()))
            .collect();
        assert_eq!(new.len() as u64, added + structural);
        assert!(new.iter().all(|p| !by_path.contains_key(p)), "{new:?}");
        for (_, size) in &change.added {
            assert!(*size <= WHOLE_FILE_LIMIT);
            assert!(
                eligible
                    .iter()
                    .any(|e| e.size.min(WHOLE_FILE_LIMIT) == *size)
            );
        }
    }
}

#[test]
fn a_larger_fractions_removed_files_hold_a_smaller_ones() {
    let m = tree(2000);
    let removed = |fraction| -> BTreeSet<String> {
        TreeChange::plan(&m, &spec(fraction, 5))
            .removed
            .into_iter()
            .collect()
    };
    let mut smaller = removed(0.01);
    for fraction in [0.05, 0.1, 0.3, 0.7, 1.0] {
        let larger = removed(fraction);
        assert!(smaller.is_subset(&larger), "{fraction}");
        assert!(larger.len() > smaller.len(), "{fraction}");
        smaller = larger;
    }
}

#[test]
fn a_hard_link_or_a_symlink_is_never_chosen() {
    let m = tree(40);
    let links: BTreeSet<&str> = m
        .entries
        .iter()
        .filter(|e| e.link_group.is_some() || e.kind != EntryKind::File)
        .map(|e| e.path.as_str())
        .collect();
    assert!(links.len() > 10);
    for seed in 0..20 {
        let change = TreeChange::plan(&m, &spec(1.0, seed));
        let chosen = change
            .rewritten
            .iter()
            .chain(&change.removed)
            .chain(change.renamed.iter().map(|(from, _)| from))
            .chain(change.regions.iter().map(|r| &r.path));
        for path in chosen {
            assert!(!links.contains(path.as_str()), "seed {seed}: {path}");
        }
    }
    // Only hard links: an empty change, from a file too.
    let only_links = Manifest {
        entries: m
            .entries
            .iter()
            .filter(|e| e.path.starts_with("hard"))
            .cloned()
            .collect(),
    };
    let dir = tempfile::tempdir().unwrap();
    let on_disk = write(dir.path(), "links.jsonl", &only_links);
    let change = TreeChange::plan_from(&on_disk, &spec(0.5, 1)).unwrap();
    assert!(
        change.is_empty() && change.eligible_files == 0,
        "{change:?}"
    );
}

#[test]
fn a_bad_manifest_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = tree(30);
    m.entries.reverse();
    let unsorted = write(dir.path(), "unsorted.jsonl", &m);
    let err = TreeChange::plan_from(&unsorted, &spec(0.1, 1)).unwrap_err();
    assert!(err.to_string().contains("unsorted.jsonl"), "{err}");
    assert!(err.to_string().contains("not sorted by path"), "{err}");

    let missing = ManifestFile::new(dir.path().join("missing.jsonl"));
    let err = TreeChange::plan_from(&missing, &spec(0.1, 1)).unwrap_err();
    assert!(err.to_string().contains("missing.jsonl"), "{err}");

    let truncated = dir.path().join("truncated.jsonl");
    let mut bytes = Vec::new();
    tree(30).write_to(&mut bytes).unwrap();
    bytes.truncate(bytes.len() / 2);
    let end = bytes.iter().rposition(|&b| b == b'\n').unwrap_or(0);
    std::fs::write(&truncated, &bytes[..=end]).unwrap();
    let err = TreeChange::plan_from(&ManifestFile::new(&truncated), &spec(0.1, 1)).unwrap_err();
    assert!(err.to_string().contains("truncated"), "{err}");
}
