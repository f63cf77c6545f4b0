//! Where an archive's entries go: the [`Tree`](super::tree::Tree) writer,
//! or a [`Listing`] that only counts them. Both read the archive the same
//! way (the same entry rules, the same bounds), so what `labrun check` says
//! an archive holds is what the unpack in the guest makes of it.

use super::Fault;
use super::budget::Budget;
use super::guard::{self, EntryPath};
use super::tree::Meta;
use std::collections::{HashMap, HashSet};
use std::io::Read;

/// One archive entry's effect. Every method has been given an entry whose
/// name passed the guard's rules.
pub(super) trait Sink {
    fn budget(&mut self) -> &mut Budget;
    /// A regular file of `size` bytes (as declared), its data in `data`.
    fn file(
        &mut self,
        path: &EntryPath,
        meta: Meta,
        size: u64,
        data: &mut dyn Read,
    ) -> Result<(), Fault>;
    fn dir(&mut self, path: &EntryPath, meta: Meta) -> Result<(), Fault>;
    fn symlink(&mut self, path: &EntryPath, target: &str, meta: Meta) -> Result<(), Fault>;
    fn hard_link(&mut self, path: &EntryPath, target: &EntryPath) -> Result<(), Fault>;
    /// A device, FIFO or socket: counted, never made.
    fn special(&mut self);
}

/// Counts what an unpack would make, writing nothing and reading no file
/// data (the archive readers skip it). Folders are counted once each,
/// listed or implied by a path, as the tree writer counts those it makes.
pub(super) struct Listing {
    pub counts: super::Unpacked,
    pub budget: Budget,
    dirs: HashSet<String>,
    /// Each symbolic link's target, by its path: a hard link to one is
    /// checked where it lands, as the tree writer checks it.
    symlinks: HashMap<String, String>,
}

impl Listing {
    pub fn new(budget: Budget) -> Listing {
        Listing {
            counts: super::Unpacked::default(),
            budget,
            dirs: HashSet::new(),
            symlinks: HashMap::new(),
        }
    }

    /// Every folder above `path` (not the root), counted once.
    fn parents_of(&mut self, path: &EntryPath) {
        let mut dir = path.split().0;
        while !dir.is_empty() && !self.dirs.contains(dir) {
            self.dirs.insert(dir.to_string());
            dir = dir.rsplit_once('/').map_or("", |(parent, _)| parent);
        }
    }

    pub fn finish(mut self) -> super::Unpacked {
        self.counts.dirs = self.dirs.len() as u64;
        self.counts
    }
}

impl Sink for Listing {
    fn budget(&mut self) -> &mut Budget {
        &mut self.budget
    }

    fn file(
        &mut self,
        path: &EntryPath,
        _: Meta,
        size: u64,
        _: &mut dyn Read,
    ) -> Result<(), Fault> {
        self.budget.add_bytes(size)?;
        self.parents_of(path);
        self.symlinks.remove(path.as_str());
        self.counts.files += 1;
        self.counts.bytes += size;
        Ok(())
    }

    fn dir(&mut self, path: &EntryPath, _: Meta) -> Result<(), Fault> {
        if !path.is_root() {
            self.parents_of(path);
            self.dirs.insert(path.as_str().to_string());
        }
        Ok(())
    }

    fn symlink(&mut self, path: &EntryPath, target: &str, _: Meta) -> Result<(), Fault> {
        self.parents_of(path);
        self.symlinks
            .insert(path.as_str().to_string(), target.to_string());
        self.counts.symlinks += 1;
        Ok(())
    }

    fn hard_link(&mut self, path: &EntryPath, target: &EntryPath) -> Result<(), Fault> {
        match self.symlinks.get(target.as_str()).cloned() {
            Some(points_to) => {
                guard::hard_link_to_symlink(path, target, &points_to)
                    .map_err(|b| b.fault("link target"))?;
                self.symlinks.insert(path.as_str().to_string(), points_to);
            }
            None => {
                self.symlinks.remove(path.as_str());
            }
        }
        self.parents_of(path);
        self.counts.hard_links += 1;
        Ok(())
    }

    fn special(&mut self) {
        self.counts.skipped_special += 1;
    }
}
