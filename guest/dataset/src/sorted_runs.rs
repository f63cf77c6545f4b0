//! The pieces of an external sort of manifest entries by path: a sorted
//! run written to a temporary file, and a k-way merge of sorted sources.
//! A run file is a manifest file (a header line counting its entries, then
//! one line an entry), so [`ManifestReader`] reads it back one entry at a
//! time and says so when one is cut short.

use labrun_evidence::manifest::{write_entry, write_header};
use labrun_evidence::{ManifestEntry, ManifestReader};
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Entries of one sorted source, one at a time.
pub(crate) type Source<'a> = Box<dyn Iterator<Item = io::Result<ManifestEntry>> + 'a>;

/// A sorted run on disk.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) path: PathBuf,
    pub(crate) entries: usize,
}

impl Run {
    /// Writes the `count` `entries`, already sorted, to `path` (the count
    /// goes first, in the header; a source that yields another is an error).
    pub(crate) fn write(
        path: &Path,
        count: usize,
        entries: impl Iterator<Item = io::Result<ManifestEntry>>,
    ) -> io::Result<Run> {
        let mut w = BufWriter::new(File::create(path)?);
        write_header(&mut w, count)?;
        let mut written = 0;
        for e in entries {
            write_entry(&mut w, &e?)?;
            written += 1;
        }
        w.flush()?;
        if written != count {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a sorted run was to hold {count} entries and got {written}"),
            ));
        }
        Ok(Run {
            path: path.to_path_buf(),
            entries: count,
        })
    }

    /// The run's entries in order (the header's count is checked as they
    /// are read).
    pub(crate) fn read(&self) -> io::Result<Source<'static>> {
        let reader = ManifestReader::new(BufReader::new(File::open(&self.path)?))?;
        Ok(Box::new(reader))
    }
}

/// The entries of `sources`, each sorted by path, as one sequence sorted by
/// path. Equal paths come in source order (and in each source's order), so
/// sources cut in turn from one stably sorted sequence merge into exactly
/// the order that sequence's stable sort would give. The first error ends
/// the sequence.
pub(crate) fn merge(sources: Vec<Source<'_>>) -> Merge<'_> {
    Merge {
        sources,
        heads: BinaryHeap::new(),
        started: false,
        failed: false,
    }
}

pub(crate) struct Merge<'a> {
    sources: Vec<Source<'a>>,
    /// The next entry of each source not yet exhausted, smallest on top.
    heads: BinaryHeap<Reverse<Head>>,
    started: bool,
    failed: bool,
}

struct Head {
    entry: ManifestEntry,
    source: usize,
}

impl Head {
    fn key(&self) -> (&str, usize) {
        (&self.entry.path, self.source)
    }
}

impl PartialEq for Head {
    fn eq(&self, other: &Head) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Head {}

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Head) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Head {
    fn cmp(&self, other: &Head) -> Ordering {
        self.key().cmp(&other.key())
    }
}

impl Merge<'_> {
    /// Puts the next entry of `source` among the heads, if it has one.
    fn refill(&mut self, source: usize) -> io::Result<()> {
        if let Some(next) = self.sources.get_mut(source).and_then(Iterator::next) {
            self.heads.push(Reverse(Head {
                entry: next?,
                source,
            }));
        }
        Ok(())
    }

    fn next_entry(&mut self) -> io::Result<Option<ManifestEntry>> {
        if !self.started {
            self.started = true;
            for source in 0..self.sources.len() {
                self.refill(source)?;
            }
        }
        let Some(Reverse(head)) = self.heads.pop() else {
            return Ok(None);
        };
        self.refill(head.source)?;
        Ok(Some(head.entry))
    }
}

impl Iterator for Merge<'_> {
    type Item = io::Result<ManifestEntry>;

    /// After an error, nothing more.
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let item = self.next_entry().transpose();
        if matches!(item, Some(Err(_))) {
            self.failed = true;
        }
        item
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str, size: u64) -> ManifestEntry {
        ManifestEntry {
            path: path.into(),
            size,
            ..ManifestEntry::default()
        }
    }

    fn source(entries: Vec<ManifestEntry>) -> Source<'static> {
        Box::new(entries.into_iter().map(Ok))
    }

    #[test]
    fn merges_by_path_with_ties_in_source_order() {
        let merged: Vec<(String, u64)> = merge(vec![
            source(vec![entry("a", 0), entry("c", 0), entry("c", 1)]),
            source(vec![]),
            source(vec![entry("b", 2), entry("c", 2)]),
            source(vec![entry("a", 3)]),
        ])
        .map(|e| e.map(|e| (e.path, e.size)))
        .collect::<io::Result<_>>()
        .unwrap();
        let expected = [("a", 0), ("a", 3), ("b", 2), ("c", 0), ("c", 1), ("c", 2)];
        assert_eq!(merged, expected.map(|(p, s)| (p.to_string(), s)).to_vec());
        assert_eq!(merge(Vec::new()).count(), 0);
    }

    #[test]
    fn a_run_reads_back_and_a_short_one_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let entries = vec![entry("a", 1), entry("b", 2)];
        let run = Run::write(
            &dir.path().join("r"),
            2,
            entries.clone().into_iter().map(Ok),
        )
        .unwrap();
        assert_eq!(run.entries, 2);
        let back: Vec<ManifestEntry> = run.read().unwrap().collect::<io::Result<_>>().unwrap();
        assert_eq!(back, entries);

        let text = std::fs::read_to_string(&run.path).unwrap();
        let cut = text.lines().take(2).collect::<Vec<_>>().join("\n");
        std::fs::write(&run.path, cut).unwrap();
        assert!(
            merge(vec![run.read().unwrap()])
                .collect::<io::Result<Vec<_>>>()
                .is_err()
        );
    }
}
