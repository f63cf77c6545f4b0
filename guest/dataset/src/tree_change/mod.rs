//! A seeded change of any tree (a user's folder, an unpacked archive), for
//! issue 31: the published 5% change (`change.rs`) knows the synthetic
//! tree's layout; this one knows only the tree's manifest, and is a pure
//! function of (manifest, fraction, seed), so every tool cycle that applies
//! it to its own copy of the pristine tree gets the same tree and manifest.
//!
//! # The mix, and why
//!
//! About `fraction` of the tree's file bytes is written, the way the
//! published change writes its 5%:
//!
//! - **files under 1 MiB** ([`WHOLE_FILE_LIMIT`]): `round(fraction * n)` of
//!   the `n` non-empty ones, a seeded uniform choice (the lowest ranks,
//!   below), are rewritten whole with new content of the same size (the
//!   published change's 2,000 of 40,000 small files). A uniform choice of files writes `fraction` of the
//!   small files' bytes on average, whatever their size distribution;
//! - **files of 1 MiB or more**: each gets one contiguous region of
//!   `fraction` of its size overwritten at a seeded uniform offset (the
//!   published change's region in each of its 9 large files). Every large
//!   file is touched so that the large files' bytes are written at the same
//!   `fraction`; choosing them with probability `fraction` as well would
//!   write `fraction²` of them, and a tree of a few big files (an ISO, a
//!   database dump) would see almost no change;
//! - **structure**: about `fraction / 5` of the file count is removed, as
//!   many are renamed (moved to a seeded folder, so a tool must find the
//!   same content under a new path) and as many files are added with new
//!   content (each the size of a seeded file of the tree, at most 1 MiB):
//!   at least one of each when the tree has enough files. Real changes add
//!   and delete files; the published change never does, so a tool's
//!   handling of a vanished or moved file was never measured. A fifth of
//!   the fraction keeps the written bytes near `fraction`.
//!
//! New content is seeded ChaCha8 bytes ([`crate::stream`]), random, so no
//! compressing tool is flattered by it. Rewritten, overwritten and added
//! files, and the folders whose entries changed, get one fixed, seeded
//! modification time ([`TreeChange::mtime`], in 2010-2019 with seeded
//! nanoseconds: never a file's own time in practice, so a tool that compares
//! size and mtime still sees the change) so that metadata manifests match
//! across cycles too; added files get mode 0o644.
//!
//! Only regular files that are not one name of a hard-link group are chosen
//! (rewriting one name of a group would change the others); never links,
//! never folders. A content manifest (from [`crate::scan`]) does not say
//! which files are hard links: [`apply_tree_change`] checks each target's
//! link count and refuses a hard-linked one, naming it, before writing
//! anything; plan from [`crate::scan_metadata`]'s manifest for a tree that
//! may hold hard links.
//!
//! Small trees: with no eligible file (empty, or only links and hard links)
//! the change is empty ([`ChangeSummary::eligible_files`] is 0 and
//! [`ChangeSummary::note`] says so); with fewer than 3 files nothing is
//! removed or renamed (the tree would lose the files the change writes); a
//! tree whose uniform choice rewrites nothing and that has no large file has
//! one small file rewritten, so a tree with content always changes.
//!
//! Undoing it: [`TreeChange::touched`] is what `reset_tree`'s first step
//! copies back (rewritten files whole, regions in place); its second step,
//! the walk of both trees, restores removed files, removes added and renamed
//! ones, brings renamed ones back and resets the folders' mtimes.
//!
//! Which files: every eligible file has a seeded rank, the first 8 bytes of
//! SHA-256(`labrun-dataset/v3/tree-change/rank`, seed, path) (ties go to
//! the path order). The lowest ranks are removed, the next as many renamed,
//! and of the small files left the lowest ranks are rewritten: a uniform
//! choice, as the seeded permutation of v2 was, but one a pass over the tree
//! can make holding only the files it keeps. The fraction only sets the
//! counts, so a larger fraction's change removes every file a smaller one's
//! removes. Where new paths go and how large added files are come from
//! ChaCha8 streams of a key of the change's own (SHA-256 of
//! `labrun-dataset/v3/tree-change` and the seed; v3 since ranks replaced
//! the permutation: the same seed changes other files than in v2).
//!
//! Planning: [`TreeChange::plan_from`] reads the tree's entries, in path
//! order, a few times from an [`EntrySource`] (a [`ManifestFile`] for an
//! agent's tree of millions of files) and holds what the change touches,
//! never the tree; [`TreeChange::plan`] plans the same change from a
//! manifest in memory.

use crate::change::{ChangePlan, ChangedRegion};
use crate::stream::{self, StreamRng};
use labrun_evidence::{ChangeSpec, Manifest, Mtime};
use rand_chacha::rand_core::SeedableRng;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;

mod apply;
mod choose;
mod new_paths;
mod pick;
mod plan;
mod rank;
mod source;

pub(crate) use apply::set_mtime;
pub use apply::{apply_tree_change, apply_tree_change_each, apply_tree_change_from};
pub use source::{Entries, EntrySource, ManifestFile};

/// Files below this size are rewritten whole; larger ones get a region.
pub const WHOLE_FILE_LIMIT: u64 = 1 << 20;

/// Mode of the files the change adds.
pub const ADDED_MODE: u32 = 0o644;

/// The seeded mtime falls in 2010-01-01 .. 2020-01-01.
const MTIME_BASE: i64 = 1_262_304_000;
const MTIME_SPAN: u64 = 3_652 * 86_400;

/// What the change does to a tree; see the module docs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TreeChange {
    /// Files rewritten whole, same size, new content; sorted.
    pub rewritten: Vec<String>,
    /// The size of each [`TreeChange::rewritten`] file, in the same order.
    pub rewritten_sizes: Vec<u64>,
    /// One region overwritten in each large file, sorted by path.
    pub regions: Vec<ChangedRegion>,
    /// New files (path, size); sorted.
    pub added: Vec<(String, u64)>,
    /// Files removed; sorted.
    pub removed: Vec<String>,
    /// The size of each [`TreeChange::removed`] file, in the same order.
    pub removed_sizes: Vec<u64>,
    /// Files moved (from, to); sorted by `from`.
    pub renamed: Vec<(String, String)>,
    /// The spec's seed: the new content's key.
    pub seed: u64,
    /// The mtime of every file the change writes and folder it changes.
    pub mtime: Mtime,
    /// Regular files the change could choose from (not hard links).
    pub eligible_files: u64,
    /// The pristine tree's file bytes.
    pub tree_bytes: u64,
}

/// What a change touched, for the evidence.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ChangeSummary {
    pub files_rewritten: u64,
    pub regions: u64,
    pub files_added: u64,
    pub files_removed: u64,
    pub files_renamed: u64,
    /// Rewritten, overwritten and added bytes.
    pub bytes_written: u64,
    pub bytes_removed: u64,
    /// Regular files the change could choose from: 0 means an empty change.
    pub eligible_files: u64,
    /// The pristine tree's file bytes (`bytes_written` is a share of it).
    pub tree_bytes: u64,
}

impl ChangeSummary {
    /// Why a change is empty, for logs and the report; `None` otherwise.
    pub fn note(&self) -> Option<&'static str> {
        (self.eligible_files == 0).then_some(
            "the tree has no regular file the change may touch (it is empty, or holds only \
             folders, symlinks and hard links): nothing was changed",
        )
    }
}

/// Stream tags of the change's key (the nonce's top byte, as in `stream`).
#[derive(Debug, Clone, Copy)]
#[repr(u8)]
enum Tag {
    Rewrite = 1,
    Region = 2,
    Added = 4,
    /// Which folders and sizes new paths get (files are chosen by rank).
    Choice = 0x20,
    /// Each large file's region offset (indexed by manifest position).
    Offset = 0x21,
    Mtime = 0x22,
}

fn stream_of(seed: u64, tag: Tag, index: u64) -> StreamRng {
    let mut h = Sha256::new();
    h.update(b"labrun-dataset/v3/tree-change");
    h.update(seed.to_le_bytes());
    let mut rng = StreamRng::from_seed(h.finalize().into());
    rng.set_stream(((tag as u64) << 56) | (index & ((1 << 56) - 1)));
    rng
}

fn round(x: f64) -> u64 {
    x.round().max(0.0) as u64
}

impl TreeChange {
    /// Plans the change of the tree `pristine` describes: the change
    /// [`TreeChange::plan_from`] plans from the same entries in a file. A
    /// `spec` that [`ChangeSpec::validate`] refuses plans an empty change
    /// (and [`apply_tree_change`] refuses it).
    pub fn plan(pristine: &Manifest, spec: &ChangeSpec) -> TreeChange {
        match TreeChange::plan_from(pristine, spec) {
            Ok(change) => change,
            // A manifest in memory yields its entries without error.
            Err(e) => unreachable!("planning from a manifest in memory: {e}"),
        }
    }

    /// What `reset_tree`'s first step copies back: the rewritten files and
    /// the regions (the walk of its second step undoes the rest).
    pub fn touched(&self) -> ChangePlan {
        ChangePlan {
            small_files: self.rewritten.clone(),
            regions: self.regions.clone(),
        }
    }

    pub fn summary(&self) -> ChangeSummary {
        let rewritten: u64 = self.rewritten_sizes.iter().sum();
        let regions: u64 = self.regions.iter().map(|r| r.len).sum();
        let added: u64 = self.added.iter().map(|(_, size)| size).sum();
        ChangeSummary {
            files_rewritten: self.rewritten.len() as u64,
            regions: self.regions.len() as u64,
            files_added: self.added.len() as u64,
            files_removed: self.removed.len() as u64,
            files_renamed: self.renamed.len() as u64,
            bytes_written: rewritten + regions + added,
            bytes_removed: self.removed_sizes.iter().sum(),
            eligible_files: self.eligible_files,
            tree_bytes: self.tree_bytes,
        }
    }

    /// Nothing to do.
    pub fn is_empty(&self) -> bool {
        self.rewritten.is_empty()
            && self.regions.is_empty()
            && self.added.is_empty()
            && self.removed.is_empty()
            && self.renamed.is_empty()
    }

    /// Folders whose entries the change adds, removes or moves.
    fn changed_dirs(&self) -> BTreeSet<&str> {
        let mut dirs = BTreeSet::new();
        for p in &self.removed {
            dirs.insert(parent(p));
        }
        for (from, to) in &self.renamed {
            dirs.insert(parent(from));
            dirs.insert(parent(to));
        }
        for (p, _) in &self.added {
            dirs.insert(parent(p));
        }
        dirs
    }
}

/// The folder of a relative path ("" for the root).
fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

fn seeded_mtime(seed: u64) -> Mtime {
    let mut rng = stream_of(seed, Tag::Mtime, 0);
    let secs = MTIME_BASE + stream::below(&mut rng, MTIME_SPAN) as i64;
    let nanos = stream::below(&mut rng, 1_000_000_000) as u32;
    Mtime { secs, nanos }
}
