//! The seeded dataset of SPEC section 3: its layout (pure arithmetic, also
//! used by the host to print totals), generation, the 5% change, tree
//! scanning with SHA-256, and verification against a manifest.
//!
//! - [`layout`]: totals by class, without touching a disk (see `layout.rs`
//!   for the exact arithmetic and the scale-1 table).
//! - [`generate`]: writes the tree on every core, hashing while writing.
//! - [`apply_change`] / [`apply_change_from`]: the deterministic 5% change;
//!   [`change_plan`] says which files and regions it touches.
//! - [`scan`] / [`verify`]: hash a tree on every core; compare with a manifest.
//! - [`fidelity::write_fixture`] / [`scan_metadata`] / [`verify_fidelity`]:
//!   a small seeded tree of modes, mtimes, links, holes, odd names and
//!   xattrs, and a verify that says which of those a restore kept.
//! - [`history`]: the synthetic git history of the second study (SPEC 6).
//! - [`tree_change`]: a seeded change of any tree, planned from its
//!   manifest; [`mod@sample`]: a seeded subset of any tree's files.
//! - [`unpack_file`]: a dataset archive (tar, zip, .deb) unpacked safely as
//!   the tree, bounded in bytes and entries (see `unpack/`).
//!
//! Same [`DatasetParams`]: byte-identical tree and identical manifest on any
//! machine (ChaCha8 streams per file, integer layout; see `stream.rs`).
//! Errors are `io::Error`s carrying a [`DatasetError`] whose message says
//! what went wrong and what to do (e.g. a full disk names the path and says
//! to free space or lower `--scale`).

mod change;
mod error;
pub mod fidelity;
mod generate;
mod hashed_manifest;
pub mod history;
pub mod layout;
mod manifest_file;
mod metadata;
mod metadata_check;
mod open_folders;
mod ordered;
mod pool;
pub mod profile;
pub mod sample;
mod sample_copy;
mod sample_file;
mod scan;
mod scan_metadata_stream;
mod scan_stream;
mod sorted_runs;
mod sorted_walk;
pub mod space;
pub mod stream;
pub mod tree;
pub mod tree_change;
pub mod unpack;
mod verify;

pub use change::{ChangePlan, ChangedRegion};
pub use error::{DatasetError, UnpackBound};
pub use hashed_manifest::{HashedManifestWriter, SortBudget};
pub use labrun_evidence::DatasetProfile;
pub use manifest_file::{
    ManifestFileWriter, WrittenManifest, check_outside, default_manifest_path, read_manifest,
    scan_to_file, scan_to_file_with_progress, write_manifest,
};
pub use metadata_check::compare_metadata;
pub use profile::{ChangeExtent, change_extent, change_plan};
pub use profile::{Footprint, FootprintRow, footprint};
pub use sample::{copy_sample, copy_sample_from_file, sample, sample_to_file};
pub use tree_change::{
    ChangeSummary, TreeChange, apply_tree_change, apply_tree_change_each, apply_tree_change_from,
};
pub use unpack::{UnpackLimits, Unpacked, list_file, list_stream, unpack_file};
pub use verify::{
    Merge, NAMED_DIFFERENCES, Unsorted, compare, compare_against_file, verify_against_file,
};

use labrun_evidence::{Manifest, VerifyOutcome};
use std::io;
use std::path::Path;

/// What makes a dataset: same params, byte-identical tree on any machine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DatasetParams {
    pub seed: u64,
    /// 1.0 = the profile's full size (the published 6.10 GB composition).
    pub scale: f64,
    /// The dataset's shape (see [`profile`]).
    pub profile: DatasetProfile,
}

impl DatasetParams {
    /// The default seed of the agent's commands and of labs that name none.
    pub const DEFAULT_SEED: u64 = 1;

    /// The published profile's params.
    pub fn published(seed: u64, scale: f64) -> DatasetParams {
        DatasetParams {
            seed,
            scale,
            profile: DatasetProfile::Published,
        }
    }

    /// Refuses a scale outside [`layout::MIN_SCALE`]..=[`layout::MAX_SCALE`]
    /// (or not a number).
    pub fn validate(&self) -> Result<(), DatasetError> {
        let ok =
            self.scale.is_finite() && (layout::MIN_SCALE..=layout::MAX_SCALE).contains(&self.scale);
        if ok {
            Ok(())
        } else {
            Err(DatasetError::InvalidScale { scale: self.scale })
        }
    }
}

/// Totals by class, computed without touching a disk.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Layout {
    pub small_files: u64,
    pub small_bytes: u64,
    pub large_random_files: u64,
    pub large_random_bytes: u64,
    pub low_entropy_files: u64,
    pub low_entropy_bytes: u64,
    pub duplicate_files: u64,
    pub duplicate_bytes: u64,
}

impl Layout {
    pub fn total_files(&self) -> u64 {
        self.small_files + self.large_random_files + self.low_entropy_files + self.duplicate_files
    }
    pub fn total_bytes(&self) -> u64 {
        self.small_bytes + self.large_random_bytes + self.low_entropy_bytes + self.duplicate_bytes
    }
}

/// Progress callback: (bytes done, bytes total).
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64);

/// The published profile's totals by class at `params.scale` (the seed
/// changes which path gets which size, never a total). Exact: [`generate`]
/// writes exactly these bytes. Any profile's totals: [`footprint`].
pub fn layout(params: &DatasetParams) -> Layout {
    let s = layout::scaled(params.scale);
    let sizes = layout::small_sizes(s.small_files);
    let (mut dup_small_files, mut dup_small_bytes) = (0, 0);
    for (rank, &size) in sizes.iter().enumerate() {
        if layout::is_duplicated_small_rank(rank as u64) {
            dup_small_files += 1;
            dup_small_bytes += size;
        }
    }
    Layout {
        small_files: s.small_files,
        small_bytes: sizes.iter().sum(),
        large_random_files: layout::LARGE_RANDOM_FILES,
        large_random_bytes: layout::LARGE_RANDOM_FILES * s.large_random_bytes,
        low_entropy_files: layout::LOW_ENTROPY_FILES,
        low_entropy_bytes: layout::LOW_ENTROPY_FILES * s.low_entropy_bytes,
        duplicate_files: dup_small_files + layout::DUPLICATE_LARGE_RANDOM,
        duplicate_bytes: dup_small_bytes + layout::DUPLICATE_LARGE_RANDOM * s.large_random_bytes,
    }
}

/// Generates the tree under `out` (which must not exist or be empty) and
/// returns its manifest, sorted.
pub fn generate(out: &Path, params: &DatasetParams, progress: Progress) -> io::Result<Manifest> {
    Ok(profile::generate(out, params, progress)?)
}

/// As [`generate`], writing the manifest to the file `manifest` (as
/// [`write_manifest`] would) rather than returning it: the tiny-files
/// tree's million files are never held (issue 31).
pub fn generate_to_file(
    out: &Path,
    params: &DatasetParams,
    manifest: &Path,
    progress: Progress,
) -> io::Result<WrittenManifest> {
    Ok(profile::generate_to_file(out, params, manifest, progress)?)
}

/// Applies the 5% change to a tree made by [`generate`] with the same params,
/// and returns the new manifest, sorted (the whole tree is rescanned; see
/// [`apply_change_from`] to skip that).
pub fn apply_change(
    dir: &Path,
    params: &DatasetParams,
    change_seed: u64,
    progress: Progress,
) -> io::Result<Manifest> {
    Ok(profile::apply_change(dir, params, change_seed, progress)?)
}

/// As [`apply_change`], but takes the tree's manifest from before the change
/// (from [`generate`], or a previous change) and re-hashes only the changed
/// files: much less reading.
pub fn apply_change_from(
    dir: &Path,
    params: &DatasetParams,
    change_seed: u64,
    base: &Manifest,
    progress: Progress,
) -> io::Result<Manifest> {
    Ok(profile::apply_change_from(
        dir,
        params,
        change_seed,
        base,
        progress,
    )?)
}

/// As [`apply_change_from`], with the manifest before the change read from
/// the file `base` and the new one written to `out`, neither held whole
/// (a tree of millions of files, issue 31). `out` may be `base`: it is
/// replaced once the new manifest is complete.
pub fn apply_change_from_file(
    dir: &Path,
    params: &DatasetParams,
    change_seed: u64,
    base: &Path,
    out: &Path,
    progress: Progress,
) -> io::Result<()> {
    Ok(profile::apply_change_from_file(
        dir,
        params,
        change_seed,
        base,
        out,
        progress,
    )?)
}

/// As [`apply_change`], writing the new manifest to the file `out` as the
/// tree is rescanned: for a file profile (tiny-files, media) neither the
/// change nor a manifest is held (issue 31).
pub fn apply_change_to_file(
    dir: &Path,
    params: &DatasetParams,
    change_seed: u64,
    out: &Path,
    progress: Progress,
) -> io::Result<WrittenManifest> {
    Ok(profile::apply_change_to_file(
        dir,
        params,
        change_seed,
        out,
        progress,
    )?)
}

/// Hashes every entry under `dir` on all cores. The manifest is built in
/// order as the tree is read (see [`scan_each`] to hold none of it).
pub fn scan(dir: &Path) -> io::Result<Manifest> {
    let mut manifest = Manifest::default();
    scan_each(dir, &mut |e| {
        manifest.entries.push(e);
        Ok(())
    })?;
    Ok(manifest)
}

/// Hashes every entry under `dir` on all cores and passes each to `sink`
/// in manifest order (sorted by path), holding a bounded window of them:
/// memory does not grow with the tree. An error of the sink stops the scan
/// and is returned.
pub fn scan_each(
    dir: &Path,
    sink: &mut dyn FnMut(labrun_evidence::ManifestEntry) -> Result<(), DatasetError>,
) -> io::Result<()> {
    Ok(scan_stream::scan_each(dir, sink)?)
}

/// As [`scan`], reporting (bytes hashed, bytes to hash).
pub fn scan_with_progress(dir: &Path, progress: Progress) -> io::Result<Manifest> {
    Ok(scan::scan(dir, scan::Detail::Content, progress)?)
}

/// As [`scan`], also recording each entry's metadata fields: mtimes of
/// files and directories, hard-link groups, `user.` xattrs, holes. For the
/// fidelity fixture and its restores; the published dataset's manifests
/// stay content-only (and their scan as fast).
pub fn scan_metadata(dir: &Path) -> io::Result<Manifest> {
    Ok(scan::scan(dir, scan::Detail::Metadata, &mut |_, _| {})?)
}

/// As [`scan_metadata`], reporting (bytes hashed, bytes to hash).
pub fn scan_metadata_with_progress(dir: &Path, progress: Progress) -> io::Result<Manifest> {
    Ok(scan::scan(dir, scan::Detail::Metadata, progress)?)
}

/// As [`scan_metadata_with_progress`], writing the manifest to the file
/// `path` (the bytes [`write_manifest`] of [`scan_metadata`] writes) as the
/// tree is read: a tree of millions of files is never held, only the names
/// of files with more than one link (see `scan_metadata_stream.rs`).
pub fn scan_metadata_to_file(
    dir: &Path,
    path: &Path,
    progress: Progress,
) -> io::Result<WrittenManifest> {
    Ok(scan_metadata_stream::scan_metadata_to_file(
        dir, path, progress,
    )?)
}

/// Compares the tree under `dir` with `expected` (which need not be
/// sorted), as the tree is read: the tree's own manifest is never held.
pub fn verify(dir: &Path, expected: &Manifest) -> io::Result<VerifyOutcome> {
    let mut exp: Vec<&labrun_evidence::ManifestEntry> = expected.entries.iter().collect();
    exp.sort_by(|a, b| a.path.cmp(&b.path));
    match verify::verify_stream(dir, exp.into_iter().map(Ok)) {
        Ok(out) => Ok(out),
        Err(verify::Stop::Failed(e)) => Err(e.into()),
        // Sorted just above.
        Err(verify::Stop::Unsorted) => unreachable!("sorted input"),
    }
}

/// As [`verify`] (content decides `passed`), plus one `metadata` verdict per
/// kind: preserved, lost (with the first path and what differed) or not
/// tested. `expected` is what [`fidelity::write_fixture`] returned (or any
/// metadata scan); the tree under `dir` is scanned with metadata.
pub fn verify_fidelity(dir: &Path, expected: &Manifest) -> io::Result<VerifyOutcome> {
    let actual = scan_metadata(dir)?;
    let mut outcome = compare(expected, &actual);
    outcome.metadata = compare_metadata(expected, &actual);
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_one_matches_the_published_totals() {
        let l = layout(&DatasetParams::published(1, 1.0));
        assert_eq!(l.small_files, 40_000);
        assert_eq!(l.large_random_files + l.low_entropy_files, 9);
        assert_eq!(l.low_entropy_bytes, 2_680_000_000);
        let total = l.total_bytes() as f64;
        assert!((total / 6.10e9 - 1.0).abs() < 0.005, "total {total}");
        let low = l.low_entropy_bytes as f64;
        assert!((low / 2.68e9 - 1.0).abs() < 0.005, "low-entropy {low}");
        // "about 1.10 GB" of small files, "about 0.90 GB" of duplicates
        assert!((1.0e9..1.2e9).contains(&(l.small_bytes as f64)));
        assert!((0.85e9..0.95e9).contains(&(l.duplicate_bytes as f64)));
        // The exact figures documented in layout.rs.
        assert_eq!(l.small_bytes, 1_072_091_974);
        assert_eq!(l.duplicate_files, 8_002);
        assert_eq!(l.duplicate_bytes, 924_366_376);
        assert_eq!(l.total_bytes(), 6_096_458_350);
    }

    #[test]
    fn totals_scale_proportionally() {
        let one = layout(&DatasetParams::published(1, 1.0)).total_bytes() as f64;
        for scale in [0.001, 0.01, 0.1] {
            let l = layout(&DatasetParams::published(9, scale));
            let ratio = l.total_bytes() as f64 / (one * scale);
            assert!((ratio - 1.0).abs() < 0.01, "scale {scale}: {ratio}");
        }
        let tiny = layout(&DatasetParams::published(1, 0.0001));
        assert!(tiny.small_files >= 1 && tiny.duplicate_files >= 1);
        assert!(tiny.large_random_bytes > 0 && tiny.low_entropy_bytes > 0);
    }

    #[test]
    fn scale_is_validated() {
        for scale in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e-6, 101.0] {
            assert!(
                DatasetParams::published(1, scale).validate().is_err(),
                "{scale}"
            );
        }
        assert!(DatasetParams::published(1, 0.05).validate().is_ok());
    }
}
