//! Dataset manifests: every entry of a tree with its SHA-256. Written as JSON
//! lines sorted by path (a header line first), so two manifests of identical
//! trees are byte-identical and `diff` shows what differs.

use serde::{Deserialize, Serialize};
use std::io::{self, BufRead, Write};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ManifestEntry {
    /// Relative, `/`-separated.
    pub path: String,
    pub kind: EntryKind,
    pub size: u64,
    /// Permission bits (e.g. 0o644), as a number.
    pub mode: u32,
    /// Lowercase hex; empty for directories; the link target's digest for symlinks.
    pub sha256: String,
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
        let header = Header {
            labrun_manifest: crate::SCHEMA_VERSION,
            entries: self.entries.len(),
        };
        serde_json::to_writer(&mut w, &header)?;
        w.write_all(b"\n")?;
        for e in &self.entries {
            serde_json::to_writer(&mut w, e)?;
            w.write_all(b"\n")?;
        }
        w.flush()
    }

    pub fn read_from(r: impl BufRead) -> io::Result<Manifest> {
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
        let mut entries = Vec::with_capacity(header.entries);
        for (n, line) in lines.enumerate() {
            let line = line?;
            if line.is_empty() {
                continue;
            }
            let e: ManifestEntry = serde_json::from_str(&line).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("manifest line {}: {e}", n + 2),
                )
            })?;
            entries.push(e);
        }
        if entries.len() != header.entries {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "manifest is truncated: header says {} entries, found {}",
                    header.entries,
                    entries.len()
                ),
            ));
        }
        Ok(Manifest { entries })
    }
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
}
