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

use super::source::EntrySource;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::io;

/// Candidates asked past the first unknown one of a wanted path.
const LOOKAHEAD: usize = 1;

/// A path the change wants to create.
#[derive(Debug, Clone)]
pub(super) struct Wanted {
    pub dir: String,
    pub name: String,
    pub fallback: String,
}

impl Wanted {
    /// The `k`-th path this one may take: name, fallback, fallback-1, ...
    fn candidate(&self, k: usize) -> String {
        let name = match k {
            0 => self.name.clone(),
            1 => self.fallback.clone(),
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
    /// Path -> whether the tree has it.
    known: HashMap<String, bool>,
}

impl NewPaths {
    pub fn new(wanted: Vec<Wanted>) -> NewPaths {
        NewPaths {
            wanted,
            known: HashMap::new(),
        }
    }

    /// The paths, in the order wanted, once every candidate they needed is
    /// known; else the candidates to look up first.
    pub fn place(&self) -> Result<Vec<String>, HashSet<String>> {
        let mut taken = BTreeSet::new();
        let mut ask = HashSet::new();
        let mut placed = Vec::with_capacity(self.wanted.len());
        for wanted in &self.wanted {
            let mut k = 0;
            let path = loop {
                let path = wanted.candidate(k);
                k += 1;
                if taken.contains(&path) {
                    continue;
                }
                match self.known.get(&path) {
                    Some(true) => continue,
                    Some(false) => break path,
                    None => {
                        for ahead in k..k + LOOKAHEAD {
                            let next = wanted.candidate(ahead);
                            if !self.known.contains_key(&next) {
                                ask.insert(next);
                            }
                        }
                        ask.insert(path.clone());
                        break path;
                    }
                }
            };
            taken.insert(path.clone());
            placed.push(path);
        }
        if ask.is_empty() { Ok(placed) } else { Err(ask) }
    }

    /// Records the answers: of `asked`, the tree has exactly `found`.
    pub fn learn(&mut self, asked: HashSet<String>, found: &HashSet<String>) {
        for path in asked {
            let exists = found.contains(&path);
            self.known.insert(path, exists);
        }
    }

    /// Places every wanted path, looking up what [`NewPaths::place`] asks in
    /// passes over `source` (`first` answers the first question, asked by
    /// the caller in a pass of its own).
    pub fn resolve(
        mut self,
        source: &dyn EntrySource,
        first: Option<(HashSet<String>, HashSet<String>)>,
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

/// Which of `ask` the tree has, in one pass.
pub(super) fn existing(
    source: &dyn EntrySource,
    ask: &HashSet<String>,
) -> io::Result<HashSet<String>> {
    let mut found = HashSet::new();
    for entry in source.entries()? {
        let entry = entry?;
        if ask.contains(&entry.path) {
            found.insert(entry.path.clone());
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
            dir: dir.into(),
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
