//! A private tree's manifest (every path hashed, sorted by its hash)
//! written from entries pushed with their plain paths in any order, holding
//! a bounded part of it. It is the file `write_manifest(path,
//! &manifest.with_hashed_paths())` writes, byte for byte, without the
//! whole manifest and its sorted hashed clone in memory at once: at
//! millions of files those two alone are more than the agent may use.
//!
//! An external sort: entries gather in a buffer up to a [`SortBudget`]; a
//! full buffer is sorted and spilled as a run file beside the output;
//! [`HashedManifestWriter::finish`] merges the runs and the last buffer
//! into the file, which appears whole or not at all (a temporary file and
//! a rename, as [`crate::ManifestFileWriter`]). The run files go when the
//! writer does, finished or not.

use crate::error::DatasetError;
use crate::manifest_file::{WrittenManifest, with_suffix, write_whole};
use crate::sorted_runs::{Run, Source, merge};
use labrun_evidence::manifest::{hashed_path, write_entry, write_header};
use labrun_evidence::{EntryKind, Manifest, ManifestEntry};
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// How much of the manifest a [`HashedManifestWriter`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortBudget {
    /// Entries held before they are spilled as a sorted run.
    pub entries: usize,
    /// Estimated bytes of entries held before they are spilled.
    pub bytes: usize,
    /// Run files at most: at this many they are merged into one, so a huge
    /// tree never has more files open in a merge (each with its buffer).
    pub runs: usize,
}

impl Default for SortBudget {
    /// 16,384 entries (about 3.7 MiB of a plain tree's, 224 bytes each, in
    /// a vector reserved at that size: no doubling on top), at most 4 MiB
    /// of them for long names or xattrs, and 128 run files read through 8
    /// KiB buffers: about 5 MiB whatever the tree's size, and 2 million
    /// files between two merges of the runs. The agent's memory target is
    /// 64 MiB in all (issue 31), so this stays a small share of it.
    fn default() -> SortBudget {
        SortBudget {
            entries: 16 * 1024,
            bytes: 4 << 20,
            runs: 128,
        }
    }
}

/// Writes a private tree's hashed manifest to a file (see the module docs).
pub struct HashedManifestWriter {
    path: PathBuf,
    budget: SortBudget,
    /// Entries with their paths hashed, not yet in a run.
    buffer: Vec<ManifestEntry>,
    buffer_bytes: usize,
    /// In the order their entries were pushed: a merge puts equal paths in
    /// that order, as a stable sort of all the entries would.
    runs: Vec<Run>,
    /// Numbers run files, so a merged run never takes a name still in use.
    runs_named: usize,
    entries: usize,
    files: u64,
    file_bytes: u64,
}

impl HashedManifestWriter {
    /// A writer of the file `path` with the default [`SortBudget`]; nothing
    /// is written until the buffer first fills.
    pub fn create(path: &Path) -> HashedManifestWriter {
        HashedManifestWriter::with_budget(path, SortBudget::default())
    }

    pub fn with_budget(path: &Path, budget: SortBudget) -> HashedManifestWriter {
        HashedManifestWriter {
            path: path.to_path_buf(),
            budget,
            buffer: Vec::new(),
            buffer_bytes: 0,
            runs: Vec::new(),
            runs_named: 0,
            entries: 0,
            files: 0,
            file_bytes: 0,
        }
    }

    /// Takes `e`, named by its plain path; the writer keeps it hashed.
    pub fn push(&mut self, e: &ManifestEntry) -> Result<(), DatasetError> {
        self.entries += 1;
        if e.kind == EntryKind::File {
            self.files += 1;
            self.file_bytes += e.size;
        }
        let hashed = ManifestEntry {
            path: hashed_path(&e.path),
            sha256: e.sha256.clone(),
            xattrs: e.xattrs.clone(),
            ..*e
        };
        if self.buffer.capacity() == 0 {
            // The budget's room at once: a vector left to double would
            // hold up to twice what the budget allows.
            self.buffer.reserve_exact(self.budget.entries.min(1 << 20));
        }
        self.buffer_bytes += estimated_bytes(&hashed);
        self.buffer.push(hashed);
        if self.buffer.len() >= self.budget.entries || self.buffer_bytes >= self.budget.bytes {
            self.spill()?;
        }
        Ok(())
    }

    /// Writes the file and returns what [`crate::ManifestFileWriter`]
    /// returns for it.
    pub fn finish(mut self) -> Result<WrittenManifest, DatasetError> {
        let last = sorted(std::mem::take(&mut self.buffer));
        let mut sources = self.read_runs()?;
        sources.push(Box::new(last.into_iter().map(Ok)));
        let count = self.entries;
        let sha256 = write_whole(&self.path, |w| write_merged(w, count, merge(sources)))?;
        // The run files go with `self`, now.
        Ok(WrittenManifest {
            entries: self.entries,
            files: self.files,
            file_bytes: self.file_bytes,
            sha256,
        })
    }

    /// Writes the buffer as a sorted run (and merges the runs into one when
    /// there are as many as the budget allows).
    fn spill(&mut self) -> Result<(), DatasetError> {
        let entries = sorted(std::mem::take(&mut self.buffer));
        self.buffer_bytes = 0;
        let path = self.next_run_path();
        let run = write_run(&path, entries.len(), entries.into_iter().map(Ok))?;
        self.runs.push(run);
        if self.runs.len() >= self.budget.runs.max(2) {
            self.merge_runs()?;
        }
        Ok(())
    }

    fn merge_runs(&mut self) -> Result<(), DatasetError> {
        let count = self.runs.iter().map(|r| r.entries).sum();
        let sources = self.read_runs()?;
        let path = self.next_run_path();
        let merged = write_run(&path, count, merge(sources))?;
        for old in std::mem::replace(&mut self.runs, vec![merged]) {
            let _ = fs::remove_file(&old.path);
        }
        Ok(())
    }

    fn read_runs(&self) -> Result<Vec<Source<'static>>, DatasetError> {
        self.runs
            .iter()
            .map(|run| {
                run.read()
                    .map_err(|e| DatasetError::io("reading the sorted run", &run.path, e))
            })
            .collect()
    }

    fn next_run_path(&mut self) -> PathBuf {
        self.runs_named += 1;
        with_suffix(&self.path, &format!(".run{}.tmp", self.runs_named))
    }
}

impl Drop for HashedManifestWriter {
    fn drop(&mut self) {
        for run in &self.runs {
            let _ = fs::remove_file(&run.path);
        }
    }
}

/// `entries` in [`Manifest::sort`]'s order (stable, by path).
fn sorted(entries: Vec<ManifestEntry>) -> Vec<ManifestEntry> {
    let mut m = Manifest { entries };
    m.sort();
    m.entries
}

/// Writes a run, leaving no part of one behind when that fails.
fn write_run(
    path: &Path,
    count: usize,
    entries: impl Iterator<Item = io::Result<ManifestEntry>>,
) -> Result<Run, DatasetError> {
    Run::write(path, count, entries).map_err(|e| {
        let _ = fs::remove_file(path);
        DatasetError::io("writing the sorted run", path, e)
    })
}

/// Writes the manifest of the `count` sorted `entries` to `path`, synced,
/// and returns the SHA-256 of its bytes.
/// The header and the `count` entries a merge gives, in order.
fn write_merged(
    w: &mut dyn Write,
    count: usize,
    entries: impl Iterator<Item = io::Result<ManifestEntry>>,
) -> io::Result<()> {
    write_header(&mut *w, count)?;
    let mut written = 0;
    for e in entries {
        write_entry(&mut *w, &e?)?;
        written += 1;
    }
    if written != count {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{count} entries were pushed and the merge gave {written}"),
        ));
    }
    Ok(())
}

/// Roughly what an entry takes in memory: enough to bound the buffer of a
/// tree with long xattrs as well as one of plain files.
fn estimated_bytes(e: &ManifestEntry) -> usize {
    let xattrs = e.xattrs.iter().flatten();
    std::mem::size_of::<ManifestEntry>()
        + e.path.len()
        + e.sha256.len()
        + xattrs
            .map(|(k, v)| k.len() + v.len() + 2 * std::mem::size_of::<String>())
            .sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn entry(i: u64) -> ManifestEntry {
        ManifestEntry {
            path: format!("dir{}/file {i}.txt", i % 7),
            kind: match i % 5 {
                0 => EntryKind::Dir,
                1 => EntryKind::Symlink,
                _ => EntryKind::File,
            },
            size: i * 13,
            mode: 0o644,
            sha256: format!("{i:064x}"),
            xattrs: i
                .is_multiple_of(11)
                .then(|| BTreeMap::from([("user.k".into(), "00ff".into())])),
            ..ManifestEntry::default()
        }
    }

    /// The bytes and the summary of the in-memory way.
    fn in_memory(dir: &Path, entries: &[ManifestEntry]) -> (Vec<u8>, WrittenManifest) {
        let m = Manifest {
            entries: entries.to_vec(),
        };
        let path = dir.join("in-memory.jsonl");
        crate::write_manifest(&path, &m.with_hashed_paths()).unwrap();
        let bytes = fs::read(&path).unwrap();
        fs::remove_file(&path).unwrap();
        let summary = WrittenManifest {
            entries: entries.len(),
            files: entries.iter().filter(|e| e.kind == EntryKind::File).count() as u64,
            file_bytes: m.total_file_bytes(),
            sha256: labrun_evidence::digest::sha256_hex(&bytes),
        };
        (bytes, summary)
    }

    fn assert_same_as_in_memory(entries: &[ManifestEntry], budget: SortBudget) {
        let dir = tempfile::tempdir().unwrap();
        let expected = in_memory(dir.path(), entries);
        let path = dir.path().join("m.jsonl");
        let mut w = HashedManifestWriter::with_budget(&path, budget);
        for e in entries {
            w.push(e).unwrap();
        }
        let written = w.finish().unwrap();
        assert_eq!((fs::read(&path).unwrap(), written), expected);
        let left: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["m.jsonl"], "temporary files left behind");
    }

    const SMALL: SortBudget = SortBudget {
        entries: 7,
        bytes: usize::MAX,
        runs: 1000,
    };

    #[test]
    fn writes_what_the_in_memory_way_writes() {
        let many: Vec<ManifestEntry> = (0..500).map(|i| entry((i * 7919) % 500)).collect();
        for budget in [SortBudget::default(), SMALL] {
            assert_same_as_in_memory(&[], budget);
            assert_same_as_in_memory(&many[..1], budget);
            assert_same_as_in_memory(&many[..7], budget);
            assert_same_as_in_memory(&many, budget);
        }
        // Runs merged into one along the way, and spills by bytes.
        let few_runs = SortBudget { runs: 3, ..SMALL };
        assert_same_as_in_memory(&many, few_runs);
        let by_bytes = SortBudget {
            entries: usize::MAX,
            bytes: 2000,
            runs: 4,
        };
        assert_same_as_in_memory(&many, by_bytes);
    }

    #[test]
    fn equal_hashed_paths_keep_the_order_they_were_pushed_in() {
        // Only one plain path has a given hash in practice: equal hashes
        // are the same path pushed twice (which a stable sort keeps in
        // push order, across runs too).
        let twice: Vec<ManifestEntry> = (0..40)
            .map(|i| ManifestEntry {
                path: format!("same {}", i % 3),
                size: i,
                ..ManifestEntry::default()
            })
            .collect();
        assert_same_as_in_memory(&twice, SMALL);
        assert_same_as_in_memory(&twice, SortBudget { runs: 2, ..SMALL });
    }

    #[test]
    fn an_unfinished_writer_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.jsonl");
        let mut w = HashedManifestWriter::with_budget(&path, SMALL);
        for i in 0..30 {
            w.push(&entry(i)).unwrap();
        }
        assert!(
            fs::read_dir(dir.path()).unwrap().count() >= 4,
            "runs spilled"
        );
        drop(w);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_failed_finish_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        // The output's name is taken by a folder with something in it, so
        // the rename fails after everything else is written.
        let path = dir.path().join("m.jsonl");
        fs::create_dir(&path).unwrap();
        fs::write(path.join("x"), "").unwrap();
        let mut w = HashedManifestWriter::with_budget(&path, SMALL);
        for i in 0..30 {
            w.push(&entry(i)).unwrap();
        }
        assert!(w.finish().is_err());
        let left: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["m.jsonl"]);
    }
}
