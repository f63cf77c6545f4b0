//! Hashes a tree on every core and hands its entries over in manifest
//! order, holding a bounded window of them (`ordered.rs`): memory does not
//! grow with the number of files. The walk ([`SortedWalk`]) finds entries
//! in order; folders and links pass through, files are hashed.

use crate::error::DatasetError;
use crate::ordered::ordered;
use crate::pool::{self, Worker};
use crate::sorted_walk::{self, Found, SortedWalk};
use labrun_evidence::{EntryKind, ManifestEntry};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::path::Path;

/// Hashing threads at least: reads of small files on a cold cache wait on
/// the disk more than on the CPU, so more requests in flight than cores pay.
pub(crate) const MIN_THREADS: usize = 4;

/// Passes every entry under `dir` to `sink`, in manifest order. The first
/// error (the walk's, a file's, or the sink's) stops everything and is
/// returned.
pub(crate) fn scan_each(
    dir: &Path,
    sink: &mut dyn FnMut(ManifestEntry) -> Result<(), DatasetError>,
) -> Result<(), DatasetError> {
    scan_each_with_progress(dir, sink, 0, &mut |_, _| {})
}

/// As [`scan_each`], reporting (bytes hashed, `total`) to `progress`;
/// `total` is the caller's estimate of the tree's file bytes (the walk
/// finds files as it goes, so it cannot know it first).
pub(crate) fn scan_each_with_progress(
    dir: &Path,
    sink: &mut dyn FnMut(ManifestEntry) -> Result<(), DatasetError>,
    total: u64,
    progress: crate::Progress,
) -> Result<(), DatasetError> {
    let walk = SortedWalk::new(dir)?;
    let job = |found: Found, worker: &mut Worker| match found {
        Found::Ready { entry, .. } => Ok(entry),
        Found::File { rel, abs } => hash_file(rel, &abs, worker),
    };
    ordered(walk, pool::threads(MIN_THREADS), job, sink, total, progress)
}

/// A file's entry: its mode as opened, and the bytes read and their SHA-256
/// (what was hashed, even if the file changed since it was listed).
fn hash_file(rel: String, abs: &Path, worker: &mut Worker) -> Result<ManifestEntry, DatasetError> {
    let mut file = File::open(abs).map_err(|e| DatasetError::io("opening", abs, e))?;
    let md = file
        .metadata()
        .map_err(|e| DatasetError::io("reading the metadata of", abs, e))?;
    // Only a hint (it doubles the read-ahead window); failure changes nothing.
    let _ = rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::Sequential);
    let mut hasher = Sha256::new();
    let size = crate::scan::hash_into(&mut file, abs, u64::MAX, &mut hasher, worker)?;
    Ok(ManifestEntry {
        path: rel,
        kind: EntryKind::File,
        size,
        mode: sorted_walk::file_mode(&md),
        sha256: hex::encode(hasher.finalize()),
        ..ManifestEntry::default()
    })
}
