//! Dataset manifests: every entry of a tree with its SHA-256. Written as JSON
//! lines sorted by path (a header line first), so two manifests of identical
//! trees are byte-identical and `diff` shows what differs.
//!
//! An entry's metadata fields (`mtime`, `link_group`, `xattrs`, `sparse`)
//! are filled only by a scan that records metadata (the fidelity fixture
//! and its restores); the published dataset's manifests leave them out, so
//! they serialize byte for byte as they did before those fields existed.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, BufRead, Write};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// The default only so that entries can be written `..Default::default()`.
    #[default]
    File,
    Dir,
    Symlink,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ManifestEntry {
    /// Relative, `/`-separated.
    pub path: String,
    pub kind: EntryKind,
    pub size: u64,
    /// Permission bits (e.g. 0o644), as a number.
    pub mode: u32,
    /// Lowercase hex; empty for directories; the link target's digest for symlinks.
    pub sha256: String,
    /// Files and directories: the modification time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtime: Option<Mtime>,
    /// Files that are hard links of one another (one inode, several names in
    /// the tree) share a group; groups are numbered 0, 1, ... in the order of
    /// their first path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_group: Option<u32>,
    /// Files and directories: the `user.` extended attributes, name to
    /// lowercase hex value (other namespaces belong to the system, not the
    /// data). `None` when there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xattrs: Option<BTreeMap<String, String>>,
    /// Files: a hole was found and well under half the apparent size is
    /// allocated (see `labrun_dataset::scan_metadata`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sparse: bool,
}

/// A modification time: whole seconds since the Unix epoch (negative before
/// 1970) and the nanoseconds within that second, as `stat` gives them.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Mtime {
    pub secs: i64,
    pub nanos: u32,
}

impl fmt::Display for Mtime {
    /// `1234567890.000000042`: seconds, then all nine digits of the
    /// nanoseconds, so two times that differ anywhere print differently
    /// (before 1970 too, where the nanoseconds still count up from `secs`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:09}", self.secs, self.nanos)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    pub entries: Vec<ManifestEntry>,
}

#[derive(Serialize, Deserialize)]
struct Header {
    labrun_manifest: u32,
    entries: usize,
}

impl Manifest {
    pub fn sort(&mut self) {
        self.entries.sort_by(|a, b| a.path.cmp(&b.path));
    }

    /// The manifest with every path replaced by its SHA-256 (the first 32
    /// hex digits, in the order of the hashed names): what the evidence of
    /// a private tree keeps. Two trees are still compared exactly (same
    /// path, same hash); a difference is named by its hash, and the names
    /// are the owner's to map back (`echo -n PATH | sha256sum`).
    pub fn with_hashed_paths(&self) -> Manifest {
        let mut out = Manifest {
            entries: self
                .entries
                .iter()
                .map(|e| ManifestEntry {
                    path: hashed_path(&e.path),
                    ..e.clone()
                })
                .collect(),
        };
        out.sort();
        out
    }

    pub fn total_file_bytes(&self) -> u64 {
        self.entries
            .iter()
            .filter(|e| e.kind == EntryKind::File)
            .map(|e| e.size)
            .sum()
    }

    /// Writes the sorted manifest. The caller sorts (it is cheap and keeps
    /// this function free of surprises).
    pub fn write_to(&self, mut w: impl Write) -> io::Result<()> {
        write_header(&mut w, self.entries.len())?;
        for e in &self.entries {
            write_entry(&mut w, e)?;
        }
        w.flush()
    }

    pub fn read_from(r: impl BufRead) -> io::Result<Manifest> {
        let reader = ManifestReader::new(r)?;
        let mut entries = Vec::with_capacity(reader.declared_entries());
        for e in reader {
            entries.push(e?);
        }
        Ok(Manifest { entries })
    }
}

/// The header line of a manifest of `entries` entries. A manifest written
/// as it is produced (see `labrun_dataset`'s streamed scan) writes its
/// entries first and this line once their count is known; the bytes are
/// those of [`Manifest::write_to`] either way.
pub fn write_header(mut w: impl Write, entries: usize) -> io::Result<()> {
    let header = Header {
        labrun_manifest: crate::SCHEMA_VERSION,
        entries,
    };
    serde_json::to_writer(&mut w, &header)?;
    w.write_all(b"\n")
}

/// One entry's line.
pub fn write_entry(mut w: impl Write, e: &ManifestEntry) -> io::Result<()> {
    serde_json::to_writer(&mut w, e)?;
    w.write_all(b"\n")
}

/// A manifest file read one entry at a time, so that a reader of a tree of
/// millions of files holds one line, not the tree. Yields the entries in
/// file order; a file with fewer or more entries than its header declares
/// ends with an error, as [`Manifest::read_from`] does.
pub struct ManifestReader<R> {
    lines: io::Lines<R>,
    declared: usize,
    seen: usize,
    /// The line number of the next line (the header is line 1).
    line_no: usize,
    done: bool,
}

impl<R: BufRead> ManifestReader<R> {
    pub fn new(r: R) -> io::Result<ManifestReader<R>> {
        let mut lines = r.lines();
        let first = lines
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "empty manifest"))??;
        let header: Header = serde_json::from_str(&first).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("not a labrun manifest (bad header line: {e})"),
            )
        })?;
        Ok(ManifestReader {
            lines,
            declared: header.entries,
            seen: 0,
            line_no: 2,
            done: false,
        })
    }

    /// The entry count the header line declares.
    pub fn declared_entries(&self) -> usize {
        self.declared
    }

    fn next_entry(&mut self) -> Option<io::Result<ManifestEntry>> {
        for line in self.lines.by_ref() {
            let n = self.line_no;
            self.line_no += 1;
            let line = match line {
                Ok(line) => line,
                Err(e) => return Some(Err(e)),
            };
            if line.is_empty() {
                continue;
            }
            self.seen += 1;
            return Some(serde_json::from_str(&line).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("manifest line {n}: {e}"),
                )
            }));
        }
        if self.seen != self.declared {
            return Some(Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "manifest is truncated: header says {} entries, found {}",
                    self.declared, self.seen
                ),
            )));
        }
        None
    }
}

impl<R: BufRead> Iterator for ManifestReader<R> {
    type Item = io::Result<ManifestEntry>;

    /// After an error, nothing more.
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.next_entry();
        if !matches!(item, Some(Ok(_))) {
            self.done = true;
        }
        item
    }
}

/// A path as a private tree's evidence names it.
pub fn hashed_path(path: &str) -> String {
    let full = crate::digest::sha256_hex(path.as_bytes());
    full.get(..32).unwrap_or(&full).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let m = Manifest {
            entries: vec![ManifestEntry {
                path: "a/b".into(),
                kind: EntryKind::File,
                size: 3,
                mode: 0o644,
                sha256: "00".repeat(32),
                ..ManifestEntry::default()
            }],
        };
        let mut buf = Vec::new();
        m.write_to(&mut buf).unwrap();
        assert_eq!(Manifest::read_from(&buf[..]).unwrap(), m);
        let cut = &buf[..buf.len() / 2 + 10];
        let s = String::from_utf8_lossy(cut)
            .lines()
            .next()
            .unwrap()
            .to_string();
        assert!(Manifest::read_from(s.as_bytes()).is_err());
    }

    #[test]
    fn metadata_fields_appear_only_when_recorded() {
        let plain = ManifestEntry {
            path: "a".into(),
            kind: EntryKind::File,
            size: 3,
            mode: 0o644,
            sha256: "ab".into(),
            ..ManifestEntry::default()
        };
        let line = serde_json::to_string(&plain).unwrap();
        // The shape of every published manifest line, unchanged.
        assert_eq!(
            line,
            r#"{"path":"a","kind":"file","size":3,"mode":420,"sha256":"ab"}"#
        );
        assert_eq!(serde_json::from_str::<ManifestEntry>(&line).unwrap(), plain);

        let full = ManifestEntry {
            mtime: Some(Mtime {
                secs: -1,
                nanos: 999_999_999,
            }),
            link_group: Some(0),
            xattrs: Some(BTreeMap::from([("user.k".into(), "00ff".into())])),
            sparse: true,
            ..plain
        };
        let line = serde_json::to_string(&full).unwrap();
        assert!(
            line.ends_with(
                r#""mtime":{"secs":-1,"nanos":999999999},"link_group":0,"xattrs":{"user.k":"00ff"},"sparse":true}"#
            ),
            "{line}"
        );
        assert_eq!(serde_json::from_str::<ManifestEntry>(&line).unwrap(), full);
        let t = Mtime {
            secs: 1_000_000_000,
            nanos: 42,
        };
        assert_eq!(t.to_string(), "1000000000.000000042");
    }

    #[test]
    fn hashed_paths_keep_the_tree_comparable_and_name_nothing() {
        let entry = |p: &str| ManifestEntry {
            path: p.into(),
            kind: EntryKind::File,
            size: 1,
            mode: 0o644,
            sha256: "ab".into(),
            ..ManifestEntry::default()
        };
        let m = Manifest {
            entries: vec![entry("family/2019 holiday.jpg"), entry("taxes.pdf")],
        };
        let h = m.with_hashed_paths();
        assert_eq!(h, m.with_hashed_paths());
        let mut text = Vec::new();
        h.write_to(&mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            !text.contains("holiday") && !text.contains("taxes"),
            "{text}"
        );
        assert!(h.entries.windows(2).all(|w| w[0].path < w[1].path));
        assert_eq!(h.entries.len(), 2);
        assert!(h.entries.iter().all(|e| e.path.len() == 32));
    }
}
