//! A seeded sample of a tree (issue 31's `sample:`): a quick look at a big
//! tree on a subset of its files, the same subset every time.
//!
//! A file (or symlink) is in the sample when the first 8 bytes of
//! SHA-256(`labrun-dataset/v2/sample`, seed, path), read as a number, fall
//! below `fraction` of 2^64. The choice is per path, not per position: the
//! same seed picks the same paths from every tree of a series (the files
//! two versions share are sampled alike), and a larger fraction's sample
//! holds a smaller one's. A hard-link group is in or out as a whole (by its
//! first path), so the sample's links are links of the tree; the folders on
//! the way to every chosen entry are kept, with their modes. A tree with
//! files always keeps at least one.

use crate::Progress;
use crate::manifest_file::WrittenManifest;
pub use crate::sample_copy::copy_sample_from_file;
use crate::sample_copy::{copy_entry, differs, finish_folder, prepare_empty};
use crate::verify::compare;
use labrun_evidence::{EntryKind, Manifest, ManifestEntry};
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashMap};
use std::io;
use std::path::Path;

/// The seeded subset of `manifest` (see the module docs), sorted by path.
/// A `fraction` of 1 or more keeps the whole tree (empty folders too); 0 or
/// less (or not a number) keeps one file (or hard-link group).
pub fn sample(manifest: &Manifest, fraction: f64, seed: u64) -> Manifest {
    if fraction >= 1.0 {
        // The whole tree, empty folders included.
        let mut all = manifest.clone();
        all.sort();
        return all;
    }
    let threshold = threshold(fraction);
    // A hard-link group is decided by its first path (in path order).
    let mut sorted: Vec<&ManifestEntry> = manifest.entries.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    let mut group_score: HashMap<u32, u64> = HashMap::new();
    let mut scored: Vec<(usize, u64)> = Vec::new();
    for (i, e) in sorted.iter().enumerate() {
        if e.kind == EntryKind::Dir {
            continue;
        }
        let score = match e.link_group {
            Some(g) => *group_score.entry(g).or_insert_with(|| score(seed, &e.path)),
            None => score(seed, &e.path),
        };
        scored.push((i, score));
    }
    let mut chosen: Vec<usize> = scored
        .iter()
        .filter(|(_, s)| *s < threshold)
        .map(|&(i, _)| i)
        .collect();
    if chosen.is_empty()
        && let Some(&(_, lowest)) = scored.iter().min_by_key(|(i, s)| (*s, *i))
    {
        chosen = scored
            .iter()
            .filter(|(_, s)| *s == lowest)
            .map(|&(i, _)| i)
            .collect();
    }

    let mut keep: BTreeSet<usize> = chosen.iter().copied().collect();
    let dir_index: HashMap<&str, usize> = sorted
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind == EntryKind::Dir)
        .map(|(i, e)| (e.path.as_str(), i))
        .collect();
    for &i in &chosen {
        let mut path = sorted[i].path.as_str();
        while let Some((parent, _)) = path.rsplit_once('/') {
            if let Some(&d) = dir_index.get(parent) {
                keep.insert(d);
            }
            path = parent;
        }
    }
    // Groups numbered again from 0 in order of first path, as a scan of
    // the sample's copy numbers them.
    let mut renumber: HashMap<u32, u32> = HashMap::new();
    let entries = keep
        .into_iter()
        .map(|i| {
            let mut e = sorted[i].clone();
            if let Some(g) = e.link_group {
                let next = renumber.len() as u32;
                e.link_group = Some(*renumber.entry(g).or_insert(next));
            }
            e
        })
        .collect();
    Manifest { entries }
}

/// As [`sample`], from the manifest file `manifest` to the manifest file
/// `out` (the bytes [`crate::write_manifest`] of [`sample`] writes), one
/// entry at a time: for trees too big to hold (see `sample_file.rs`).
pub fn sample_to_file(
    manifest: &Path,
    fraction: f64,
    seed: u64,
    out: &Path,
) -> io::Result<WrittenManifest> {
    Ok(crate::sample_file::sample_to_file(
        manifest, fraction, seed, out,
    )?)
}

/// Scores below this are in the sample of `fraction` (0 for 0 or less, or
/// not a number: nothing is, and the lowest score is kept).
pub(crate) fn threshold(fraction: f64) -> u64 {
    if fraction > 0.0 {
        (fraction * 2f64.powi(64)) as u64
    } else {
        0
    }
}

/// A path's place in every sample of `seed`: it is in those whose
/// threshold is above it.
pub(crate) fn score(seed: u64, path: &str) -> u64 {
    let mut h = Sha256::new();
    h.update(b"labrun-dataset/v2/sample");
    h.update(seed.to_le_bytes());
    h.update(path.as_bytes());
    let digest = h.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

/// Copies the entries of `subset` (a [`sample`] of the tree under `from`)
/// to `to` (created; it must not exist, or be an empty folder), with their
/// modes and the mtimes of files and folders, hard-link groups as links;
/// returns the copy's manifest, which must match `subset` (a tree that
/// changed while it was copied is an error that says so).
pub fn copy_sample(
    from: &Path,
    to: &Path,
    subset: &Manifest,
    progress: Progress,
) -> io::Result<Manifest> {
    prepare_empty(to)?;
    let mut entries: Vec<&ManifestEntry> = subset.entries.iter().collect();
    // A folder's path sorts before those of its entries.
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    let total = subset.total_file_bytes();
    let mut done = 0;
    let mut first_of_group = HashMap::new();
    for e in &entries {
        let copied = copy_entry(from, to, e, &mut first_of_group)?;
        if e.kind == EntryKind::File {
            done += copied;
            progress(done.min(total), total);
        }
    }
    // Folders last, deepest first (see `finish_folder`).
    for e in entries.iter().rev().filter(|e| e.kind == EntryKind::Dir) {
        finish_folder(from, to, &e.path)?;
    }
    let metadata = subset
        .entries
        .iter()
        .any(|e| e.mtime.is_some() || e.link_group.is_some());
    let copy = if metadata {
        crate::scan_metadata(to)?
    } else {
        crate::scan(to)?
    };
    let outcome = compare(subset, &copy);
    if !outcome.passed {
        return Err(differs(from, to, &outcome.first_differences));
    }
    Ok(copy)
}
