//! What a tracker has on record, kept in `track.json` in its folder and
//! written whole after every tracked commit and every step resolved (to a
//! temporary file, then renamed over the old one), so Ctrl-C, a reboot or a
//! crash loses at most the commit under way, and the next run continues.
//! The same file is the track's result for anyone to read: each commit with
//! its subject, date, ratio and interval against the anchor, the steps
//! flagged and the commit each bisection named.

use crate::bisect::search::Outcome;
use anyhow::{Context as _, bail};
use labrun_report::compare::FigureDef as _;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const STATE_FILE: &str = "track.json";
const STATE_VERSION: u32 = 1;

/// What a track measures: a later run continues only the same question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// The lab's series tool whose branch is tracked.
    pub tool: String,
    /// The branch followed.
    pub branch: String,
    /// The commit every point is paired with (the lab's anchor), full id.
    pub anchor: String,
    /// The timed phase judged (`backup_full`).
    pub phase: String,
    /// The figure judged (`wall_time`).
    pub figure: labrun_report::compare::Figure,
    /// The difference that counts, as a fraction.
    pub margin: f64,
}

/// One tracked commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Point {
    pub commit: String,
    /// First-parent commits after the anchor, when it was tracked.
    pub position: usize,
    /// Author date (`2025-03-14`) and subject, or why git could not tell.
    pub date: String,
    pub subject: String,
    /// Its figure against the anchor's: ratio, interval, run folder.
    pub outcome: Outcome,
    /// The run's address in the results store, once imported.
    pub stored: Option<String>,
}

/// A step flagged between two adjacent tracked points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// The earlier point (or the anchor) and the later, slower one.
    pub from: String,
    pub to: String,
    /// First-parent commits from `from` to `to`.
    pub commits: usize,
    /// The bisection's folder, when the step was bisected.
    pub bisection: Option<String>,
    pub found: Found,
}

/// What is known of the commit that made a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Found {
    /// The commit that made it: the later point itself when the two are
    /// neighbours, else the one the bisection named.
    Commit {
        commit: String,
        date: String,
        subject: String,
    },
    /// The bisection stopped without one; its conclusion says why.
    Unresolved { conclusion: String },
    /// Not bisected yet (the next run does it).
    Pending,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    pub version: u32,
    pub question: Question,
    /// In the order they were tracked.
    pub points: Vec<Point>,
    pub steps: Vec<Step>,
}

impl State {
    pub fn new(question: Question) -> State {
        State {
            version: STATE_VERSION,
            question,
            points: Vec::new(),
            steps: Vec::new(),
        }
    }

    /// The state in `folder`, continued when it asks the same question,
    /// else a new one. A state of another question is refused: its points
    /// are somebody's evidence.
    pub fn open(folder: &Path, question: Question) -> anyhow::Result<State> {
        let path = folder.join(STATE_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(State::new(question));
            }
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let state: State = serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not a track labrun can read; move it away to start the track again",
                path.display()
            )
        })?;
        if state.version != STATE_VERSION {
            bail!(
                "{} was written by another labrun (state version {}); move it away to start the track again",
                path.display(),
                state.version
            );
        }
        if state.question != question {
            let q = &state.question;
            bail!(
                "{} tracks another question ({} {} of `{}` on {} against {}, margin {:.0}%); \
                 give another --results folder, or move it away to start again",
                path.display(),
                q.phase,
                q.figure.title(),
                q.tool,
                q.branch,
                crate::bisect::short(&q.anchor),
                q.margin * 100.0
            );
        }
        Ok(state)
    }

    /// Written whole to a temporary file, then renamed over the old one: a
    /// crash leaves the old state or the new, never half of one.
    pub fn save(&self, folder: &Path) -> anyhow::Result<PathBuf> {
        std::fs::create_dir_all(folder)
            .with_context(|| format!("cannot create {}", folder.display()))?;
        let path = folder.join(STATE_FILE);
        let tmp = folder.join(format!(".{STATE_FILE}.tmp"));
        let json = serde_json::to_vec_pretty(self).context("cannot encode the track")?;
        std::fs::write(&tmp, json).with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, &path)
            .with_context(|| format!("cannot replace {}", path.display()))?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bisect::search::Measured;
    use labrun_report::compare::Figure;

    fn question(margin: f64) -> Question {
        Question {
            tool: "toy".into(),
            branch: "main".into(),
            anchor: "a".repeat(40),
            phase: "backup_full".into(),
            figure: Figure::WallTime,
            margin,
        }
    }

    #[test]
    fn a_saved_track_is_continued() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = State::new(question(0.05));
        state.points.push(Point {
            commit: "b".repeat(40),
            position: 1,
            date: "2025-03-14".into(),
            subject: "restore: one pack at a time".into(),
            outcome: Outcome::Bad(Measured {
                ratio: 1.5,
                interval: Some([1.4, 1.6]),
                pairs: 3,
                run: "runs/r".into(),
            }),
            stored: None,
        });
        state.save(dir.path()).unwrap();
        let again = State::open(dir.path(), question(0.05)).unwrap();
        assert_eq!(again, state);
        assert!(!dir.path().join(".track.json.tmp").exists());
    }

    #[test]
    fn another_question_is_refused_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        State::new(question(0.05)).save(dir.path()).unwrap();
        let err = State::open(dir.path(), question(0.10)).unwrap_err();
        assert!(err.to_string().contains("tracks another question"), "{err}");
    }

    #[test]
    fn a_file_cut_short_is_refused_with_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(STATE_FILE), "{\"version\": 1, \"quest").unwrap();
        let err = State::open(dir.path(), question(0.05)).unwrap_err();
        assert!(err.to_string().contains("move it away"), "{err}");
    }
}
