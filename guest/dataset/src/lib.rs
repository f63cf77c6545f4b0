//! The seeded dataset of SPEC section 3: its layout (pure arithmetic, also
//! used by the host to print totals), generation, the 5% change, tree
//! scanning with SHA-256, and verification against a manifest.
//!
//! STATUS: API skeleton. Every function below returns an error until the
//! dataset work lands; the signatures are the contract the agent codes to.

use labrun_evidence::{Manifest, VerifyOutcome};
use std::io;
use std::path::Path;

/// What makes a dataset: same params, byte-identical tree on any machine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DatasetParams {
    pub seed: u64,
    /// 1.0 = the published 6.10 GB composition.
    pub scale: f64,
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

pub fn layout(_params: &DatasetParams) -> Layout {
    Layout::default()
}

/// Generates the tree under `out` (which must not exist or be empty) and
/// returns its manifest, sorted.
pub fn generate(_out: &Path, _params: &DatasetParams, _progress: Progress) -> io::Result<Manifest> {
    Err(not_yet())
}

/// Applies the 5% change to a tree made by [`generate`] with the same params,
/// and returns the new manifest, sorted.
pub fn apply_change(
    _dir: &Path,
    _params: &DatasetParams,
    _change_seed: u64,
    _progress: Progress,
) -> io::Result<Manifest> {
    Err(not_yet())
}

/// Hashes every entry under `dir` on all cores.
pub fn scan(_dir: &Path) -> io::Result<Manifest> {
    Err(not_yet())
}

/// Compares the tree under `dir` with `expected`.
pub fn verify(_dir: &Path, _expected: &Manifest) -> io::Result<VerifyOutcome> {
    Err(not_yet())
}

fn not_yet() -> io::Error {
    io::Error::other("dataset generation is not built yet")
}
