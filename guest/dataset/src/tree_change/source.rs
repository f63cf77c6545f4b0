//! Where the planner reads a tree's entries from: a manifest held in memory,
//! or a manifest file read one line at a time. The plan reads its source a
//! few times, so a source must yield the same entries, sorted by path, on
//! every call; a file source holds one line, never the tree.

use crate::DatasetError;
use labrun_evidence::{Manifest, ManifestEntry, ManifestReader};
use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufReader};
use std::path::{Path, PathBuf};

/// One read of a tree's entries, sorted by path.
pub type Entries<'a> = Box<dyn Iterator<Item = io::Result<Cow<'a, ManifestEntry>>> + 'a>;

/// A tree's entries, readable again and again in path order.
pub trait EntrySource {
    /// Every entry of the tree, sorted by path (byte order), from the first.
    fn entries(&self) -> io::Result<Entries<'_>>;
}

/// A manifest in memory: its entries as they are when sorted (every writer
/// of labrun sorts), else sorted references to them (never a copy).
impl EntrySource for Manifest {
    fn entries(&self) -> io::Result<Entries<'_>> {
        if self.entries.is_sorted_by(|a, b| a.path <= b.path) {
            return Ok(Box::new(self.entries.iter().map(|e| Ok(Cow::Borrowed(e)))));
        }
        let mut sorted: Vec<&ManifestEntry> = self.entries.iter().collect();
        sorted.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(Box::new(sorted.into_iter().map(|e| Ok(Cow::Borrowed(e)))))
    }
}

/// A manifest file (JSON lines sorted by path, as labrun writes them), read
/// one entry at a time on every pass. A file out of path order is an error
/// naming it: the plan would otherwise depend on the file's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestFile(pub PathBuf);

impl ManifestFile {
    pub fn new(path: impl Into<PathBuf>) -> ManifestFile {
        ManifestFile(path.into())
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl EntrySource for ManifestFile {
    fn entries(&self) -> io::Result<Entries<'_>> {
        let path = self.path();
        let file = File::open(path).map_err(|e| DatasetError::io("opening manifest", path, e))?;
        let reader = ManifestReader::new(BufReader::new(file))
            .map_err(|e| DatasetError::io("reading manifest", path, e))?;
        Ok(Box::new(InPathOrder {
            entries: reader,
            path,
            last: None,
            failed: false,
        }))
    }
}

/// A file's entries, checked to go forward: one previous path held, in a
/// buffer reused from entry to entry.
struct InPathOrder<'a, I> {
    entries: I,
    path: &'a Path,
    last: Option<String>,
    failed: bool,
}

impl<'a, I> Iterator for InPathOrder<'a, I>
where
    I: Iterator<Item = io::Result<ManifestEntry>>,
{
    type Item = io::Result<Cow<'a, ManifestEntry>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let entry = match self.entries.next()? {
            Ok(entry) => entry,
            Err(e) => {
                self.failed = true;
                return Some(Err(
                    DatasetError::io("reading manifest", self.path, e).into()
                ));
            }
        };
        match &mut self.last {
            Some(last) if *last > entry.path => {
                self.failed = true;
                let message = format!(
                    "manifest {} is not sorted by path ({:?} comes after {:?}): plan a \
                     change from a manifest labrun wrote, or from the manifest in memory",
                    self.path.display(),
                    entry.path,
                    last
                );
                return Some(Err(io::Error::new(io::ErrorKind::InvalidData, message)));
            }
            Some(last) => {
                last.clear();
                last.push_str(&entry.path);
            }
            None => self.last = Some(entry.path.clone()),
        }
        Some(Ok(Cow::Owned(entry)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str) -> ManifestEntry {
        ManifestEntry {
            path: path.to_string(),
            ..Default::default()
        }
    }

    fn paths(source: &dyn EntrySource) -> io::Result<Vec<String>> {
        source
            .entries()?
            .map(|e| e.map(|e| e.path.clone()))
            .collect()
    }

    fn write(dir: &Path, manifest: &Manifest) -> ManifestFile {
        let path = dir.join("manifest.jsonl");
        let mut bytes = Vec::new();
        manifest.write_to(&mut bytes).unwrap();
        std::fs::write(&path, bytes).unwrap();
        ManifestFile::new(path)
    }

    #[test]
    fn a_manifest_in_memory_and_its_file_read_alike_every_time() {
        let unsorted = Manifest {
            entries: ["b", "a/x", "a", "c"].map(entry).to_vec(),
        };
        let mut sorted = unsorted.clone();
        sorted.sort();
        let dir = tempfile::tempdir().unwrap();
        let file = write(dir.path(), &sorted);
        let want = ["a", "a/x", "b", "c"].map(String::from).to_vec();
        for _ in 0..2 {
            assert_eq!(paths(&unsorted).unwrap(), want);
            assert_eq!(paths(&sorted).unwrap(), want);
            assert_eq!(paths(&file).unwrap(), want);
        }
    }

    #[test]
    fn a_file_out_of_order_or_missing_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let unsorted = Manifest {
            entries: ["a", "c", "b"].map(entry).to_vec(),
        };
        let file = write(dir.path(), &unsorted);
        let err = paths(&file).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("not sorted by path"), "{err}");
        assert!(err.to_string().contains("manifest.jsonl"), "{err}");

        let missing = ManifestFile::new(dir.path().join("none.jsonl"));
        let err = paths(&missing).err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("none.jsonl")));
    }
}
