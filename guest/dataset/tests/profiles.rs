//! The three profiles beside the published dataset, end to end on small
//! trees: determinism, totals against the scale, each change and the share
//! it touches, verify, and the sparse file's holes.

use labrun_dataset::{
    DatasetParams, DatasetProfile, apply_change, apply_change_from, footprint, generate, scan,
    verify,
};
use labrun_evidence::{EntryKind, Manifest, ManifestEntry};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

const OTHERS: [DatasetProfile; 3] = [
    DatasetProfile::TinyFiles,
    DatasetProfile::Media,
    DatasetProfile::VmImage,
];

fn params(profile: DatasetProfile, seed: u64) -> DatasetParams {
    // A few MB each: 1,000 tiny files; 1 photo and 8 videos; 43 MB sparse.
    let scale = match profile {
        DatasetProfile::TinyFiles => 0.001,
        DatasetProfile::VmImage => 0.002,
        _ => 0.001,
    };
    DatasetParams {
        seed,
        scale,
        profile,
    }
}

fn gen_into(dir: &Path, p: &DatasetParams) -> Manifest {
    generate(dir, p, &mut |done, total| assert!(done <= total)).unwrap()
}

fn files(m: &Manifest) -> BTreeMap<&str, &ManifestEntry> {
    m.entries
        .iter()
        .filter(|e| e.kind == EntryKind::File)
        .map(|e| (e.path.as_str(), e))
        .collect()
}

fn copy_tree(from: &Path, to: &Path) {
    let status = std::process::Command::new("cp")
        .args(["-a", "--sparse=always"])
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn same_seed_same_manifest_other_seed_another() {
    let tmp = tempfile::tempdir().unwrap();
    for profile in OTHERS {
        let a = gen_into(
            &tmp.path().join(format!("{profile}-a")),
            &params(profile, 5),
        );
        let b = gen_into(
            &tmp.path().join(format!("{profile}-b")),
            &params(profile, 5),
        );
        let c = gen_into(
            &tmp.path().join(format!("{profile}-c")),
            &params(profile, 6),
        );
        assert_eq!(a, b, "{profile}");
        assert_ne!(a, c, "{profile}");
        // Same paths and sizes under another seed would mean the seed only
        // moved bytes; the content must differ file by file.
        let (fa, fc) = (files(&a), files(&c));
        let same = fa
            .iter()
            .filter(|(p, e)| e.size > 0 && fc.get(*p).is_some_and(|o| o.sha256 == e.sha256))
            .count();
        assert_eq!(same, 0, "{profile}: {same} files identical across seeds");
        // The manifest is what is on disk.
        assert_eq!(scan(&tmp.path().join(format!("{profile}-a"))).unwrap(), a);
    }
}

#[test]
fn counts_and_bytes_follow_the_scale() {
    let tmp = tempfile::tempdir().unwrap();
    for profile in OTHERS {
        let p = params(profile, 1);
        let m = gen_into(&tmp.path().join(profile.as_str()), &p);
        let fp = footprint(&p);
        assert_eq!(files(&m).len() as u64, fp.files, "{profile}");
        assert_eq!(m.total_file_bytes(), fp.bytes, "{profile}");
    }
    // Against the profiles' stated scale-1 figures, computed here.
    for scale in [0.0001, 0.01, 0.1, 1.0] {
        let fp = |profile| {
            footprint(&DatasetParams {
                seed: 1,
                scale,
                profile,
            })
        };
        let tiny = fp(DatasetProfile::TinyFiles);
        assert_eq!(tiny.files, (1_000_000.0 * scale).round() as u64);
        let per_file = tiny.bytes as f64 / tiny.files as f64;
        // 2% empty, the rest uniform over 1..4096 bytes.
        assert!(
            (per_file / (0.98 * 2048.0) - 1.0).abs() < 0.01,
            "{per_file}"
        );
        let media = fp(DatasetProfile::Media);
        let ratio = media.bytes as f64 / (6.10e9 * scale);
        // Photos are whole: at 0.0001 the one photo is 3.7 MB of 0.61 MB.
        if scale >= 0.01 {
            assert!((ratio - 1.0).abs() < 0.01, "media at {scale}: {ratio}");
        }
        let vm = fp(DatasetProfile::VmImage);
        let blocks = (20.0 * 1024.0 * 16.0 * scale).round() as u64;
        assert_eq!(vm.bytes, blocks * 65_536);
        assert_eq!(vm.files, 1);
        let share = vm.allocated_bytes as f64 / vm.bytes as f64;
        if scale >= 0.01 {
            assert!((0.25..0.30).contains(&share), "vm at {scale}: {share}");
        }
    }
}

/// Changes a copy of a generated tree twice (and a second copy once):
/// returns (generated, changed, changed again elsewhere) manifests.
fn change_twice(root: &Path, p: &DatasetParams) -> (Manifest, Manifest, Manifest) {
    let gen_dir = root.join("gen");
    let generated = gen_into(&gen_dir, p);
    let (a, b) = (root.join("a"), root.join("b"));
    copy_tree(&gen_dir, &a);
    copy_tree(&gen_dir, &b);
    let changed = apply_change(&a, p, 77, &mut |_, _| {}).unwrap();
    let again = apply_change_from(&b, p, 77, &generated, &mut |_, _| {}).unwrap();
    assert_eq!(
        scan(&b).unwrap(),
        again,
        "{}: the updated manifest",
        p.profile
    );
    (generated, changed, again)
}

#[test]
fn tiny_files_change_rewrites_5_percent_and_adds_and_removes_a_few() {
    let tmp = tempfile::tempdir().unwrap();
    let p = params(DatasetProfile::TinyFiles, 2);
    let (before, after, again) = change_twice(tmp.path(), &p);
    assert_eq!(after, again, "the change is deterministic");
    let (b, a) = (files(&before), files(&after));
    let removed = b.keys().filter(|k| !a.contains_key(*k)).count();
    let added: Vec<_> = a.keys().filter(|k| !b.contains_key(*k)).collect();
    let rewritten = b
        .iter()
        .filter(|(k, e)| a.get(*k).is_some_and(|n| n.sha256 != e.sha256))
        .count();
    // 1,000 files: 50 rewritten (empty ones stay empty), 1 removed, 1 added.
    assert!((45..=50).contains(&rewritten), "{rewritten}");
    assert_eq!((removed, added.len()), (1, 1));
    assert!(added[0].contains("/new-77-"), "{added:?}");
    // Sizes of rewritten files do not change.
    assert!(
        b.iter()
            .all(|(k, e)| a.get(k).is_none_or(|n| n.size == e.size))
    );
    let plan = labrun_dataset::change_plan(&p, 77);
    assert_eq!(plan.small_files.len(), 50);
}

#[test]
fn media_change_adds_5_percent_of_the_bytes_and_touches_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let p = DatasetParams {
        scale: 0.005,
        ..params(DatasetProfile::Media, 3)
    };
    let (before, after, again) = change_twice(tmp.path(), &p);
    assert_eq!(after, again, "the change is deterministic");
    let (b, a) = (files(&before), files(&after));
    assert!(
        b.iter().all(|(k, e)| a[k] == *e),
        "an existing file changed"
    );
    let added: u64 = a
        .iter()
        .filter(|(k, _)| !b.contains_key(*k))
        .map(|(_, e)| e.size)
        .sum();
    let share = added as f64 / before.total_file_bytes() as f64;
    assert!((share - 0.05).abs() < 1e-6, "{share}");
    assert!(labrun_dataset::change_plan(&p, 77).small_files.is_empty());
}

fn allocated(path: &Path) -> u64 {
    fs::metadata(path).unwrap().blocks() * 512
}

#[test]
fn vm_image_change_overwrites_blocks_in_place_and_keeps_its_holes() {
    let tmp = tempfile::tempdir().unwrap();
    let p = params(DatasetProfile::VmImage, 4);
    let fp = footprint(&p);
    let (_, after, again) = change_twice(tmp.path(), &p);
    assert_eq!(after, again, "the change is deterministic");
    let (gen_file, changed_file) = (
        tmp.path().join("gen/images/disk.img"),
        tmp.path().join("a/images/disk.img"),
    );
    let apparent = fs::metadata(&gen_file).unwrap().len();
    assert_eq!(apparent, fp.bytes);
    for f in [&gen_file, &changed_file] {
        let used = allocated(f);
        assert!(used * 2 < apparent, "{}: {used} of {apparent}", f.display());
    }
    let grew = allocated(&changed_file).saturating_sub(allocated(&gen_file));
    assert!(grew <= 8 * 65_536, "the change allocated {grew} more bytes");

    // Which 64 KiB blocks differ, and whether they were written before.
    let (g, c) = (
        fs::File::open(&gen_file).unwrap(),
        fs::File::open(&changed_file).unwrap(),
    );
    let (mut x, mut y) = (vec![0u8; 65_536], vec![0u8; 65_536]);
    let (mut written, mut overwritten, mut filled) = (0, 0, 0);
    for block in 0..apparent / 65_536 {
        g.read_exact_at(&mut x, block * 65_536).unwrap();
        c.read_exact_at(&mut y, block * 65_536).unwrap();
        let was_hole = x.iter().all(|&b| b == 0);
        written += u64::from(!was_hole);
        if x != y {
            if was_hole {
                filled += 1;
            } else {
                overwritten += 1;
            }
        }
    }
    let share = overwritten as f64 / written as f64;
    assert!((share - 0.05).abs() < 0.005, "{overwritten} of {written}");
    assert!((1..=3).contains(&filled), "{filled} holes filled");
    let regions = labrun_dataset::change_plan(&p, 77).regions;
    assert_eq!(regions.len() as u64, overwritten + filled);
}

#[test]
fn verify_catches_one_modified_byte_in_every_profile() {
    let tmp = tempfile::tempdir().unwrap();
    for profile in OTHERS {
        let dir = tmp.path().join(profile.as_str());
        let m = gen_into(&dir, &params(profile, 9));
        assert!(verify(&dir, &m).unwrap().passed, "{profile}");
        let target = files(&m)
            .into_iter()
            .find(|(_, e)| e.size > 0)
            .map(|(p, e)| (dir.join(p), e.size / 2))
            .unwrap();
        let f = fs::OpenOptions::new().write(true).open(&target.0).unwrap();
        let mut byte = [0u8];
        fs::File::open(&target.0)
            .unwrap()
            .read_exact_at(&mut byte, target.1)
            .unwrap();
        f.write_all_at(&[byte[0] ^ 1], target.1).unwrap();
        let outcome = verify(&dir, &m).unwrap();
        assert!(!outcome.passed, "{profile}");
        assert_eq!(outcome.changed, 1, "{profile}");
    }
}

#[test]
fn a_change_refuses_a_tree_of_another_scale() {
    let tmp = tempfile::tempdir().unwrap();
    for profile in [DatasetProfile::TinyFiles, DatasetProfile::VmImage] {
        let dir = tmp.path().join(profile.as_str());
        gen_into(&dir, &params(profile, 1));
        let other = DatasetParams {
            scale: 0.05,
            ..params(profile, 1)
        };
        let err = apply_change(&dir, &other, 2, &mut |_, _| {}).unwrap_err();
        assert!(err.to_string().contains("--scale"), "{profile}: {err}");
    }
}

#[test]
fn the_tiny_files_change_is_seeded_and_takes_exactly_its_share() {
    // 5,000 files: 250 rewritten (5%), 5 removed and 5 added (0.1%).
    let tmp = tempfile::tempdir().unwrap();
    let p = DatasetParams {
        scale: 0.005,
        ..params(DatasetProfile::TinyFiles, 2)
    };
    let (a, again, other) = (
        labrun_dataset::change_plan(&p, 77),
        labrun_dataset::change_plan(&p, 77),
        labrun_dataset::change_plan(&p, 78),
    );
    assert_eq!(a, again, "same seeds, same files");
    // Drawn by selection sampling: the count is exact, no tolerance.
    assert_eq!(a.small_files.len(), 250);
    assert_eq!(other.small_files.len(), 250);
    // Another change seed draws other files: two independent 5% draws
    // share about 12 of 250.
    let common = a
        .small_files
        .iter()
        .filter(|f| other.small_files.binary_search(f).is_ok())
        .count();
    assert!(common < 40, "{common} files in common");
    // Spread over the whole tree, not bunched at its start: each half of
    // the files (in path order) holds 125 +- 35 of them.
    let before = gen_into(&tmp.path().join("tree"), &p);
    let all: Vec<&str> = files(&before).into_keys().collect();
    assert_eq!(all.len(), 5000);
    let middle = all[2500];
    let first_half = a.small_files.iter().filter(|f| f.as_str() < middle).count();
    assert!((90..=160).contains(&first_half), "{first_half}");
    // Applied: what the plan names is what changed, and as many files are
    // removed and added as stated.
    apply_change(&tmp.path().join("tree"), &p, 77, &mut |_, _| {}).unwrap();
    let after = scan(&tmp.path().join("tree")).unwrap();
    let (b, n) = (files(&before), files(&after));
    let removed = b.keys().filter(|k| !n.contains_key(*k)).count();
    let added = n.keys().filter(|k| !b.contains_key(*k)).count();
    assert_eq!((removed, added), (5, 5));
    let rewritten: Vec<&str> = b
        .iter()
        .filter(|(k, e)| n.get(*k).is_some_and(|x| x.sha256 != e.sha256))
        .map(|(k, _)| *k)
        .collect();
    assert!(
        rewritten
            .iter()
            .all(|f| a.small_files.binary_search(&f.to_string()).is_ok())
    );
    // Empty files stay empty (2% of them): the others all changed.
    assert!(
        (235..=250).contains(&rewritten.len()),
        "{}",
        rewritten.len()
    );
}
