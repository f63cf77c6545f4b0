//! The seeded change of any tree and the seeded sample, on trees the tests
//! write: odd names, folders, symlinks, hard links, small and large files.

use labrun_dataset::tree_change::{ADDED_MODE, WHOLE_FILE_LIMIT};
use labrun_dataset::{
    TreeChange, apply_tree_change, apply_tree_change_each, apply_tree_change_from, compare,
    copy_sample, sample, scan, scan_metadata,
};
use labrun_evidence::{ChangeSpec, EntryKind, Manifest};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};

/// Bytes that do not compress: one seeded pool (an LCG, made once: tests
/// build unoptimized), each file a slice of it at its own offset.
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    static POOL: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    const POOL_BYTES: usize = 8 << 20;
    let pool = POOL.get_or_init(|| {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        (0..POOL_BYTES / 8)
            .flat_map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x ^ (x >> 29)).to_le_bytes()
            })
            .collect()
    });
    assert!(len <= POOL_BYTES / 2);
    let start = (seed as usize).wrapping_mul(7919) % (POOL_BYTES - len);
    pool[start..start + len].to_vec()
}

fn write(root: &Path, rel: &str, seed: u64, len: usize) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, bytes(seed, len)).unwrap();
}

/// A tree of `small` files of 1..24 KiB in a few folders, `large` files of
/// 1-2 MiB, odd names, an empty file and folder, a symlink and a hard-link
/// pair.
fn mixed_tree(root: &Path, small: u64, large: u64) {
    fs::create_dir_all(root).unwrap();
    for i in 0..small {
        let dir = ["docs", "src/a", "src/b", "photos/2024"][(i % 4) as usize];
        let len = 1 + (i * 7919 % 24) as usize * 1024;
        write(root, &format!("{dir}/file-{i}.dat"), i, len);
    }
    for i in 0..large {
        let len = (1 << 20) + (i as usize * 777_777) % (1 << 20);
        write(root, &format!("big/large-{i}.bin"), 1000 + i, len);
    }
    write(root, "odd/with space.txt", 5001, 3000);
    write(root, "odd/new\nline", 5002, 2000);
    write(root, "odd/ünïcødé-文件.txt", 5003, 1000);
    write(root, "empty-file", 0, 0);
    fs::create_dir_all(root.join("empty-dir")).unwrap();
    symlink("docs/file-0.dat", root.join("link-to-file")).unwrap();
    write(root, "hard/one", 5004, 4000);
    fs::hard_link(root.join("hard/one"), root.join("hard/two")).unwrap();
}

fn cp_a(from: &Path, to: &Path) {
    let ok = std::process::Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap()
        .success();
    assert!(ok, "cp -a {} {}", from.display(), to.display());
}

struct Trees {
    _dir: tempfile::TempDir,
    root: PathBuf,
    pristine: PathBuf,
}

impl Trees {
    fn new(fill: impl FnOnce(&Path)) -> Trees {
        let dir = tempfile::tempdir().unwrap();
        let pristine = dir.path().join("pristine");
        fill(&pristine);
        Trees {
            root: dir.path().to_path_buf(),
            _dir: dir,
            pristine,
        }
    }

    /// A fresh copy of the pristine tree, as a tool cycle gets one.
    fn copy(&self, name: &str) -> PathBuf {
        let to = self.root.join(name);
        cp_a(&self.pristine, &to);
        to
    }
}

fn spec(fraction: f64, seed: u64) -> ChangeSpec {
    ChangeSpec { fraction, seed }
}

fn by_path(m: &Manifest) -> BTreeMap<&str, &labrun_evidence::ManifestEntry> {
    m.entries.iter().map(|e| (e.path.as_str(), e)).collect()
}

#[test]
fn the_same_manifest_and_spec_give_the_same_change_and_the_same_tree() {
    let t = Trees::new(|root| mixed_tree(root, 200, 3));
    let manifest = scan_metadata(&t.pristine).unwrap();
    let s = spec(0.05, 2);
    let change = TreeChange::plan(&manifest, &s);
    assert_eq!(change, TreeChange::plan(&manifest, &s));
    assert_eq!(change, TreeChange::plan(&manifest.clone(), &s));
    assert!(!change.is_empty());
    // Another seed is another change.
    assert_ne!(change, TreeChange::plan(&manifest, &spec(0.05, 3)));

    let (a, b) = (t.copy("a"), t.copy("b"));
    let after_a = apply_tree_change(&a, &change, &s, &mut |_, _| {}).unwrap();
    let after_b = apply_tree_change(&b, &change, &s, &mut |_, _| {}).unwrap();
    assert_eq!(after_a, after_b);
    assert_ne!(after_a, scan(&t.pristine).unwrap());
    // Streamed as the tree is read: the same entries, in manifest order.
    let c = t.copy("c");
    let mut streamed = Manifest::default();
    apply_tree_change_each(
        &c,
        &change,
        &s,
        &mut |e| {
            streamed.entries.push(e);
            Ok(())
        },
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(streamed, after_a);
    // Metadata too: the change's mtimes are seeded, not the clock's.
    assert_eq!(scan_metadata(&a).unwrap(), scan_metadata(&b).unwrap());
    for rel in change
        .rewritten
        .iter()
        .chain(change.added.iter().map(|(p, _)| p))
    {
        let md = fs::symlink_metadata(a.join(rel)).unwrap();
        assert_eq!(
            (md.mtime(), md.mtime_nsec() as u32),
            (change.mtime.secs, change.mtime.nanos)
        );
    }
}

#[test]
fn the_change_does_what_its_summary_says() {
    let t = Trees::new(|root| mixed_tree(root, 300, 4));
    let before = scan_metadata(&t.pristine).unwrap();
    let s = spec(0.05, 7);
    let change = TreeChange::plan(&before, &s);
    let sum = change.summary();
    assert_eq!(sum.files_rewritten as usize, change.rewritten.len());
    assert_eq!(sum.regions, 4, "every large file gets a region");
    // 300 + 4 + odd 3 + hard... eligible: 300 + 4 + 3 odd + the empty file.
    assert_eq!(sum.eligible_files, 308);
    let structural = (308.0f64 * 0.05 / 5.0).round() as u64;
    assert_eq!(
        (sum.files_removed, sum.files_renamed, sum.files_added),
        (structural, structural, structural)
    );
    assert!(sum.note().is_none());

    let dir = t.copy("a");
    let after = apply_tree_change(&dir, &change, &s, &mut |_, _| {}).unwrap();
    let outcome = compare(&scan(&t.pristine).unwrap(), &after);
    assert_eq!(
        outcome.changed,
        sum.files_rewritten + sum.regions,
        "{outcome:?}"
    );
    assert_eq!(outcome.missing, sum.files_removed + sum.files_renamed);
    assert_eq!(outcome.extra, sum.files_added + sum.files_renamed);

    let (old, new) = (by_path(&before), by_path(&after));
    for (from, to) in &change.renamed {
        assert!(!new.contains_key(from.as_str()));
        assert_eq!(
            new[to.as_str()].sha256,
            old[from.as_str()].sha256,
            "{from} -> {to}"
        );
    }
    for (path, size) in &change.added {
        let e = new[path.as_str()];
        assert_eq!((e.size, e.mode), (*size, ADDED_MODE), "{path}");
        assert!(*size <= WHOLE_FILE_LIMIT);
    }
    for r in &change.regions {
        let (p, d) = (
            fs::read(t.pristine.join(&r.path)).unwrap(),
            fs::read(dir.join(&r.path)).unwrap(),
        );
        let (start, end) = (r.offset as usize, (r.offset + r.len) as usize);
        assert_eq!(p.len(), d.len());
        assert_eq!(p[..start], d[..start], "{}: before the region", r.path);
        assert_eq!(p[end..], d[end..], "{}: after the region", r.path);
        let same = p[start..end]
            .iter()
            .zip(&d[start..end])
            .filter(|(x, y)| x == y)
            .count();
        assert!(
            same * 64 < r.len as usize,
            "{}: the region is new bytes",
            r.path
        );
    }
    // Never a link, never a hard-link group's member.
    for path in ["link-to-file", "hard/one", "hard/two"] {
        assert_eq!(old[path].sha256, new[path].sha256, "{path}");
    }
}

#[test]
fn about_the_fraction_of_bytes_is_written() {
    let t = Trees::new(|root| mixed_tree(root, 600, 6));
    let manifest = scan(&t.pristine).unwrap();
    for fraction in [0.02, 0.05, 0.2, 0.5] {
        let sum = TreeChange::plan(&manifest, &spec(fraction, 11)).summary();
        let share = sum.bytes_written as f64 / sum.tree_bytes as f64;
        // Small files chosen at random, a region of each large file, plus
        // added files of about fraction/5 of the count: fraction to 1.2x
        // on average, with the spread of a random choice of files.
        assert!(
            (0.7 * fraction..1.6 * fraction).contains(&share),
            "fraction {fraction}: {share:.4} of the bytes ({sum:?})"
        );
        assert!(sum.bytes_removed < sum.tree_bytes);
    }
}

#[test]
fn a_larger_fraction_holds_a_smaller_one() {
    let t = Trees::new(|root| mixed_tree(root, 200, 0));
    let manifest = scan(&t.pristine).unwrap();
    let small = TreeChange::plan(&manifest, &spec(0.05, 4));
    let large = TreeChange::plan(&manifest, &spec(0.25, 4));
    let removed: BTreeSet<_> = large.removed.iter().collect();
    assert!(small.removed.iter().all(|p| removed.contains(p)));
    assert!(large.rewritten.len() > small.rewritten.len());
}

#[test]
fn every_file_of_odd_names_can_be_changed() {
    let t = Trees::new(|root| {
        mixed_tree(root, 8, 1);
        write(root, "odd/tab\there", 6001, 100);
        write(root, "odd/ 'quote\" \\back", 6002, 100);
    });
    let manifest = scan_metadata(&t.pristine).unwrap();
    let s = spec(1.0, 5);
    let change = TreeChange::plan(&manifest, &s);
    // At fraction 1 every eligible file is removed, renamed or written.
    let touched: BTreeSet<&str> = change
        .rewritten
        .iter()
        .chain(change.removed.iter())
        .chain(change.renamed.iter().map(|(from, _)| from))
        .chain(change.regions.iter().map(|r| &r.path))
        .map(String::as_str)
        .collect();
    for odd in [
        "odd/new\nline",
        "odd/ünïcødé-文件.txt",
        "odd/tab\there",
        "odd/ 'quote\" \\back",
    ] {
        assert!(touched.contains(odd), "{odd:?} in {change:#?}");
    }
    let dir = t.copy("a");
    let after = apply_tree_change(&dir, &change, &s, &mut |_, _| {}).unwrap();
    assert_eq!(after, scan(&dir).unwrap());
}

#[test]
fn the_manifest_after_is_the_same_with_or_without_a_rescan() {
    let t = Trees::new(|root| mixed_tree(root, 120, 2));
    let base = scan(&t.pristine).unwrap();
    // A content manifest does not know hard links: drop the pair from the
    // tree so the plan cannot pick one.
    fs::remove_dir_all(t.pristine.join("hard")).unwrap();
    let base = Manifest {
        entries: base
            .entries
            .into_iter()
            .filter(|e| !e.path.starts_with("hard"))
            .collect(),
    };
    let s = spec(0.1, 3);
    let change = TreeChange::plan(&base, &s);
    let (a, b) = (t.copy("a"), t.copy("b"));
    let rescanned = apply_tree_change(&a, &change, &s, &mut |_, _| {}).unwrap();
    let mut calls = 0;
    let updated = apply_tree_change_from(&b, &change, &s, &base, &mut |_, _| calls += 1).unwrap();
    assert_eq!(updated, rescanned);
    assert!(calls > 0, "progress is reported");
    // A metadata manifest would go stale: refused, and nothing written.
    let metadata = scan_metadata(&t.pristine).unwrap();
    let c = t.copy("c");
    let err = apply_tree_change_from(&c, &change, &s, &metadata, &mut |_, _| {}).unwrap_err();
    assert!(err.to_string().contains("apply_tree_change"), "{err}");
    assert_eq!(scan(&c).unwrap(), scan(&t.pristine).unwrap());
}

#[test]
fn small_trees_give_a_clear_result() {
    // Empty.
    let t = Trees::new(|root| fs::create_dir_all(root).unwrap());
    let m = scan(&t.pristine).unwrap();
    let change = TreeChange::plan(&m, &ChangeSpec::default());
    assert!(change.is_empty());
    let sum = change.summary();
    assert_eq!(sum.eligible_files, 0);
    assert!(sum.note().unwrap().contains("nothing was changed"));
    let after = apply_tree_change(&t.pristine, &change, &ChangeSpec::default(), &mut |_, _| {});
    assert_eq!(after.unwrap(), m);

    // Only folders and links (a hard-link pair, known from a metadata scan).
    let t = Trees::new(|root| {
        fs::create_dir_all(root.join("d/e")).unwrap();
        symlink("nowhere", root.join("d/dangling")).unwrap();
        write(root, "pair/a", 1, 10);
        fs::hard_link(root.join("pair/a"), root.join("pair/b")).unwrap();
    });
    let change = TreeChange::plan(&scan_metadata(&t.pristine).unwrap(), &ChangeSpec::default());
    assert!(
        change.is_empty() && change.summary().note().is_some(),
        "{change:?}"
    );

    // One file: it is changed, one file is added, none removed.
    for size in [10usize, 2 << 20] {
        let t = Trees::new(|root| write(root, "only", 1, size));
        let m = scan(&t.pristine).unwrap();
        let change = TreeChange::plan(&m, &ChangeSpec::default());
        let sum = change.summary();
        assert_eq!(sum.files_rewritten + sum.regions, 1, "{size}: {sum:?}");
        assert_eq!(
            (sum.files_added, sum.files_removed, sum.files_renamed),
            (1, 0, 0)
        );
        assert!(sum.note().is_none());
        let dir = t.copy("a");
        let after = apply_tree_change(&dir, &change, &ChangeSpec::default(), &mut |_, _| {});
        assert_eq!(after.unwrap().entries.len(), 2);
    }

    // Two files: nothing removed or renamed either.
    let t = Trees::new(|root| {
        write(root, "x", 1, 10);
        write(root, "y", 2, 10);
    });
    let sum = TreeChange::plan(&scan(&t.pristine).unwrap(), &ChangeSpec::default()).summary();
    assert_eq!((sum.files_removed, sum.files_renamed), (0, 0));
    assert_eq!(sum.files_rewritten, 1);
}

#[test]
fn a_change_is_refused_before_it_writes_on_the_wrong_tree() {
    let t = Trees::new(|root| mixed_tree(root, 40, 1));
    let manifest = scan_metadata(&t.pristine).unwrap();
    let s = spec(0.2, 9);
    let change = TreeChange::plan(&manifest, &s);

    // Another seed than the plan's, an invalid fraction.
    let dir = t.copy("a");
    let err = apply_tree_change(&dir, &change, &spec(0.2, 8), &mut |_, _| {}).unwrap_err();
    assert!(err.to_string().contains("seed 9"), "{err}");
    let err = apply_tree_change(&dir, &change, &spec(0.0, 9), &mut |_, _| {}).unwrap_err();
    assert!(err.to_string().contains("(0, 1]"), "{err}");
    assert_eq!(scan(&dir).unwrap(), scan(&t.pristine).unwrap());

    // A file the change removes is missing: nothing else is touched.
    fs::remove_file(dir.join(&change.renamed[0].0)).unwrap();
    let before = scan(&dir).unwrap();
    let err = apply_tree_change(&dir, &change, &s, &mut |_, _| {}).unwrap_err();
    assert!(err.to_string().contains("no such file"), "{err}");
    assert_eq!(scan(&dir).unwrap(), before);

    // A content manifest cannot see hard links: a plan that picks one
    // member of a group is refused at apply, naming it.
    let t = Trees::new(|root| {
        write(root, "a", 1, 100);
        fs::hard_link(root.join("a"), root.join("b")).unwrap();
    });
    let m = scan(&t.pristine).unwrap();
    let change = TreeChange::plan(&m, &ChangeSpec::default());
    assert_eq!(change.rewritten.len(), 1);
    let dir = t.copy("a");
    let err = apply_tree_change(&dir, &change, &ChangeSpec::default(), &mut |_, _| {}).unwrap_err();
    assert!(err.to_string().contains("hard-link"), "{err}");
    assert_eq!(scan(&dir).unwrap(), m, "nothing written, nothing added");
}

#[test]
fn added_files_are_new_random_content() {
    let t = Trees::new(|root| mixed_tree(root, 100, 0));
    let manifest = scan_metadata(&t.pristine).unwrap();
    let s = spec(0.5, 1);
    let change = TreeChange::plan(&manifest, &s);
    let dir = t.copy("a");
    apply_tree_change(&dir, &change, &s, &mut |_, _| {}).unwrap();
    let mut seen = BTreeSet::new();
    for (path, size) in change.added.iter().filter(|(_, size)| *size >= 4096) {
        let content = fs::read(dir.join(path)).unwrap();
        assert_eq!(content.len() as u64, *size);
        let md = fs::metadata(dir.join(path)).unwrap();
        assert_eq!(md.permissions().mode() & 0o7777, ADDED_MODE);
        // Random bytes: nearly all 256 values, and no two files alike.
        let distinct: BTreeSet<u8> = content.iter().copied().collect();
        assert!(distinct.len() > 250, "{path}");
        assert!(
            seen.insert(content[..64].to_vec()),
            "{path} repeats another file"
        );
    }
    assert!(!seen.is_empty());
}

#[test]
fn a_sample_is_the_same_every_time_and_about_the_fraction() {
    let t = Trees::new(|root| mixed_tree(root, 1000, 0));
    let m = scan_metadata(&t.pristine).unwrap();
    let one = sample(&m, 0.1, 3);
    assert_eq!(one, sample(&m, 0.1, 3));
    assert_ne!(one, sample(&m, 0.1, 4));
    let files = one
        .entries
        .iter()
        .filter(|e| e.kind == EntryKind::File)
        .count();
    // 1007 files and a link at 10%: 101 expected, 3 sigma is about 29.
    assert!((70..135).contains(&files), "{files}");

    // Every kept entry's folders are kept; nothing else is.
    let kept: BTreeSet<&str> = one.entries.iter().map(|e| e.path.as_str()).collect();
    for e in &one.entries {
        let mut path = e.path.as_str();
        while let Some((parent, _)) = path.rsplit_once('/') {
            assert!(kept.contains(parent), "{parent} of {}", e.path);
            path = parent;
        }
    }
    for e in one.entries.iter().filter(|e| e.kind == EntryKind::Dir) {
        let prefix = format!("{}/", e.path);
        assert!(
            kept.iter().any(|p| p.starts_with(&prefix)),
            "{} is kept for nothing",
            e.path
        );
    }
    // Per path: the files two trees share are sampled alike, and a larger
    // fraction holds a smaller one.
    let mut grown = m.clone();
    grown.entries.retain(|e| !e.path.starts_with("docs/"));
    let two = sample(&grown, 0.1, 3);
    let in_two: BTreeSet<&str> = two.entries.iter().map(|e| e.path.as_str()).collect();
    for e in one.entries.iter().filter(|e| e.kind == EntryKind::File) {
        assert_eq!(
            in_two.contains(e.path.as_str()),
            !e.path.starts_with("docs/"),
            "{}",
            e.path
        );
    }
    let wider: BTreeSet<String> = sample(&m, 0.3, 3)
        .entries
        .into_iter()
        .map(|e| e.path)
        .collect();
    assert!(kept.iter().all(|p| wider.contains(*p)));

    // Everything at 1; at least one file however small the fraction.
    assert_eq!(sample(&m, 1.0, 3), m);
    let tiny = sample(&m, 1e-12, 3);
    assert_eq!(
        tiny.entries
            .iter()
            .filter(|e| e.kind != EntryKind::Dir)
            .count(),
        1
    );
    assert!(sample(&Manifest::default(), 0.5, 1).entries.is_empty());
}

#[test]
fn a_hard_link_group_is_sampled_whole_and_copied_as_links() {
    let t = Trees::new(|root| {
        mixed_tree(root, 30, 0);
        for i in 0..20 {
            write(root, &format!("links/f{i}"), 7000 + i, 500);
            fs::hard_link(
                root.join(format!("links/f{i}")),
                root.join(format!("links/g{i}")),
            )
            .unwrap();
        }
    });
    let m = scan_metadata(&t.pristine).unwrap();
    let s = sample(&m, 0.5, 1);
    let paths: BTreeSet<&str> = s.entries.iter().map(|e| e.path.as_str()).collect();
    let mut groups = 0;
    for i in 0..20 {
        let (f, g) = (format!("links/f{i}"), format!("links/g{i}"));
        assert_eq!(
            paths.contains(f.as_str()),
            paths.contains(g.as_str()),
            "{i}"
        );
        groups += usize::from(paths.contains(f.as_str()));
    }
    assert!((1..20).contains(&groups), "{groups}");
    let to = t.root.join("sample");
    let copy = copy_sample(&t.pristine, &to, &s, &mut |_, _| {}).unwrap();
    assert_eq!(copy, s, "the copy scans (with metadata) to the sample");
    assert_eq!(scan_metadata(&to).unwrap(), s);
}

#[test]
fn a_sample_copies_to_a_tree_that_scans_to_it() {
    let t = Trees::new(|root| {
        mixed_tree(root, 200, 0);
        fs::create_dir_all(root.join("locked/inner")).unwrap();
        write(root, "locked/inner/f", 1, 10);
        fs::set_permissions(root.join("locked"), fs::Permissions::from_mode(0o555)).unwrap();
    });
    let m = scan(&t.pristine).unwrap();
    let s = sample(&m, 0.3, 8);
    let to = t.root.join("sample");
    let mut last = (0, 0);
    let copy = copy_sample(&t.pristine, &to, &s, &mut |done, total| {
        last = (done, total)
    })
    .unwrap();
    assert_eq!(copy, s);
    assert_eq!(scan(&to).unwrap(), s);
    assert_eq!(last.0, last.1);
    assert_eq!(last.1, s.total_file_bytes());
    // Everything, the read-only folder too (content and mtimes).
    let all = sample(&scan_metadata(&t.pristine).unwrap(), 1.0, 8);
    let to = t.root.join("all");
    assert_eq!(
        copy_sample(&t.pristine, &to, &all, &mut |_, _| {}).unwrap(),
        all
    );

    // Not into a folder with something in it; not from a tree that changed.
    let err = copy_sample(&t.pristine, &to, &all, &mut |_, _| {}).unwrap_err();
    assert!(err.to_string().contains("not empty"), "{err}");
    let file = s
        .entries
        .iter()
        .find(|e| e.kind == EntryKind::File && e.size > 0)
        .unwrap();
    fs::write(t.pristine.join(&file.path), "different").unwrap();
    let err = copy_sample(&t.pristine, &t.root.join("again"), &s, &mut |_, _| {}).unwrap_err();
    assert!(err.to_string().contains("differs"), "{err}");
}

#[test]
fn new_paths_never_take_a_name_the_tree_has() {
    // Flat: every new path goes into the root, where the first names the
    // change would pick are taken.
    let t = Trees::new(|root| {
        for i in 0..20 {
            write(root, &format!("f{i}"), i, 100);
        }
        write(root, "labrun-added-0", 99, 10);
        fs::create_dir_all(root.join("labrun-added-1")).unwrap();
    });
    let m = scan(&t.pristine).unwrap();
    let s = spec(0.5, 1);
    let change = TreeChange::plan(&m, &s);
    let names: BTreeSet<&str> = m.entries.iter().map(|e| e.path.as_str()).collect();
    let new: Vec<&str> = change
        .added
        .iter()
        .map(|(p, _)| p.as_str())
        .chain(change.renamed.iter().map(|(_, to)| to.as_str()))
        .collect();
    assert!(change.added.len() >= 2, "{change:?}");
    assert!(new.iter().all(|p| !names.contains(p)), "{new:?}");
    assert_eq!(new.iter().collect::<BTreeSet<_>>().len(), new.len());
    let dir = t.copy("a");
    let after = apply_tree_change(&dir, &change, &s, &mut |_, _| {}).unwrap();
    assert_eq!(after, scan(&dir).unwrap());
}
