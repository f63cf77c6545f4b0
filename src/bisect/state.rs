//! What a bisection has measured, kept in `bisect.json` in its folder after
//! every probe, so that Ctrl-C, a lost connection or a crash loses at most
//! the probe under way, and the same command run again continues.

use super::search::Outcome;
use anyhow::{Context as _, bail};
use labrun_report::compare::FigureDef as _;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const STATE_FILE: &str = "bisect.json";
const STATE_VERSION: u32 = 1;

/// The question a bisection answers: a rerun continues only the same one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// The tool of the lab whose source is bisected.
    pub tool: String,
    /// The timed phase judged (`restore`).
    pub phase: String,
    /// The figure judged (`wall_time`).
    pub figure: labrun_report::compare::Figure,
    /// The difference that counts, as a fraction.
    pub margin: f64,
    /// The commits, good first and bad last, full ids.
    pub commits: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    pub version: u32,
    pub question: Question,
    /// By commit index: what its probe found.
    pub outcomes: Vec<Option<Outcome>>,
}

impl State {
    pub fn new(question: Question) -> State {
        let n = question.commits.len();
        State {
            version: STATE_VERSION,
            question,
            outcomes: vec![None; n],
        }
    }

    /// The state in `folder`, continued when it asks the same question,
    /// else a new one. A state of another question is refused: its probes
    /// are somebody's evidence.
    pub fn open(folder: &Path, question: Question) -> anyhow::Result<(State, bool)> {
        let path = folder.join(STATE_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok((State::new(question), false));
            }
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let state: State = serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not a bisection labrun can read; move it away to start again",
                path.display()
            )
        })?;
        if state.version != STATE_VERSION {
            bail!(
                "{} was written by another labrun (state version {}); move it away to start again",
                path.display(),
                state.version
            );
        }
        if state.question != question || state.outcomes.len() != question.commits.len() {
            bail!(
                "{} holds a bisection of another question ({} {} of `{}`, margin {:.0}%, {} commits); \
                 give another --results folder, or move it away to start again",
                path.display(),
                state.question.phase,
                state.question.figure.title(),
                state.question.tool,
                state.question.margin * 100.0,
                state.question.commits.len()
            );
        }
        Ok((state, true))
    }

    /// Written whole to a temporary file, then renamed over the old one: a
    /// crash leaves the old state or the new, never half of one.
    pub fn save(&self, folder: &Path) -> anyhow::Result<PathBuf> {
        std::fs::create_dir_all(folder)
            .with_context(|| format!("cannot create {}", folder.display()))?;
        let path = folder.join(STATE_FILE);
        let tmp = folder.join(format!(".{STATE_FILE}.tmp"));
        let json = serde_json::to_vec_pretty(self).context("cannot encode the bisection")?;
        std::fs::write(&tmp, json).with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, &path)
            .with_context(|| format!("cannot replace {}", path.display()))?;
        Ok(path)
    }

    /// Probes on record.
    pub fn probes(&self) -> usize {
        self.outcomes.iter().filter(|o| o.is_some()).count()
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
            phase: "backup_full".into(),
            figure: Figure::WallTime,
            margin,
            commits: vec!["a".into(), "b".into(), "c".into()],
        }
    }

    #[test]
    fn a_saved_state_is_continued() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = State::new(question(0.05));
        state.outcomes[2] = Some(Outcome::Bad(Measured {
            ratio: 1.5,
            interval: Some([1.4, 1.6]),
            pairs: 3,
            run: "results/r".into(),
        }));
        state.save(dir.path()).unwrap();
        let (again, continued) = State::open(dir.path(), question(0.05)).unwrap();
        assert!(continued);
        assert_eq!(again, state);
        assert_eq!(again.probes(), 1);
    }

    #[test]
    fn another_question_is_refused_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        State::new(question(0.05)).save(dir.path()).unwrap();
        let err = State::open(dir.path(), question(0.10)).unwrap_err();
        assert!(err.to_string().contains("another question"), "{err}");
    }

    #[test]
    fn no_state_starts_fresh() {
        let dir = tempfile::tempdir().unwrap();
        let (state, continued) = State::open(dir.path(), question(0.05)).unwrap();
        assert!(!continued);
        assert_eq!(state.probes(), 0);
    }
}
