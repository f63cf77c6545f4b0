//! The commits of a git-history dataset, whatever their source: a synthetic
//! history the agent computes and writes itself, or a repository read with
//! git. Either way the work tree moves forward one commit at a time.

use super::git;
use labrun_dataset::history::{self, History, TreeIndex};
use labrun_evidence::HistorySource;
use std::path::{Path, PathBuf};

pub enum Series {
    Generated {
        history: Box<History>,
        on_disk: TreeIndex,
    },
    /// A series of real trees, each ready in its folder: the work tree is
    /// made identical to the next one.
    Trees {
        trees: Vec<PathBuf>,
        /// The run's folder, where each tree's manifest is.
        root: PathBuf,
    },
    Git {
        clone: PathBuf,
        /// This tool cycle's index file: what its work tree holds.
        index: PathBuf,
        commits: Vec<String>,
    },
}

impl Series {
    /// The series at its start (an empty work tree). `root` is the run's
    /// work folder (where the clone is), `work` the tool cycle's.
    pub fn open(source: &HistorySource, root: &Path, work: &Path) -> Result<Series, String> {
        match source {
            HistorySource::Generate(params) => Ok(Series::Generated {
                history: Box::new(History::new(params).map_err(|e| e.to_string())?),
                on_disk: TreeIndex::default(),
            }),
            HistorySource::Trees { trees, sample, .. } => Ok(Series::Trees {
                root: root.to_path_buf(),
                trees: trees
                    .iter()
                    .enumerate()
                    .map(|(i, t)| {
                        crate::run::runner::real_tree::series_tree(t, sample.is_some(), root, i + 1)
                    })
                    .collect(),
            }),
            HistorySource::Repository { commits, .. } => {
                let clone = root.join(git::CLONE_DIR);
                Ok(Series::Git {
                    commits: git::resolve(&clone, commits)?,
                    clone,
                    index: work.join("git-index"),
                })
            }
        }
    }

    pub fn len(&self) -> u32 {
        match self {
            Series::Generated { history, .. } => history.commits(),
            Series::Git { commits, .. } => commits.len() as u32,
            Series::Trees { trees, .. } => trees.len() as u32,
        }
    }

    /// Commit `k` (1-based): its id, or the synthetic history's label.
    pub fn commit(&self, k: u32) -> String {
        match self {
            Series::Generated { .. } => history::label(k),
            // Not the folder's name: a private tree's paths stay its own.
            Series::Trees { .. } => format!("tree-{k}"),
            Series::Git { commits, .. } => commits
                .get(k.saturating_sub(1) as usize)
                .cloned()
                .unwrap_or_default(),
        }
    }

    /// What the records of commit `k` carry (none before the first).
    pub fn point(&self, k: u32) -> Option<labrun_evidence::HistoryPoint> {
        (k > 0).then(|| labrun_evidence::HistoryPoint {
            index: k,
            commit: self.commit(k),
        })
    }

    /// Moves the work tree `dir` to commit `k`: the first commit into an
    /// empty folder, then each next one in turn.
    pub fn move_to(&mut self, k: u32, dir: &Path) -> Result<(), String> {
        match self {
            Series::Generated { history, on_disk } => {
                if k != history.index() && !(k == history.index() + 1 && history.advance()) {
                    return Err(format!(
                        "commit {k} asked after commit {}: the series only moves forward (a bug in labrun)",
                        history.index()
                    ));
                }
                let (now, _) =
                    history::checkout(dir, on_disk, history).map_err(|e| e.to_string())?;
                *on_disk = now;
                Ok(())
            }
            Series::Trees { trees, root } => {
                let tree = trees.get(k.saturating_sub(1) as usize).ok_or_else(|| {
                    format!("tree {k} is beyond the {} of the series", trees.len())
                })?;
                let rewrite = changed_files(root, k)?;
                std::fs::create_dir_all(dir)
                    .and_then(|()| crate::run::reset::reset_tree(tree, dir, &rewrite))
                    .map(|_| ())
                    .map_err(|e| format!("cannot make the work tree tree {k}: {e}"))
            }
            Series::Git {
                clone,
                index,
                commits,
            } => {
                let commit = commits.get(k.saturating_sub(1) as usize).ok_or_else(|| {
                    format!("commit {k} is beyond the {} selected", commits.len())
                })?;
                git::checkout(clone, index, commit, dir)
            }
        }
    }
}

impl Series {
    /// Checks the work tree after a move to tree `k` of a series of real
    /// trees against that tree's own manifest: a move that left a file
    /// behind or unrewritten would otherwise become the commit's manifest,
    /// and every restore of it would pass. Counts only: a private tree's
    /// paths stay out of the record.
    pub fn check_moved(
        &self,
        k: u32,
        found: &Path,
        written: &labrun_dataset::WrittenManifest,
    ) -> Result<(), String> {
        let Series::Trees { root, .. } = self else {
            return Ok(());
        };
        // The same manifest file, byte for byte, or not the same tree.
        let expected = manifest_of(root, k as usize);
        let digest = labrun_evidence::digest::sha256_file(&expected)
            .map_err(|e| format!("cannot read {}: {e}", expected.display()))?;
        if digest == written.sha256 {
            return Ok(());
        }
        // A bug's path: what differs is counted holding the work tree's
        // manifest.
        let found = labrun_dataset::read_manifest(found).map_err(|e| e.to_string())?;
        let outcome =
            labrun_dataset::compare_against_file(&expected, &found).map_err(|e| e.to_string())?;
        Err(format!(
            "after the move the work tree is not tree {k}: {} missing, {} extra, {} changed (a bug in labrun: please report it with this run's evidence)",
            outcome.missing, outcome.extra, outcome.changed
        ))
    }
}

/// Where tree `k`'s manifest is kept during the run.
pub fn manifest_of(root: &Path, k: usize) -> PathBuf {
    crate::run::runner::real_tree::series_dir(root, k).join("manifest.jsonl")
}

/// The files of tree `k` whose bytes differ from tree `k - 1`'s: copied
/// whole when the work tree moves, since the move's walk only sees names,
/// sizes, modes and mtimes (two releases may share a file's size and
/// mtime and not its bytes).
fn changed_files(root: &Path, k: u32) -> Result<labrun_dataset::ChangePlan, String> {
    let small_files = match k {
        0 | 1 => Vec::new(),
        k => changed_between(
            &manifest_of(root, k as usize - 1),
            &manifest_of(root, k as usize),
        )?,
    };
    Ok(labrun_dataset::ChangePlan {
        small_files,
        regions: Vec::new(),
    })
}

/// The files of `now` that are in `before` with other bytes: both manifest
/// files merged as they are read (a tree of millions of files is never
/// held, issue 31). Both were written by this run, in manifest order.
fn changed_between(before: &Path, now: &Path) -> Result<Vec<String>, String> {
    let open = |path: &Path| {
        std::fs::File::open(path)
            .and_then(|f| labrun_evidence::ManifestReader::new(std::io::BufReader::new(f)))
            .map_err(|e| format!("cannot read {}: {e}", path.display()))
    };
    let in_order = |path: &Path| {
        let path = path.to_path_buf();
        let mut last = String::new();
        move |e: std::io::Result<labrun_evidence::ManifestEntry>| {
            let e = e.map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            if e.path < last {
                return Err(format!(
                    "{} is not in manifest order (a bug in labrun: please report it with this run's evidence)",
                    path.display()
                ));
            }
            last.clone_from(&e.path);
            Ok(e)
        }
    };
    let mut old = open(before)?.map(in_order(before)).peekable();
    let mut changed = Vec::new();
    for e in open(now)?.map(in_order(now)) {
        let e = e?;
        let mut same_path = None;
        while let Some(o) =
            old.next_if(|o| o.as_ref().is_ok_and(|o| o.path <= e.path) || o.is_err())
        {
            let o = o?;
            if o.path == e.path {
                same_path = Some(o);
            }
        }
        let is_file = e.kind == labrun_evidence::EntryKind::File;
        if is_file && same_path.is_some_and(|o| o.sha256 != e.sha256) {
            changed.push(e.path);
        }
    }
    Ok(changed)
}
