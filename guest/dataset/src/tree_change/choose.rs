//! The first two passes of a plan, and the choice stream's draws: how many
//! files of each kind the tree has, which files are removed and renamed
//! (the lowest ranks), and which folders and sizes the new paths get.

use super::rank::{Key, Lowest, Ranks};
use super::source::EntrySource;
use super::{Tag, WHOLE_FILE_LIMIT, stream_of};
use crate::stream;
use labrun_evidence::{ChangeSpec, EntryKind, ManifestEntry};
use std::io;

/// The files the change may choose: regular, and not one name of a
/// hard-link group (rewriting it would change the others).
pub(super) fn eligible(e: &ManifestEntry) -> bool {
    e.kind == EntryKind::File && e.link_group.is_none()
}

pub(super) fn small(size: u64) -> bool {
    (1..WHOLE_FILE_LIMIT).contains(&size)
}

pub(super) fn large(size: u64) -> bool {
    size >= WHOLE_FILE_LIMIT
}

/// Runs `visit` on every entry with its position in the sorted manifest.
pub(super) fn each(
    source: &dyn EntrySource,
    mut visit: impl FnMut(u64, &ManifestEntry),
) -> io::Result<()> {
    for (position, entry) in source.entries()?.enumerate() {
        visit(position as u64, &*entry?);
    }
    Ok(())
}

/// Pass 1: what the counts and the choice stream's draws depend on.
#[derive(Debug, Default)]
pub(super) struct Census {
    pub eligible: u64,
    pub small: u64,
    pub large: u64,
    /// Folders new paths may go into: the root and every folder entry.
    pub dirs: u64,
    pub tree_bytes: u64,
}

impl Census {
    pub fn of(source: &dyn EntrySource) -> io::Result<Census> {
        let mut c = Census {
            dirs: 1,
            ..Census::default()
        };
        each(source, |_, e| {
            match e.kind {
                EntryKind::File => c.tree_bytes += e.size,
                EntryKind::Dir => c.dirs += 1,
                EntryKind::Symlink => {}
            }
            if eligible(e) {
                c.eligible += 1;
                c.small += u64::from(small(e.size));
                c.large += u64::from(large(e.size));
            }
        })?;
        Ok(c)
    }
}

/// Pass 2: removed and renamed, the lowest keys of all eligible files (both
/// leave at least one file for the content change).
pub(super) struct Structural {
    /// Sorted by position (path order), with sizes.
    pub removed: Vec<(u64, u64)>,
    pub renamed: Vec<(u64, u64)>,
    /// The highest key taken: an eligible file of a key up to it is one.
    last: Option<Key>,
}

impl Structural {
    pub fn choose(source: &dyn EntrySource, ranks: &Ranks, count: usize) -> io::Result<Structural> {
        let mut lowest = Lowest::new(2 * count);
        each(source, |position, e| {
            if eligible(e) {
                lowest.offer((ranks.key(&e.path, position), e.size));
            }
        })?;
        let chosen = lowest.into_sorted_vec();
        let last = chosen.last().map(|(key, _)| *key);
        let by_position = |part: &[(Key, u64)]| {
            let mut part: Vec<(u64, u64)> = part.iter().map(|(k, s)| (k.position, *s)).collect();
            part.sort_unstable();
            part
        };
        let (removed, renamed) = chosen.split_at(count.min(chosen.len()));
        Ok(Structural {
            removed: by_position(removed),
            renamed: by_position(renamed),
            last,
        })
    }

    pub fn holds(&self, key: Key) -> bool {
        self.last.is_some_and(|last| key <= last)
    }

    pub fn count(&self, of_size: impl Fn(u64) -> bool) -> u64 {
        self.removed
            .iter()
            .chain(&self.renamed)
            .filter(|(_, size)| of_size(*size))
            .count() as u64
    }
}

/// What the choice stream drew: a folder for each renamed file, and a size
/// (an eligible file's, by its index among them) and folder for each added.
pub(super) struct Draws {
    pub renamed_dirs: Vec<u64>,
    pub added: Vec<(u64, u64)>,
}

impl Draws {
    pub fn draw(spec: &ChangeSpec, census: &Census, renamed: usize, added: u64) -> Draws {
        let mut choice = stream_of(spec.seed, Tag::Choice, 0);
        let renamed_dirs = (0..renamed)
            .map(|_| stream::below(&mut choice, census.dirs))
            .collect();
        let added = (0..added)
            .map(|_| {
                let like = stream::below(&mut choice, census.eligible);
                (like, stream::below(&mut choice, census.dirs))
            })
            .collect();
        Draws {
            renamed_dirs,
            added,
        }
    }
}
