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
            HistorySource::Trees { trees, .. } => Ok(Series::Trees {
                root: root.to_path_buf(),
                trees: trees
                    .iter()
                    .enumerate()
                    .map(|(i, t)| crate::run::runner::real_tree::series_tree(t, root, i + 1))
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
    pub fn check_moved(&self, k: u32, found: &labrun_evidence::Manifest) -> Result<(), String> {
        let Series::Trees { root, .. } = self else {
            return Ok(());
        };
        let expected = labrun_dataset::read_manifest(&manifest_of(root, k as usize))
            .map_err(|e| e.to_string())?;
        let outcome = labrun_dataset::compare(&expected, found);
        if outcome.passed {
            return Ok(());
        }
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
    let read = |k: u32| {
        labrun_dataset::read_manifest(&manifest_of(root, k as usize)).map_err(|e| e.to_string())
    };
    let now = read(k)?;
    let before = if k > 1 {
        read(k - 1)?
    } else {
        labrun_evidence::Manifest::default()
    };
    let old: std::collections::HashMap<&str, &str> = before
        .entries
        .iter()
        .map(|e| (e.path.as_str(), e.sha256.as_str()))
        .collect();
    let small_files = now
        .entries
        .iter()
        .filter(|e| e.kind == labrun_evidence::EntryKind::File)
        .filter(|e| old.get(e.path.as_str()).is_some_and(|sha| *sha != e.sha256))
        .map(|e| e.path.clone())
        .collect();
    Ok(labrun_dataset::ChangePlan {
        small_files,
        regions: Vec::new(),
    })
}
