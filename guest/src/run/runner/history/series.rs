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
        }
    }

    /// Commit `k` (1-based): its id, or the synthetic history's label.
    pub fn commit(&self, k: u32) -> String {
        match self {
            Series::Generated { .. } => history::label(k),
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
