//! Keeps a private tree's names out of tool logs (issue 31). A tool that
//! lists what it backs up or restores (`restic -vv`, `borg --list`) or
//! names a file in a warning would put the owner's paths into the
//! evidence; the manifests already hold them hashed. Every path of the
//! tree, and every name in one, found in a log between delimiters is
//! replaced by its hashed form ([`hashed_path`], as the manifests have it),
//! so an absolute path the tool prints becomes its folder's path followed
//! by hashes.
//!
//! Matching is by delimiters (whitespace, `/`, quotes, brackets, `,:;=`),
//! not by substring: a file named `a` hides the word `a`, not every letter
//! a. A name holding a delimiter (a space) is still found whole: every span
//! between two delimiters up to the longest path is tried, longest first.

use labrun_evidence::manifest::hashed_path;
use std::collections::HashSet;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Logs are rewritten in pieces of about this many bytes, cut after a
/// newline (a name with a newline in it is found unless a cut falls in it).
const CHUNK: usize = 1 << 20;

#[derive(Debug, Default)]
pub struct PathRedactor {
    known: HashSet<Box<[u8]>>,
    longest: usize,
}

impl PathRedactor {
    /// Learns `path` (relative, `/`-separated) and each name in it.
    pub fn add(&mut self, path: &str) {
        for part in std::iter::once(path).chain(path.split('/')) {
            if !part.is_empty() && !self.known.contains(part.as_bytes()) {
                self.longest = self.longest.max(part.len());
                self.known.insert(part.as_bytes().into());
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.known.is_empty()
    }

    /// `text` with every known path or name hashed; `None` when none is in it.
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

    /// The end of the longest known span that starts at `start` and ends
    /// before a delimiter (or the end of the text).
    fn longest_match(&self, text: &[u8], start: usize) -> Option<usize> {
        let limit = text.len().min(start.saturating_add(self.longest));
        (start + 1..=limit)
            .rev()
            .filter(|&end| {
                (end == text.len() || is_delimiter(text[end])) && !is_delimiter(text[end - 1])
            })
            .find(|&end| self.known.contains(&text[start..end]))
    }

    /// Rewrites the log at `path` if it names any known path; true when it
    /// did. A missing log (a step that never started) is no error.
    pub fn redact_file(&self, path: &Path) -> io::Result<bool> {
        if self.is_empty() {
            return Ok(false);
        }
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
    fn hashes_paths_and_names_between_delimiters_only() {
        let r = redactor(&["photos/my cat.jpg", "a"]);
        let (path, name, dir) = (
            hashed_path("photos/my cat.jpg"),
            hashed_path("my cat.jpg"),
            hashed_path("photos"),
        );
        assert_eq!(redact(&r, "A photos/my cat.jpg\n"), format!("A {path}\n"));
        assert_eq!(
            redact(&r, "new  /w/c1/source/photos/my cat.jpg, saved"),
            format!("new  /w/c1/source/{path}, saved")
        );
        assert_eq!(redact(&r, "'my cat.jpg': ok"), format!("'{name}': ok"));
        assert_eq!(redact(&r, "photos/other"), format!("{dir}/other"));
        // `a` alone is a name; inside a word it is not.
        assert_eq!(
            redact(&r, "a banana"),
            format!("{} banana", hashed_path("a"))
        );
        assert!(r.redact(b"Files: 3 new, catalog").is_none());
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
        assert_eq!(
            std::fs::read_to_string(&dirty).unwrap(),
            format!(
                "A {}\nd {}\n",
                hashed_path("secret/plan.txt"),
                hashed_path("secret")
            )
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }
}
