//! `tiny-files`: a file-count ladder toward a million files of 0-4 KiB of
//! random bytes, in nested folders of at most 256 entries.
//!
//! ```text
//! files/HH[/HH...]/NNNNNNN.bin   file N; leaf folder N / 256, in base-256 hex digits
//! ```
//!
//! At scale 1: 1,000,000 files (the count scales, rounded, at least 1).
//! Sizes are stratified like the published small files: the file of size
//! rank `r` of `n` has `max(1, 4096 (2r+1) / (2n))` bytes, except every
//! 50th rank, which is empty (2% empty files); the seed decides which path
//! gets which rank. About 2.0 GB at scale 1.
//!
//! The change: 5% of the files rewritten with new bytes (same size), 0.1%
//! removed, and as many new files (`new-<change seed>-<k>.bin`, 0-4096
//! bytes) added to the folders of randomly drawn files. A leaf holds at most
//! 256 files, and a change adds a few.

use super::{Edit, FootprintRow, row, with_dirs};
use crate::error::DatasetError;
use crate::generate;
use crate::layout::scale_count;
use crate::manifest_file::ManifestFileWriter;
use crate::ordered::ordered;
use crate::pool::{self, Worker};
use crate::stream::{self, Keys, Tag};
use crate::tree::{Class, FileSpec, Tree};
use crate::{DatasetParams, DatasetProfile, Progress};
use labrun_evidence::ManifestEntry;
use std::path::Path;

pub const FILES: u64 = 1_000_000;
/// Sizes are below this (4 KiB).
pub const MAX_BYTES: u64 = 4096;
/// Every this-th size rank is an empty file.
pub const EMPTY_EVERY: u64 = 50;
/// Files per leaf folder, and folders per folder above it.
pub const FAN_OUT: u64 = 256;
pub const CHANGE_REWRITE_PERCENT: u64 = 5;
/// Files removed, and files added, per change: 0.1% of the files.
pub const CHANGE_ADD_REMOVE_PER_MILLE: u64 = 1;
const ROOT: &str = "files";

pub fn count(scale: f64) -> u64 {
    scale_count(FILES, scale)
}

/// The size of rank `r` of `n`: stratified (`super::stratified`), ascending
/// but for every [`EMPTY_EVERY`]th rank, which is empty.
// `is_multiple_of` is newer than the workspace's rust-version (1.85).
#[allow(clippy::manual_is_multiple_of)]
fn size_of_rank(r: u64, n: u64) -> u64 {
    if r % EMPTY_EVERY == 0 {
        0
    } else {
        (MAX_BYTES as u128 * (2 * r as u128 + 1) / (2 * n as u128)).max(1) as u64
    }
}

/// Sizes by rank, computed as they are read.
fn sizes(n: u64) -> impl Iterator<Item = u64> {
    (0..n).map(move |r| size_of_rank(r, n))
}

/// Which file has which size: the seed's permutation of the size ranks,
/// held as 4 bytes a file, the one thing held per file, so that a seed's
/// tree stays byte for byte what it always was (see
/// [`stream::permutation_u32`]).
pub(crate) struct Sizes {
    n: u64,
    ranks: Vec<u32>,
}

impl Sizes {
    pub(crate) fn of(params: &DatasetParams) -> Sizes {
        let n = count(params.scale);
        // A valid scale (at most 100) numbers at most 100 million files.
        let narrow = u32::try_from(n).unwrap_or(u32::MAX);
        let keys = Keys::content_of(DatasetProfile::TinyFiles, params.seed);
        let ranks = stream::permutation_u32(&mut keys.stream(Tag::Shuffle, 0), narrow);
        Sizes { n, ranks }
    }

    /// The size of file `index`.
    pub(crate) fn size(&self, index: u64) -> u64 {
        let rank = self
            .ranks
            .get(index as usize)
            .map_or(index, |&r| u64::from(r));
        size_of_rank(rank, self.n)
    }

    /// The bytes of all files.
    pub(crate) fn total(&self) -> u64 {
        sizes(self.n).sum()
    }
}

pub fn rows(scale: f64) -> Vec<FootprintRow> {
    let n = count(scale);
    let empty = sizes(n).filter(|&s| s == 0).count() as u64;
    vec![
        row("empty", empty, 0),
        row("random, 1 B-4 KiB", n - empty, sizes(n).sum()),
    ]
}

fn hex_width(mut n: u64) -> usize {
    let mut w = 1;
    while n >= FAN_OUT {
        n /= FAN_OUT;
        w += 1;
    }
    w
}

fn decimal_width(n: u64) -> usize {
    n.to_string().len()
}

/// The folder of file `index` of `n`: `files/HH/HH...`.
fn folder(index: u64, n: u64) -> String {
    let leaves = n.div_ceil(FAN_OUT);
    let levels = hex_width(leaves.saturating_sub(1));
    let leaf = index / FAN_OUT;
    let mut out = ROOT.to_string();
    for level in (0..levels).rev() {
        let digit = (leaf >> (8 * level)) & 0xff;
        out.push_str(&format!("/{digit:02x}"));
    }
    out
}

pub fn path(index: u64, n: u64) -> String {
    let width = decimal_width(n.saturating_sub(1));
    format!("{}/{index:0width$}.bin", folder(index, n))
}

pub fn tree(params: &DatasetParams) -> Tree {
    let n = count(params.scale);
    let sizes = Sizes::of(params);
    let files = (0..n)
        .map(|index| FileSpec {
            path: path(index, n),
            class: Class::Small,
            index,
            size: sizes.size(index),
            copies: Vec::new(),
        })
        .collect();
    with_dirs(files)
}

/// Files a change rewrites, and files it removes (and adds), of `n`.
fn change_counts(n: u64) -> (u64, u64) {
    let rewrite = ((n * CHANGE_REWRITE_PERCENT + 50) / 100).max(1);
    let add_remove = ((n * CHANGE_ADD_REMOVE_PER_MILLE + 500) / 1000).max(1);
    (rewrite, add_remove)
}

/// Files the change rewrites: as many as drawn unless the tree has fewer.
pub(crate) fn rewritten_count(params: &DatasetParams) -> u64 {
    let n = count(params.scale);
    change_counts(n).0.min(n)
}

/// The files the change rewrites and removes, in index order, which is
/// path order: exactly 5% and 0.1% of the files (all of them, if there are
/// fewer), never the same file twice, drawn by selection sampling (Knuth's
/// algorithm S: file `i` is taken with probability (still to take) / (files
/// left), one draw of the change stream per file). So neither the choice
/// nor the files are held, a million files or a hundred, and the same seeds
/// choose the same files.
pub(crate) fn in_place_edits<'a>(
    params: &DatasetParams,
    change_seed: u64,
    sizes: &'a Sizes,
) -> impl Iterator<Item = Edit> + Send + 'a {
    let n = sizes.n;
    let (mut rewrite, mut remove) = change_counts(n);
    let keys = Keys::change_of(DatasetProfile::TinyFiles, params.seed, change_seed);
    let mut rng = keys.stream(Tag::ChangeChoice, 0);
    (0..n).filter_map(move |index| {
        if rewrite + remove == 0 {
            return None;
        }
        let draw = stream::below(&mut rng, n - index);
        if draw < rewrite {
            rewrite -= 1;
            Some(Edit::Rewrite {
                path: path(index, n),
                index,
                size: sizes.size(index),
            })
        } else if draw < rewrite + remove {
            remove -= 1;
            Some(Edit::Remove {
                path: path(index, n),
            })
        } else {
            None
        }
    })
}

/// The files the change adds (`new-<change seed>-<k>.bin`, 0-4096 bytes),
/// as many as it removes, each in the folder of a file drawn at random: a
/// few hundredths of a percent of the tree, held.
pub(crate) fn added_edits(params: &DatasetParams, change_seed: u64) -> Vec<Edit> {
    let n = count(params.scale);
    let (_, add) = change_counts(n);
    let keys = Keys::change_of(DatasetProfile::TinyFiles, params.seed, change_seed);
    let mut rng = keys.stream(Tag::ChangeChoice, 1);
    (0..add)
        .map(|k| {
            let beside = stream::below(&mut rng, n);
            Edit::Add {
                path: format!("{}/new-{change_seed}-{k}.bin", folder(beside, n)),
                index: k,
                size: stream::below(&mut rng, MAX_BYTES + 1),
            }
        })
        .collect()
}

/// The whole change, held: for trees small enough to hold it.
pub fn edits(params: &DatasetParams, change_seed: u64) -> Vec<Edit> {
    let sizes = Sizes::of(params);
    let mut edits: Vec<Edit> = in_place_edits(params, change_seed, &sizes).collect();
    edits.extend(added_edits(params, change_seed));
    edits
}

/// Writes the tree of `params` under `out` (prepared, with room checked)
/// and passes its manifest, entry by entry in manifest order, to
/// `manifest`: the same tree and the same entries as writing [`tree`], but
/// neither the files' list nor the manifest is held (a million files and
/// more, issue 31). Files are written in path order on every core; the
/// folders, a few thousand, are made first.
pub(crate) fn write_streamed(
    out: &Path,
    params: &DatasetParams,
    manifest: &mut ManifestFileWriter,
    progress: Progress,
) -> Result<(), DatasetError> {
    let n = count(params.scale);
    let sizes = Sizes::of(params);
    let keys = Keys::content_of(DatasetProfile::TinyFiles, params.seed);
    // Every leaf holds a file: the folders above a name in each leaf are
    // those above every file.
    let leaves: Vec<String> = (0..n.div_ceil(FAN_OUT))
        .map(|leaf| format!("{}/-", folder(leaf * FAN_OUT, n)))
        .collect();
    let dirs = crate::tree::parent_dirs(leaves.iter().map(String::as_str));
    drop(leaves);
    for d in &dirs {
        generate::make_dir(&out.join(d))?;
    }
    let total = sizes.total();
    let specs = (0..n).map(|index| {
        Ok(FileSpec {
            path: path(index, n),
            class: Class::Small,
            index,
            size: sizes.size(index),
            copies: Vec::new(),
        })
    });
    let job = |spec: FileSpec, worker: &mut Worker| {
        let sha256 = generate::write_file(out, &spec, &keys, worker)?;
        Ok(generate::file_entry(spec.path, spec.size, sha256))
    };
    // Paths grow with the index, so files come in manifest order; each
    // folder goes just before the first path after it.
    let mut dirs = dirs.into_iter().peekable();
    let mut sink = |file: ManifestEntry| {
        while let Some(d) = dirs.next_if(|d| *d < file.path) {
            manifest.push(&generate::dir_entry(d))?;
        }
        manifest.push(&file)
    };
    ordered(specs, pool::threads(1), job, &mut sink, total, progress)?;
    for d in dirs {
        manifest.push(&generate::dir_entry(d))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_one_is_a_million_files_in_folders_of_at_most_256() {
        let n = count(1.0);
        assert_eq!(n, 1_000_000);
        assert_eq!(count(0.01), 10_000);
        assert_eq!(path(0, n), "files/00/00/000000.bin");
        assert_eq!(path(999_999, n), "files/0f/42/999999.bin");
        assert_eq!(path(0, 10_000), "files/00/0000.bin");
        // Entries per folder (files and folders), counted from the paths.
        let files: Vec<String> = (0..n).map(|i| path(i, n)).collect();
        let dirs = crate::tree::parent_dirs(files.iter().map(String::as_str));
        let mut per_folder = std::collections::BTreeMap::<&str, u64>::new();
        for p in files.iter().chain(&dirs) {
            if let Some(cut) = p.rfind('/') {
                *per_folder.entry(&p[..cut]).or_default() += 1;
            }
        }
        assert!(per_folder.values().all(|&c| c <= FAN_OUT), "{per_folder:?}");
        // 3907 leaves (the last one partial) under 16 folders under files/.
        assert_eq!(dirs.len(), 1 + 16 + 3907);
        assert_eq!(per_folder["files"], 16);
    }

    #[test]
    fn sizes_are_0_to_4_kib_with_some_empty() {
        let s: Vec<u64> = sizes(10_000).collect();
        assert_eq!(s.iter().filter(|&&b| b == 0).count(), 200);
        assert!(s.iter().all(|&b| b < MAX_BYTES));
        // Uniform law on 1..4096 for 98% of the files: about 2 KiB each.
        let mean = s.iter().sum::<u64>() as f64 / 9_800.0;
        assert!((mean - 2048.0).abs() < 5.0, "{mean}");
    }
}
