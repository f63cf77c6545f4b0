//! Planning a [`TreeChange`] in passes over the tree's entries, holding what
//! the change touches and never the tree (an agent plans the change of a
//! tree of millions of files from its manifest file):
//!
//! 1. [`Census`]: the counts (eligible, small and large files, folders).
//! 2. The `2 * structural` lowest keys ([`super::rank`]): removed, renamed.
//! 3. Their paths, the large files' regions, the folders and sizes the
//!    choice stream drew, and the lowest keys of the small files left.
//! 4. The rewritten files' paths, and which of the new paths' candidates the
//!    tree has ([`super::new_paths`]; rarely, another pass for more).

use super::new_paths::{NewPaths, Wanted, existing};
use super::rank::{Key, Lowest, Ranks};
use super::source::EntrySource;
use super::{Tag, TreeChange, WHOLE_FILE_LIMIT, round, seeded_mtime, stream_of};
use crate::change::ChangedRegion;
use crate::stream;
use labrun_evidence::{ChangeSpec, EntryKind, ManifestEntry};
use std::collections::{BTreeMap, HashSet};
use std::io;

/// The files the change may choose: regular, and not one name of a
/// hard-link group (rewriting it would change the others).
fn eligible(e: &ManifestEntry) -> bool {
    e.kind == EntryKind::File && e.link_group.is_none()
}

fn small(size: u64) -> bool {
    (1..WHOLE_FILE_LIMIT).contains(&size)
}

fn large(size: u64) -> bool {
    size >= WHOLE_FILE_LIMIT
}

/// Runs `visit` on every entry with its position in the sorted manifest.
fn each(source: &dyn EntrySource, mut visit: impl FnMut(u64, &ManifestEntry)) -> io::Result<()> {
    for (position, entry) in source.entries()?.enumerate() {
        visit(position as u64, &*entry?);
    }
    Ok(())
}

/// Pass 1: what the counts and the choice stream's draws depend on.
#[derive(Debug, Default)]
struct Census {
    eligible: u64,
    small: u64,
    large: u64,
    /// Folders new paths may go into: the root and every folder entry.
    dirs: u64,
    tree_bytes: u64,
}

impl Census {
    fn of(source: &dyn EntrySource) -> io::Result<Census> {
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
struct Structural {
    /// Sorted by position (path order), with sizes.
    removed: Vec<(u64, u64)>,
    renamed: Vec<(u64, u64)>,
    /// The highest key taken: an eligible file of a key up to it is one.
    last: Option<Key>,
}

impl Structural {
    fn choose(source: &dyn EntrySource, ranks: &Ranks, count: usize) -> io::Result<Structural> {
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

    fn holds(&self, key: Key) -> bool {
        self.last.is_some_and(|last| key <= last)
    }

    fn count(&self, of_size: impl Fn(u64) -> bool) -> u64 {
        self.removed
            .iter()
            .chain(&self.renamed)
            .filter(|(_, size)| of_size(*size))
            .count() as u64
    }
}

/// What the choice stream drew: a folder for each renamed file, and a size
/// (an eligible file's, by its index among them) and folder for each added.
struct Draws {
    renamed_dirs: Vec<u64>,
    added: Vec<(u64, u64)>,
}

impl Draws {
    fn draw(spec: &ChangeSpec, census: &Census, renamed: usize, added: u64) -> Draws {
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

/// Entries pass 3 picks by position or index, filled as the pass meets them.
struct Picks {
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

    fn path_at(&self, position: u64) -> io::Result<String> {
        self.structural
            .get(&position)
            .cloned()
            .flatten()
            .ok_or_else(changed_while_planning)
    }

    fn dir(&self, index: u64) -> io::Result<String> {
        self.dirs
            .get(&index)
            .cloned()
            .flatten()
            .ok_or_else(changed_while_planning)
    }

    fn like(&self, index: u64) -> io::Result<u64> {
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

impl TreeChange {
    /// Plans the change of the tree `source` yields, reading it a few
    /// times and holding only what the change touches: the same change as
    /// [`TreeChange::plan`] of the same entries. A `spec` that
    /// [`ChangeSpec::validate`] refuses plans an empty change.
    pub fn plan_from(source: &dyn EntrySource, spec: &ChangeSpec) -> io::Result<TreeChange> {
        let census = Census::of(source)?;
        let mut change = TreeChange {
            rewritten: Vec::new(),
            rewritten_sizes: Vec::new(),
            regions: Vec::new(),
            added: Vec::new(),
            removed: Vec::new(),
            removed_sizes: Vec::new(),
            renamed: Vec::new(),
            seed: spec.seed,
            mtime: seeded_mtime(spec.seed),
            eligible_files: census.eligible,
            tree_bytes: census.tree_bytes,
        };
        let n = census.eligible;
        if n == 0 || spec.validate().is_err() {
            return Ok(change);
        }
        let fraction = spec.fraction;
        let ranks = Ranks::new(spec.seed);

        let structural_count = if n >= 3 {
            round(n as f64 * fraction / 5.0).max(1).min((n - 1) / 2) as usize
        } else {
            0
        };
        let structural = Structural::choose(source, &ranks, structural_count)?;
        let small_rest = census.small - structural.count(small);
        let large_rest = census.large - structural.count(large);
        let mut rewrite_count = round(small_rest as f64 * fraction);
        if rewrite_count == 0 && large_rest == 0 && small_rest > 0 {
            rewrite_count = 1;
        }
        let added_count = round(n as f64 * fraction / 5.0).max(1);
        let draws = Draws::draw(spec, &census, structural.renamed.len(), added_count);

        // Pass 3.
        let mut picks = Picks::new(&structural, &draws);
        let mut rewrite = Lowest::new(rewrite_count.min(small_rest) as usize);
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
                change.regions.push(region(e, position, spec));
            }
        })?;
        picks.check_complete()?;
        for &(position, size) in &structural.removed {
            change.removed.push(picks.path_at(position)?);
            change.removed_sizes.push(size);
        }
        let mut wanted = Vec::with_capacity(structural.renamed.len() + draws.added.len());
        for (k, (&(position, _), &dir)) in structural
            .renamed
            .iter()
            .zip(&draws.renamed_dirs)
            .enumerate()
        {
            let from = picks.path_at(position)?;
            let name = from.rsplit('/').next().unwrap_or(&from).to_string();
            wanted.push(Wanted {
                dir: picks.dir(dir)?,
                name,
                fallback: format!("labrun-renamed-{k}"),
            });
        }
        for (k, &(_, dir)) in draws.added.iter().enumerate() {
            let name = format!("labrun-added-{k}");
            wanted.push(Wanted {
                dir: picks.dir(dir)?,
                name: name.clone(),
                fallback: name,
            });
        }

        // Pass 4: the rewritten files, and the first question of the new
        // paths, in one read.
        let rewritten = rewrite.into_sorted_vec();
        let new_paths = NewPaths::new(wanted);
        let ask = new_paths.place().err().unwrap_or_default();
        let mut found = HashSet::new();
        if let Some(&last) = rewritten.last() {
            each(source, |position, e| {
                if ask.contains(&e.path) {
                    found.insert(e.path.clone());
                }
                if eligible(e) && small(e.size) {
                    let key = ranks.key(&e.path, position);
                    if key <= last && !structural.holds(key) {
                        change.rewritten.push(e.path.clone());
                        change.rewritten_sizes.push(e.size);
                    }
                }
            })?;
        } else if !ask.is_empty() {
            found = existing(source, &ask)?;
        }
        let placed = new_paths.resolve(source, Some((ask, found)))?;

        let (renamed_to, added_to) = placed.split_at(structural.renamed.len());
        for (&(position, _), to) in structural.renamed.iter().zip(renamed_to) {
            change.renamed.push((picks.path_at(position)?, to.clone()));
        }
        for (path, &(like, _)) in added_to.iter().zip(&draws.added) {
            let size = picks.like(like)?.min(WHOLE_FILE_LIMIT);
            change.added.push((path.clone(), size));
        }
        change.added.sort();
        Ok(change)
    }
}
