//! Keeps a private tree's names out of tool logs (issue 31). A tool that
//! lists what it backs up or restores (`restic -vv`, `borg --list`) or
//! names a file in a warning would put the owner's paths into the
//! evidence; the manifests already hold them hashed. Every name of the
//! tree (a component of one of its paths) found in a log between
//! delimiters is replaced by its hashed form ([`hashed_path`] of the name,
//! which its owner maps back as a manifest's path), so a path the tool
//! prints becomes its folder's path followed by a hash per name:
//! `/w/c1/source/photos/my cat.jpg` becomes `/w/c1/source/H1/H2`.
//!
//! Names, not whole paths, are what is kept: the set of a tree's paths is
//! as large as the tree (millions of them at millions of files), while
//! names repeat from folder to folder, and hashing each name of a path
//! keeps all of the path out of the log just as well. A name is kept as a
//! keyed hash in 4 bytes ([`NameSet`]); between tool steps the set waits
//! in the work folder ([`PathRedactor::park`]), read back only to redact.
//!
//! Matching is by delimiters (whitespace, `/`, quotes, brackets, `,:;=`),
//! not by substring: a file named `a` hides the word `a`, not every letter
//! a. A name holding a delimiter (a space) is still found whole: every span
//! between two delimiters, up to the longest name and never across a `/`
//! (no name holds one), is tried, longest first.

use crate::run::name_set::NameSet;
use labrun_evidence::manifest::hashed_path;
use std::fs::File;
use std::hash::{BuildHasher, RandomState};
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Logs are rewritten in pieces of about this many bytes, cut after a
/// newline (a name with a newline in it is found unless a cut falls in it).
const CHUNK: usize = 1 << 20;

#[derive(Debug, Default, Clone)]
pub struct PathRedactor {
    /// The names learnt and finished.
    names: NameSet,
    /// Keyed hashes of names added by [`PathRedactor::add`] since the last
    /// [`PathRedactor::finish`] (found too, the slower way).
    pending: Vec<u64>,
    /// A key of this process's own, so which spans collide with a name by
    /// chance cannot be known ahead.
    key: RandomState,
    /// Bytes of the longest name: no longer span is tried.
    longest: usize,
    /// The file the finished names wait in while tools run
    /// ([`PathRedactor::park`]).
    parked: Option<PathBuf>,
}

impl PathRedactor {
    /// Learns each name in `path` (relative, `/`-separated), as tests
    /// do; a run learns a tree from its manifest
    /// ([`PathRedactor::add_trees`]). Call [`PathRedactor::finish`] once
    /// the names are added.
    #[cfg(test)]
    pub fn add(&mut self, path: &str) {
        for name in path.split('/').filter(|n| !n.is_empty()) {
            self.longest = self.longest.max(name.len());
            self.pending.push(self.key.hash_one(name.as_bytes()));
        }
    }

    /// Learns every name of the trees whose manifest files are given, read
    /// twice, holding 4 bytes a name: a manifest lists every folder, so the
    /// last name of each path is each name of the tree once.
    pub fn add_trees(&mut self, manifests: &[PathBuf]) -> io::Result<()> {
        let (key, mut longest) = (self.key.clone(), self.longest);
        let mut each = |put: &mut dyn FnMut(u64)| -> io::Result<()> {
            for path in manifests {
                let file = File::open(path)?;
                for entry in labrun_evidence::ManifestReader::new(BufReader::new(file))? {
                    let entry = entry?;
                    let name = entry.path.rsplit('/').next().unwrap_or(&entry.path);
                    if !name.is_empty() {
                        longest = longest.max(name.len());
                        put(key.hash_one(name.as_bytes()));
                    }
                }
            }
            Ok(())
        };
        self.names = self.names.with(&mut each)?;
        self.longest = longest;
        Ok(())
    }

    /// Moves the names added one by one into the set.
    pub fn finish(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.pending);
        let mut each = |put: &mut dyn FnMut(u64)| -> io::Result<()> {
            pending.iter().for_each(|&h| put(h));
            Ok(())
        };
        match self.names.with(&mut each) {
            Ok(names) => self.names = names,
            // Not reached (the same hashes both times); keep looking them
            // up the slow way rather than lose them.
            Err(_) => self.pending = pending,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty() && self.pending.is_empty() && self.parked.is_none()
    }

    /// Finishes the names and moves them to the file `path` (in the work
    /// folder): 4 bytes a name that the agent would otherwise hold through
    /// every tool's run, read back only while a log is redacted. On an
    /// error the names stay in memory, where they work as well.
    pub fn park(&mut self, path: &Path) -> io::Result<()> {
        self.finish();
        if self.names.is_empty() {
            return Ok(());
        }
        let mut out = BufWriter::new(File::create(path)?);
        out.write_all(&self.names.to_bytes())?;
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        self.parked = Some(path.to_path_buf());
        self.names = NameSet::default();
        Ok(())
    }

    /// The redactor with its names in memory: itself, or, when they are
    /// parked, a copy that reads them back.
    fn loaded(&self) -> io::Result<std::borrow::Cow<'_, PathRedactor>> {
        let Some(path) = &self.parked else {
            return Ok(std::borrow::Cow::Borrowed(self));
        };
        let names = NameSet::from_bytes(&std::fs::read(path)?).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: not the names parked there: the work folder's file of a private tree's names was changed",
                    path.display()
                ),
            )
        })?;
        Ok(std::borrow::Cow::Owned(PathRedactor {
            names,
            pending: self.pending.clone(),
            key: self.key.clone(),
            longest: self.longest,
            parked: None,
        }))
    }

    fn knows(&self, span: &[u8]) -> bool {
        let hash = self.key.hash_one(span);
        self.names.contains(hash) || self.pending.contains(&hash)
    }

    /// `text` with every known name hashed; `None` when none is in it.
    pub fn redact(&self, text: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        let (mut copied, mut i, mut found) = (0, 0, false);
        while i < text.len() {
            let starts = (i == 0 || is_delimiter(text[i - 1])) && !is_delimiter(text[i]);
            if let Some(end) = starts.then(|| self.longest_match(text, i)).flatten() {
                out.extend_from_slice(&text[copied..i]);
                let name = String::from_utf8_lossy(&text[i..end]);
                out.extend_from_slice(hashed_path(&name).as_bytes());
                (copied, i, found) = (end, end, true);
            } else {
                i += 1;
            }
        }
        out.extend_from_slice(&text[copied..]);
        found.then_some(out)
    }

    /// The end of the longest known name that starts at `start` and ends
    /// before a delimiter (or the end of the text).
    fn longest_match(&self, text: &[u8], start: usize) -> Option<usize> {
        let limit = text.len().min(start.saturating_add(self.longest));
        let limit = text[start..limit]
            .iter()
            .position(|&b| b == b'/')
            .map_or(limit, |slash| start + slash);
        (start + 1..=limit)
            .rev()
            .filter(|&end| {
                (end == text.len() || is_delimiter(text[end])) && !is_delimiter(text[end - 1])
            })
            .find(|&end| self.knows(&text[start..end]))
    }

    /// Rewrites the log at `path` if it names any known name; true when it
    /// did. A missing log (a step that never started) is no error.
    pub fn redact_file(&self, path: &Path) -> io::Result<bool> {
        if self.is_empty() {
            return Ok(false);
        }
        self.loaded()?.redact_loaded_file(path)
    }

    fn redact_loaded_file(&self, path: &Path) -> io::Result<bool> {
        let input = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        let mut input = BufReader::new(input);
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".redacting");
        let tmp = PathBuf::from(tmp);
        let mut output = BufWriter::new(File::create(&tmp)?);
        let mut changed = false;
        let mut chunk = Vec::with_capacity(CHUNK + 4096);
        loop {
            chunk.clear();
            while chunk.len() < CHUNK && input.read_until(b'\n', &mut chunk)? > 0 {}
            if chunk.is_empty() {
                break;
            }
            match self.redact(&chunk) {
                Some(redacted) => {
                    changed = true;
                    output.write_all(&redacted)?;
                }
                None => output.write_all(&chunk)?,
            }
        }
        output.flush()?;
        drop(output);
        if changed {
            std::fs::rename(&tmp, path)?;
        } else {
            std::fs::remove_file(&tmp)?;
        }
        Ok(changed)
    }
}

fn is_delimiter(b: u8) -> bool {
    b.is_ascii_whitespace() || b"/\"'`()[]{}<>,;:=".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor(paths: &[&str]) -> PathRedactor {
        let mut r = PathRedactor::default();
        for p in paths {
            r.add(p);
        }
        r.finish();
        r
    }

    fn redact(r: &PathRedactor, text: &str) -> String {
        String::from_utf8(
            r.redact(text.as_bytes())
                .unwrap_or_else(|| text.as_bytes().to_vec()),
        )
        .unwrap()
    }

    #[test]
    fn hashes_names_between_delimiters_only() {
        let r = redactor(&["photos/my cat.jpg", "a"]);
        let (dir, name) = (hashed_path("photos"), hashed_path("my cat.jpg"));
        assert_eq!(
            redact(&r, "A photos/my cat.jpg\n"),
            format!("A {dir}/{name}\n")
        );
        assert_eq!(
            redact(&r, "new  /w/c1/source/photos/my cat.jpg, saved"),
            format!("new  /w/c1/source/{dir}/{name}, saved")
        );
        assert_eq!(redact(&r, "'my cat.jpg': ok"), format!("'{name}': ok"));
        assert_eq!(redact(&r, "photos/other"), format!("{dir}/other"));
        // `a` alone is a name; inside a word it is not.
        assert_eq!(
            redact(&r, "a banana"),
            format!("{} banana", hashed_path("a"))
        );
        assert!(r.redact(b"Files: 3 new, catalog").is_none());
        // A name is never looked for across a `/`: `my cat.jpg/x` names
        // the file and then `x`, not a longer name.
        assert_eq!(redact(&r, "my cat.jpg/x"), format!("{name}/x"));
    }

    #[test]
    fn keeps_each_distinct_name_once_from_paths_or_manifests() {
        let mut r = PathRedactor::default();
        let path = |i: usize| format!("folder {}/sub/file {i}", i % 10);
        for i in 0..10_000 {
            r.add(&path(i));
        }
        // Not finished: the names added are found too.
        assert!(r.redact(path(9_999).as_bytes()).is_some());
        r.finish();
        assert_eq!(r.names.len(), 11 + 10_000);
        assert!(r.pending.is_empty());
        assert_eq!(r.longest, "folder 0".len().max("file 9999".len()));
        let expected = format!(
            "{}/{}/{}",
            hashed_path("folder 3"),
            hashed_path("sub"),
            hashed_path("file 123")
        );
        assert_eq!(redact(&r, "folder 3/sub/file 123"), expected);
        assert!(r.redact(b"folder 10/file 10000").is_none());

        // The same names from a manifest file: each entry's last name.
        let dir = tempfile::tempdir().unwrap();
        let mut m = labrun_evidence::Manifest::default();
        for f in 0..10 {
            m.entries.push(entry(&format!("folder {f}")));
            m.entries.push(entry(&format!("folder {f}/sub")));
        }
        m.entries.extend((0..10_000).map(|i| entry(&path(i))));
        let file = dir.path().join("m.jsonl");
        labrun_dataset::write_manifest(&file, &m).unwrap();
        let mut from_file = PathRedactor {
            key: r.key.clone(),
            ..PathRedactor::default()
        };
        from_file.add_trees(&[file]).unwrap();
        assert_eq!(from_file.names, r.names);
        assert_eq!(from_file.longest, r.longest);
    }

    fn entry(path: &str) -> labrun_evidence::ManifestEntry {
        labrun_evidence::ManifestEntry {
            path: path.into(),
            ..labrun_evidence::ManifestEntry::default()
        }
    }

    #[test]
    fn rewrites_a_log_only_when_it_names_the_tree() {
        let dir = tempfile::tempdir().unwrap();
        let (clean, dirty) = (dir.path().join("clean"), dir.path().join("dirty"));
        std::fs::write(&clean, "processed 3 files\n").unwrap();
        std::fs::write(&dirty, "A secret/plan.txt\nd secret\n").unwrap();
        let r = redactor(&["secret/plan.txt"]);
        assert!(!r.redact_file(&clean).unwrap());
        assert!(r.redact_file(&dirty).unwrap());
        assert!(!r.redact_file(&dir.path().join("missing")).unwrap());
        let secret = hashed_path("secret");
        assert_eq!(
            std::fs::read_to_string(&dirty).unwrap(),
            format!("A {secret}/{}\nd {secret}\n", hashed_path("plan.txt"))
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn parked_names_redact_as_names_in_memory_do() {
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<String> = (0..10_000)
            .map(|i| format!("d{}/f{i}.jpg", i % 7))
            .collect();
        let mut held = PathRedactor::default();
        for p in &paths {
            held.add(p);
        }
        let mut parked = held.clone();
        held.finish();
        let file = dir.path().join("names");
        parked.park(&file).unwrap();
        assert!(parked.names.is_empty() && !parked.is_empty());
        assert_eq!(
            std::fs::metadata(&file).unwrap().len(),
            ((1 << 16) + 1 + 10_000 + 7) * 4
        );
        let log = "backed up /w/source/d3/f17.jpg and d0/f9999.jpg, kept d5\n";
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, log).unwrap();
        std::fs::write(&b, log).unwrap();
        assert!(held.redact_file(&a).unwrap());
        assert!(parked.redact_file(&b).unwrap());
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        assert!(!std::fs::read_to_string(&b).unwrap().contains("f17"));

        // A names file that is not what was parked is an error, not a log
        // left unredacted.
        std::fs::write(&file, b"short").unwrap();
        let err = parked.redact_file(&b).unwrap_err().to_string();
        assert!(err.contains("was changed"), "{err}");

        // Nothing to park: nothing written, still empty.
        let mut empty = PathRedactor::default();
        empty.park(&dir.path().join("none")).unwrap();
        assert!(empty.is_empty() && !dir.path().join("none").exists());
    }
}
