//! The third pass of a plan: the paths of the removed and renamed files, the
//! folders and sizes the choice stream drew (by index, as the pass meets
//! them), the large files' regions, and the lowest keys of the small files
//! left (the rewritten ones, named in the next pass).

use super::choose::{Draws, Structural, each, eligible, large, small};
use super::rank::{Key, Lowest, Ranks};
use super::source::EntrySource;
use super::{Tag, round, stream_of};
use crate::change::ChangedRegion;
use crate::stream;
use labrun_evidence::{ChangeSpec, EntryKind, ManifestEntry};
use std::collections::BTreeMap;
use std::io;

/// Entries pass 3 picks by position or index, filled as the pass meets them.
pub(super) struct Picks {
    /// Position -> path: the removed and renamed files.
    structural: BTreeMap<u64, Option<String>>,
    /// Folder index (0 the root) -> path.
    dirs: BTreeMap<u64, Option<String>>,
    /// Eligible file index -> size.
    likes: BTreeMap<u64, Option<u64>>,
}

impl Picks {
    fn new(structural: &Structural, draws: &Draws) -> Picks {
        let mut dirs: BTreeMap<u64, Option<String>> = draws
            .renamed_dirs
            .iter()
            .chain(draws.added.iter().map(|(_, dir)| dir))
            .map(|&dir| (dir, None))
            .collect();
        if let Some(root) = dirs.get_mut(&0) {
            *root = Some(String::new());
        }
        Picks {
            structural: structural
                .removed
                .iter()
                .chain(&structural.renamed)
                .map(|&(position, _)| (position, None))
                .collect(),
            dirs,
            likes: draws.added.iter().map(|&(like, _)| (like, None)).collect(),
        }
    }

    /// Pass 3 met every entry it was to pick, unless the source yielded
    /// other entries than pass 1 counted.
    fn check_complete(&self) -> io::Result<()> {
        let complete = self.structural.values().all(Option::is_some)
            && self.dirs.values().all(Option::is_some)
            && self.likes.values().all(Option::is_some);
        if complete {
            Ok(())
        } else {
            Err(changed_while_planning())
        }
    }

    pub fn path_at(&self, position: u64) -> io::Result<String> {
        self.structural
            .get(&position)
            .cloned()
            .flatten()
            .ok_or_else(changed_while_planning)
    }

    pub fn dir(&self, index: u64) -> io::Result<String> {
        self.dirs
            .get(&index)
            .cloned()
            .flatten()
            .ok_or_else(changed_while_planning)
    }

    pub fn like(&self, index: u64) -> io::Result<u64> {
        self.likes
            .get(&index)
            .copied()
            .flatten()
            .ok_or_else(changed_while_planning)
    }
}

/// The passes read different trees: a manifest file replaced while the
/// change was planned.
fn changed_while_planning() -> io::Error {
    io::Error::other(
        "the tree's entries changed between two reads while its change was planned \
         (was the manifest file rewritten?): plan again from a manifest nothing writes",
    )
}

/// The region of a large file: `fraction` of it at a seeded offset, from a
/// stream indexed by its position in the sorted manifest.
fn region(e: &ManifestEntry, position: u64, spec: &ChangeSpec) -> ChangedRegion {
    let size = e.size;
    let len = round(size as f64 * spec.fraction).clamp(1, size);
    let offset = stream::below(
        &mut stream_of(spec.seed, Tag::Offset, position),
        size - len + 1,
    );
    ChangedRegion {
        path: e.path.clone(),
        offset,
        len,
    }
}

/// What pass 3 found.
pub(super) struct Picked {
    pub picks: Picks,
    /// Every large file that is neither removed nor renamed, in path order.
    pub regions: Vec<ChangedRegion>,
    /// The highest key of the small files to rewrite (none: no rewrite).
    pub rewrite_last: Option<Key>,
}

/// Pass 3; `rewrite_count` of the small files left are to be rewritten.
pub(super) fn pick(
    source: &dyn EntrySource,
    spec: &ChangeSpec,
    ranks: &Ranks,
    structural: &Structural,
    draws: &Draws,
    rewrite_count: usize,
) -> io::Result<Picked> {
    let mut picks = Picks::new(structural, draws);
    let mut regions = Vec::new();
    let mut rewrite = Lowest::new(rewrite_count);
    // The root is folder 0; the first folder entry is 1.
    let (mut dir_index, mut eligible_index) = (1u64, 0u64);
    each(source, |position, e| {
        if e.kind == EntryKind::Dir {
            if let Some(path) = picks.dirs.get_mut(&dir_index) {
                *path = Some(e.path.clone());
            }
            dir_index += 1;
        }
        if !eligible(e) {
            return;
        }
        if let Some(size) = picks.likes.get_mut(&eligible_index) {
            *size = Some(e.size);
        }
        eligible_index += 1;
        if let Some(path) = picks.structural.get_mut(&position) {
            *path = Some(e.path.clone());
        } else if small(e.size) {
            rewrite.offer(ranks.key(&e.path, position));
        } else if large(e.size) {
            regions.push(region(e, position, spec));
        }
    })?;
    picks.check_complete()?;
    Ok(Picked {
        picks,
        regions,
        rewrite_last: rewrite.into_sorted_vec().last().copied(),
    })
}
