//! A synthetic git history for the second study (SPEC 6): a code base of
//! text-like source files that moves forward commit by commit with the churn
//! of a real project (per commit some files edited, some added, some
//! removed, some renamed).
//!
//! - [`History`]: the commits, computed from [`HistoryGenerator`] alone
//!   (same parameters, same commits, same bytes on any machine);
//! - [`checkout`]: moves a work tree to a commit exactly as `git checkout`
//!   would (files written, rewritten, removed; emptied directories removed;
//!   modes 0644/0755), so the machine under test needs no git.
//!
//! Determinism: every decision comes from ChaCha20 streams keyed by
//! SHA-256(`"labrun-history/v1/" || seed`), one stream per commit (see
//! `churn.rs`); a line's text comes from its 64-bit seed through SplitMix64
//! (see `text.rs`). Files carry line seeds, not bytes, so an edit changes a
//! few lines of a file and keeps the rest, as real edits do.

mod churn;
mod error;
mod text;
mod worktree;

pub use error::HistoryError;
pub use labrun_evidence::HistoryGenerator;
pub use worktree::{CheckoutStats, TreeIndex, checkout};

use std::collections::BTreeMap;

/// Limits that keep a lab's typo from filling a disk or running for days.
pub const MAX_COMMITS: u32 = 10_000;
pub const MAX_FILES: u32 = 2_000_000;
pub const MIN_MEAN_FILE_BYTES: u32 = 64;
pub const MAX_MEAN_FILE_BYTES: u32 = 16 << 20;

/// One file of a commit: its content is its lines' text, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileState {
    /// Changes whenever the content changes (a global counter): two commits
    /// hold the same bytes at a path when the revision is the same.
    pub revision: u64,
    pub executable: bool,
    lines: Vec<u64>,
}

impl FileState {
    /// The file's bytes: each line's text and a newline.
    pub fn content(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.lines.len() * 40);
        for &seed in &self.lines {
            text::render_line(seed, &mut out);
            out.push(b'\n');
        }
        out
    }
}

/// The commits of a synthetic history, visited in order.
#[derive(Debug, Clone)]
pub struct History {
    params: HistoryGenerator,
    state: churn::State,
    /// 1-based index of the commit the files describe.
    index: u32,
}

/// Checks a generator's parameters; every problem is named with its field.
pub fn validate(p: &HistoryGenerator) -> Result<(), HistoryError> {
    let bad = |field: &'static str, message: String| Err(HistoryError::Invalid { field, message });
    if p.commits == 0 || p.commits > MAX_COMMITS {
        return bad(
            "commits",
            format!("{} is out of range: use 1 to {MAX_COMMITS}", p.commits),
        );
    }
    if p.files == 0 || p.files > MAX_FILES {
        return bad(
            "files",
            format!("{} is out of range: use 1 to {MAX_FILES}", p.files),
        );
    }
    if !(MIN_MEAN_FILE_BYTES..=MAX_MEAN_FILE_BYTES).contains(&p.mean_file_bytes) {
        return bad(
            "mean_file_bytes",
            format!(
                "{} is out of range: use {MIN_MEAN_FILE_BYTES} to {MAX_MEAN_FILE_BYTES} (a source file is typically 4000 to 30000 bytes)",
                p.mean_file_bytes
            ),
        );
    }
    if !(p.churn.is_finite() && p.churn > 0.0 && p.churn <= 1.0) {
        return bad(
            "churn",
            format!(
                "{} is out of range: use a share in (0, 1], e.g. 0.02 for 2% of the files touched per commit",
                p.churn
            ),
        );
    }
    Ok(())
}

impl History {
    /// The history at its first commit.
    pub fn new(params: &HistoryGenerator) -> Result<History, HistoryError> {
        validate(params)?;
        Ok(History {
            params: params.clone(),
            state: churn::State::first_commit(params),
            index: 1,
        })
    }

    /// 1-based index of the current commit.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// How many commits the history has.
    pub fn commits(&self) -> u32 {
        self.params.commits
    }

    /// The current commit's name in records: `gen-<index>`.
    pub fn label(&self) -> String {
        label(self.index)
    }

    /// Moves to the next commit; false (and no change) after the last one.
    pub fn advance(&mut self) -> bool {
        if self.index >= self.params.commits {
            return false;
        }
        self.index += 1;
        self.state.next_commit(&self.params, self.index);
        true
    }

    /// The current commit's files by path (`/`-separated, sorted).
    pub fn files(&self) -> &BTreeMap<String, FileState> {
        &self.state.files
    }

    /// Bytes of every file of the current commit (renders each one).
    pub fn total_bytes(&self) -> u64 {
        self.files()
            .values()
            .map(|f| f.content().len() as u64)
            .sum()
    }
}

/// The name of commit `index` of a synthetic history.
pub fn label(index: u32) -> String {
    format!("gen-{index}")
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn params(commits: u32, files: u32) -> HistoryGenerator {
        HistoryGenerator {
            seed: 5,
            commits,
            files,
            mean_file_bytes: 2000,
            churn: 0.1,
        }
    }

    #[test]
    fn same_seed_same_commits_other_seed_other_commits() {
        let walk = |p: &HistoryGenerator| {
            let mut h = History::new(p).unwrap();
            let mut out = vec![h.files().clone()];
            while h.advance() {
                out.push(h.files().clone());
            }
            out
        };
        let p = params(6, 80);
        let a = walk(&p);
        assert_eq!(a.len(), 6);
        assert_eq!(a, walk(&p));
        let other = HistoryGenerator { seed: 6, ..p };
        assert_ne!(a, walk(&other));
    }

    #[test]
    fn every_commit_has_edits_adds_removes_and_renames_over_the_series() {
        let p = params(12, 200);
        let mut h = History::new(&p).unwrap();
        assert_eq!(h.files().len(), 200);
        let (mut edited, mut added, mut removed) = (0, 0, 0);
        let mut renamed = 0;
        let mut prev = h.files().clone();
        while h.advance() {
            let now = h.files();
            assert_ne!(&prev, now, "commit {} changed nothing", h.index());
            for (path, f) in now {
                match prev.get(path) {
                    Some(old) if old.revision != f.revision => edited += 1,
                    Some(_) => {}
                    None => {
                        // A rename keeps the content's lines.
                        if prev.values().any(|o| o.lines == f.lines) {
                            renamed += 1
                        } else {
                            added += 1
                        }
                    }
                }
            }
            removed += prev.keys().filter(|p| !now.contains_key(*p)).count();
            prev = now.clone();
        }
        assert!(
            edited > 50 && added > 5 && removed > 5 && renamed > 0,
            "edited {edited} added {added} removed {removed} renamed {renamed}"
        );
        assert!(!h.advance(), "12 commits, not more");
        assert_eq!(h.index(), 12);
    }

    #[test]
    fn files_look_like_source_and_sizes_follow_the_mean() {
        let p = HistoryGenerator {
            mean_file_bytes: 6000,
            ..params(1, 400)
        };
        let h = History::new(&p).unwrap();
        let mean = h.total_bytes() as f64 / 400.0;
        assert!((4000.0..8500.0).contains(&mean), "mean {mean}");
        let (path, f) = h.files().iter().next().unwrap();
        let text = String::from_utf8(f.content()).unwrap();
        assert!(
            text.ends_with('\n') && text.lines().count() > 1,
            "{path}: {text}"
        );
        assert!(text.is_ascii(), "{text}");
    }

    #[test]
    fn parameters_are_validated_with_the_field_named() {
        for (p, field) in [
            (
                HistoryGenerator {
                    commits: 0,
                    ..params(1, 1)
                },
                "commits",
            ),
            (
                HistoryGenerator {
                    files: 0,
                    ..params(1, 1)
                },
                "files",
            ),
            (
                HistoryGenerator {
                    churn: 0.0,
                    ..params(1, 1)
                },
                "churn",
            ),
            (
                HistoryGenerator {
                    churn: f64::NAN,
                    ..params(1, 1)
                },
                "churn",
            ),
            (
                HistoryGenerator {
                    mean_file_bytes: 1,
                    ..params(1, 1)
                },
                "mean_file_bytes",
            ),
        ] {
            let e = History::new(&p).unwrap_err();
            assert!(e.to_string().contains(field), "{e}");
        }
    }
}
