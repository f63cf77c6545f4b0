//! Planning a [`TreeChange`] in passes over the tree's entries, holding what
//! the change touches and never the tree (an agent plans the change of a
//! tree of millions of files from its manifest file):
//!
//! 1. [`Census`]: the counts (eligible, small and large files, folders).
//! 2. [`Structural`]: the `2 * structural` lowest keys ([`super::rank`]):
//!    removed, renamed.
//! 3. [`pick`]: their paths, the large files' regions, the folders and
//!    sizes the choice stream drew, and the lowest keys of the small files
//!    left.
//! 4. The rewritten files' paths, and which of the new paths' candidates the
//!    tree has ([`super::new_paths`]; rarely, another pass for more).

use super::choose::{Census, Draws, Structural, each, eligible, large, small};
use super::new_paths::{NewPaths, Wanted, existing, fingerprint};
use super::pick::{Picks, pick};
use super::rank::{Key, Ranks};
use super::source::EntrySource;
use super::{TreeChange, WHOLE_FILE_LIMIT, round, seeded_mtime};
use labrun_evidence::ChangeSpec;
use std::collections::{HashMap, HashSet};
use std::io;
use std::rc::Rc;

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
        let ranks = Ranks::new(spec.seed);
        let structural_count = if n >= 3 {
            round(n as f64 * spec.fraction / 5.0)
                .max(1)
                .min((n - 1) / 2) as usize
        } else {
            0
        };
        let structural = Structural::choose(source, &ranks, structural_count)?;
        let added_count = round(n as f64 * spec.fraction / 5.0).max(1);
        let draws = Draws::draw(spec, &census, structural.renamed.len(), added_count);
        let rewrite_count = rewrite_count(&census, &structural, spec.fraction);
        let picked = pick(source, spec, &ranks, &structural, &draws, rewrite_count)?;
        let picks = picked.picks;
        change.regions = picked.regions;
        for &(position, size) in &structural.removed {
            change.removed.push(picks.path_at(position)?);
            change.removed_sizes.push(size);
        }

        // Pass 4 names the rewritten files and asks the new paths' first
        // question in one read.
        let new_paths = NewPaths::new(wanted(&structural, &draws, &picks)?);
        let ask = new_paths.place().err().unwrap_or_default();
        let found = match picked.rewrite_last {
            Some(last) => {
                rewritten_and_existing(source, &ranks, &structural, last, &ask, &mut change)?
            }
            None if ask.is_empty() => HashSet::new(),
            None => existing(source, &ask)?,
        };
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

/// `round(small_rest * fraction)` of the small files neither removed nor
/// renamed; one if that is none and nothing else would change content.
fn rewrite_count(census: &Census, structural: &Structural, fraction: f64) -> usize {
    let small_rest = census.small - structural.count(small);
    let large_rest = census.large - structural.count(large);
    let count = round(small_rest as f64 * fraction);
    let count = if count == 0 && large_rest == 0 {
        1
    } else {
        count
    };
    count.min(small_rest) as usize
}

/// The new paths, in the choice stream's order: each renamed file's name
/// in its drawn folder, then each added file's.
fn wanted(structural: &Structural, draws: &Draws, picks: &Picks) -> io::Result<Vec<Wanted>> {
    let mut wanted = Vec::with_capacity(structural.renamed.len() + draws.added.len());
    // Each drawn folder's path once, however many new paths it gets.
    let mut dirs: HashMap<u64, Rc<str>> = HashMap::new();
    let mut dir = |index: u64| -> io::Result<Rc<str>> {
        if let Some(dir) = dirs.get(&index) {
            return Ok(Rc::clone(dir));
        }
        let dir: Rc<str> = Rc::from(picks.dir(index)?);
        dirs.insert(index, Rc::clone(&dir));
        Ok(dir)
    };
    for (k, (&(position, _), &index)) in structural
        .renamed
        .iter()
        .zip(&draws.renamed_dirs)
        .enumerate()
    {
        let from = picks.path_at(position)?;
        let name = from.rsplit('/').next().unwrap_or(&from);
        wanted.push(Wanted {
            dir: dir(index)?,
            name: name.into(),
            fallback: format!("labrun-renamed-{k}").into(),
        });
    }
    for (k, &(_, index)) in draws.added.iter().enumerate() {
        let name: Box<str> = format!("labrun-added-{k}").into();
        wanted.push(Wanted {
            dir: dir(index)?,
            name: name.clone(),
            fallback: name,
        });
    }
    Ok(wanted)
}

/// Pass 4: the rewritten files into `change`, in path order (the small files
/// left of a key up to `last`), and which of `ask` the tree has.
fn rewritten_and_existing(
    source: &dyn EntrySource,
    ranks: &Ranks,
    structural: &Structural,
    last: Key,
    ask: &HashSet<u64>,
    change: &mut TreeChange,
) -> io::Result<HashSet<u64>> {
    let mut found = HashSet::new();
    each(source, |position, e| {
        let print = fingerprint(&e.path);
        if ask.contains(&print) {
            found.insert(print);
        }
        if eligible(e) && small(e.size) {
            let key = ranks.key(&e.path, position);
            if key <= last && !structural.holds(key) {
                change.rewritten.push(e.path.clone());
                change.rewritten_sizes.push(e.size);
            }
        }
    })?;
    Ok(found)
}
