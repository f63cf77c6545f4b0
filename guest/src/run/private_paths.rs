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
//! keyed 64-bit hash (8 bytes, whatever its length) in a sorted vector.
//! A span of a log that hashes like a name by chance (a span's odds are
//! the number of names in 2^64) is hashed too: over-redaction, harmless.
//!
//! Matching is by delimiters (whitespace, `/`, quotes, brackets, `,:;=`),
//! not by substring: a file named `a` hides the word `a`, not every letter
//! a. A name holding a delimiter (a space) is still found whole: every span
//! between two delimiters, up to the longest name and never across a `/`
//! (no name holds one), is tried, longest first.

use labrun_evidence::manifest::hashed_path;
use std::fs::File;
use std::hash::{BuildHasher, RandomState};
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Logs are rewritten in pieces of about this many bytes, cut after a
/// newline (a name with a newline in it is found unless a cut falls in it).
const CHUNK: usize = 1 << 20;

/// Names added before the first sort and deduplication: a small tree is
/// sorted once, when it is finished.
const FIRST_SORT: usize = 4096;

#[derive(Debug, Default, Clone)]
pub struct PathRedactor {
    /// Keyed hashes of the names: `names[..sorted]` sorted and without
    /// repeats, the rest as added since.
    names: Vec<u64>,
    sorted: usize,
    /// A key of this process's own, so which spans collide with a name by
    /// chance cannot be known ahead.
    key: RandomState,
    /// Bytes of the longest name: no longer span is tried.
    longest: usize,
    /// The file the finished names wait in while tools run
    /// ([`PathRedactor::park`]), and how many there are.
    parked: Option<(PathBuf, usize)>,
}

impl PathRedactor {
    /// Learns each name in `path` (relative, `/`-separated). Call
    /// [`PathRedactor::finish`] once the tree is added.
    pub fn add(&mut self, path: &str) {
        for name in path.split('/').filter(|n| !n.is_empty()) {
            let hash = self.key.hash_one(name.as_bytes());
            if self.names[..self.sorted].binary_search(&hash).is_ok() {
                continue;
            }
            self.longest = self.longest.max(name.len());
            self.names.push(hash);
            // Sorting when the names double keeps repeats (a folder's
            // name comes with every path under it) to at most as many as
            // the distinct names, at a sort's cost per doubling.
            if self.names.len() >= self.next_sort() {
                self.sort_names();
                // Room for exactly what comes before the next sort, not
                // the vector's own doubling on top of it.
                let room = self.next_sort();
                self.names
                    .reserve_exact(room.saturating_sub(self.names.len()));
            }
        }
    }

    /// Sorts the names added last and frees the room kept for more: 8
    /// bytes a distinct name from then on, each found by a binary search.
    /// Names added after it are still found (the slower way) until the
    /// next call.
    pub fn finish(&mut self) {
        self.sort_names();
        self.names.shrink_to_fit();
    }

    /// How many names, repeats included, the vector may hold before the
    /// next sort.
    fn next_sort(&self) -> usize {
        2 * self.sorted.max(FIRST_SORT / 2)
    }

    fn sort_names(&mut self) {
        self.names.sort_unstable();
        self.names.dedup();
        self.sorted = self.names.len();
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty() && self.parked.is_none()
    }

    /// Finishes the names and moves them to the file `path` (in the work
    /// folder): 8 bytes a distinct name that the agent would otherwise
    /// hold through every tool's run (32 MiB for a tree of 4 million
    /// unique names), read back only while a log is redacted. On an error
    /// the names stay in memory, where they work as well.
    pub fn park(&mut self, path: &Path) -> io::Result<()> {
        self.finish();
        if self.names.is_empty() {
            return Ok(());
        }
        let mut out = BufWriter::new(File::create(path)?);
        for hash in &self.names {
            out.write_all(&hash.to_le_bytes())?;
        }
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        self.parked = Some((path.to_path_buf(), self.names.len()));
        self.names = Vec::new();
        self.sorted = 0;
        Ok(())
    }

    /// The redactor with its names in memory: itself, or, when they are
    /// parked, a copy that reads them back.
    fn loaded(&self) -> io::Result<std::borrow::Cow<'_, PathRedactor>> {
        let Some((path, count)) = &self.parked else {
            return Ok(std::borrow::Cow::Borrowed(self));
        };
        let bytes = std::fs::read(path)?;
        if bytes.len() != count * 8 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: {} bytes, expected {} names of 8: the work folder's file of a private tree's names was changed",
                    path.display(),
                    bytes.len(),
                    count
                ),
            ));
        }
        let names: Vec<u64> = bytes
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
            .collect();
        Ok(std::borrow::Cow::Owned(PathRedactor {
            sorted: names.len(),
            names,
            key: self.key.clone(),
            longest: self.longest,
            parked: None,
        }))
    }

    fn knows(&self, span: &[u8]) -> bool {
        let hash = self.key.hash_one(span);
        let (sorted, added) = self.names.split_at(self.sorted);
        sorted.binary_search(&hash).is_ok() || added.contains(&hash)
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
    fn keeps_each_distinct_name_once_sorted_or_not() {
        let mut r = PathRedactor::default();
        let path = |i: usize| format!("folder {}/sub/file {i}", i % 10);
        for i in 0..10_000 {
            r.add(&path(i));
            // Repeats never pile up past the distinct names (sub, ten
            // folders, i+1 files) before the first sort, then twice them.
            assert!(r.names.len() <= (2 * (11 + i + 1)).max(FIRST_SORT));
        }
        // Not finished: the names added since the last sort are found too.
        assert!(r.redact(path(9_999).as_bytes()).is_some());
        r.finish();
        assert_eq!(r.names.len(), 11 + 10_000);
        assert!(r.names.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(r.longest, "folder 0".len().max("file 9999".len()));
        let expected = format!(
            "{}/{}/{}",
            hashed_path("folder 3"),
            hashed_path("sub"),
            hashed_path("file 123")
        );
        assert_eq!(redact(&r, "folder 3/sub/file 123"), expected);
        assert!(r.redact(b"folder 10/file 10000").is_none());
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
        assert_eq!(std::fs::metadata(&file).unwrap().len(), (10_000 + 7) * 8);
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
