//! Names for the paths the change creates (renamed and added files): each
//! wants `dir/name`, else `dir/fallback`, `dir/fallback-1`, ..., the first
//! that no entry of the tree has and no earlier new path took.
//!
//! The tree is not held, so whether a path exists is looked up in a pass
//! over the source: the candidates a placement needs are asked in one set,
//! and placement runs again with the answers. A candidate that is not known
//! yet is taken as free, so one round asks for every path the placement
//! could reach; the next candidate is asked with it, so a name the tree
//! already has rarely costs another pass.
//!
//! What is asked, known and taken is held as 64-bit fingerprints of the
//! paths ([`fingerprint`]), not the paths: a change of a tree of 4 million
//! files creates 80,000 paths and asks about twice as many, and the paths
//! themselves made most of the planning's memory. A fingerprint shared by
//! two paths only ever makes a free path look taken (the next candidate is
//! used): a path the tree has, or a new path already took, is never taken
//! again, and the same tree always gets the same names.

use super::source::EntrySource;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::io;
use std::rc::Rc;

/// Candidates asked past the first unknown one of a wanted path.
const LOOKAHEAD: usize = 1;

/// The first 8 bytes of SHA-256(`labrun-dataset/tree-change/new-path` ||
/// path): fixed, so every agent places the same paths.
pub(super) fn fingerprint(path: &str) -> u64 {
    let digest = Sha256::new()
        .chain_update(b"labrun-dataset/tree-change/new-path")
        .chain_update(path.as_bytes())
        .finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(first)
}

/// A path the change wants to create. Many share a folder: it is held once.
#[derive(Debug, Clone)]
pub(super) struct Wanted {
    pub dir: Rc<str>,
    pub name: Box<str>,
    pub fallback: Box<str>,
}

impl Wanted {
    /// The `k`-th path this one may take: name, fallback, fallback-1, ...
    fn candidate(&self, k: usize) -> String {
        let name = match k {
            0 => self.name.to_string(),
            1 => self.fallback.to_string(),
            k => format!("{}-{}", self.fallback, k - 1),
        };
        if self.dir.is_empty() {
            name
        } else {
            format!("{}/{name}", self.dir)
        }
    }
}

/// The placement of a list of wanted paths, and what is known of the tree.
#[derive(Default)]
pub(super) struct NewPaths {
    wanted: Vec<Wanted>,
    /// Fingerprint -> whether the tree has a path of it.
    known: HashMap<u64, bool>,
}

impl NewPaths {
    pub fn new(wanted: Vec<Wanted>) -> NewPaths {
        NewPaths {
            wanted,
            known: HashMap::new(),
        }
    }

    /// The paths, in the order wanted, once every candidate they needed is
    /// known; else the fingerprints of the candidates to look up first.
    pub fn place(&self) -> Result<Vec<String>, HashSet<u64>> {
        let mut taken = HashSet::with_capacity(self.wanted.len());
        let mut ask = HashSet::new();
        let mut placed = Vec::with_capacity(self.wanted.len());
        for wanted in &self.wanted {
            let mut k = 0;
            let path = loop {
                let path = wanted.candidate(k);
                let print = fingerprint(&path);
                k += 1;
                if taken.contains(&print) {
                    continue;
                }
                match self.known.get(&print) {
                    Some(true) => continue,
                    Some(false) => break (path, print),
                    None => {
                        for ahead in k..k + LOOKAHEAD {
                            let next = fingerprint(&wanted.candidate(ahead));
                            if !self.known.contains_key(&next) {
                                ask.insert(next);
                            }
                        }
                        ask.insert(print);
                        break (path, print);
                    }
                }
            };
            taken.insert(path.1);
            placed.push(path.0);
        }
        if ask.is_empty() { Ok(placed) } else { Err(ask) }
    }

    /// Records the answers: of `asked`, the tree has exactly `found`.
    pub fn learn(&mut self, asked: HashSet<u64>, found: &HashSet<u64>) {
        self.known.reserve(asked.len());
        for print in asked {
            self.known.insert(print, found.contains(&print));
        }
    }

    /// Places every wanted path, looking up what [`NewPaths::place`] asks in
    /// passes over `source` (`first` answers the first question, asked by
    /// the caller in a pass of its own).
    pub fn resolve(
        mut self,
        source: &dyn EntrySource,
        first: Option<(HashSet<u64>, HashSet<u64>)>,
    ) -> io::Result<Vec<String>> {
        if let Some((asked, found)) = first {
            self.learn(asked, &found);
        }
        loop {
            match self.place() {
                Ok(paths) => return Ok(paths),
                Err(ask) => {
                    let found = existing(source, &ask)?;
                    self.learn(ask, &found);
                }
            }
        }
    }
}

/// Which of the fingerprints `ask` a path of the tree has, in one pass.
pub(super) fn existing(source: &dyn EntrySource, ask: &HashSet<u64>) -> io::Result<HashSet<u64>> {
    let mut found = HashSet::new();
    for entry in source.entries()? {
        let print = fingerprint(&entry?.path);
        if ask.contains(&print) {
            found.insert(print);
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use labrun_evidence::{Manifest, ManifestEntry};

    fn wanted(dir: &str, name: &str, fallback: &str) -> Wanted {
        Wanted {
            dir: Rc::from(dir),
            name: name.into(),
            fallback: fallback.into(),
        }
    }

    fn tree(paths: &[&str]) -> Manifest {
        let mut m = Manifest {
            entries: paths
                .iter()
                .map(|p| ManifestEntry {
                    path: p.to_string(),
                    ..Default::default()
                })
                .collect(),
        };
        m.sort();
        m
    }

    #[test]
    fn new_paths_skip_the_tree_and_each_other() {
        let t = tree(&["d", "d/x", "d/fb", "d/fb-1", "d/fb-2", "y"]);
        let paths = NewPaths::new(vec![
            wanted("d", "x", "fb"),
            wanted("d", "z", "other"),
            wanted("d", "z", "fb"),
            wanted("", "y", "y2"),
            wanted("", "q", "q2"),
        ])
        .resolve(&t, None)
        .unwrap();
        assert_eq!(paths, ["d/fb-3", "d/z", "d/fb-4", "y2", "q"]);
    }
}
