//! `labrun track`: a tool's branch followed commit by commit. Each new
//! first-parent commit the cadence picks ([`select`]) is measured against
//! the lab's anchor by the same probe `bisect` uses (a paired run of the two
//! builds), its run imported into the results store, and kept on record
//! ([`state`]) so it is never run again. Two adjacent points that differ
//! beyond the margin ([`steps`]) and lie more than one commit apart are
//! bisected by `bisect`'s own engine ([`Bisector`]), and the commit it names
//! is recorded. One tracker at a time per folder ([`lock`]).
//!
//! The loop here is apart from how a commit is measured (a
//! [`crate::bisect::Prober`]), bisected ([`Bisector`]) and imported (a
//! closure), and from how progress is shown (the [`Event`]s a caller
//! consumes), so it is tested with tables.

pub mod lock;
pub mod markdown;
pub mod select;
pub mod state;
pub mod steps;

use crate::bisect::Prober;
use crate::bisect::search::Outcome;
use select::Cadence;
use state::{Found, Point, State, Step};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// `track.md`, beside `track.json`.
pub const REPORT_FILE: &str = "track.md";

/// Finds the commit that made a step between two tracked commits.
pub trait Bisector {
    /// The bisection's folder and what it found between `from` (like the
    /// anchor) and `to` (slower). An `Err` stops the track (Ctrl-C, the
    /// machine is gone), keeping what is on record; the next run continues
    /// the bisection from its own state.
    async fn bisect(&mut self, from: &str, to: &str) -> anyhow::Result<(PathBuf, Found)>;
}

/// What the source repository says of a commit: its date and subject.
pub type Describe<'a> = &'a dyn Fn(&str) -> (String, String);

/// Imports a run folder into the results store: its address, or why not.
pub type Import<'a> = &'a mut dyn FnMut(&Path) -> Result<String, String>;

/// What the tracker tells whoever shows it.
#[derive(Debug)]
pub enum Event<'a> {
    /// Commits on record from earlier runs, and how many are new now.
    Planned { on_record: usize, to_run: usize },
    /// A commit's run starts: the `n`th of `of` this time.
    Tracking {
        n: usize,
        of: usize,
        commit: &'a str,
    },
    Tracked {
        commit: &'a str,
        outcome: &'a Outcome,
    },
    /// A run could not be imported: it stays in its folder.
    NotImported { run: &'a str, why: &'a str },
    /// A step flagged this time.
    Flagged { step: &'a Step },
    /// A step's commit found (named, or the bisection's conclusion).
    Resolved { step: &'a Step },
}

/// What one run of the tracker did.
#[derive(Debug, Default, PartialEq)]
pub struct Done {
    /// Commits measured this time.
    pub tracked: usize,
    /// Steps flagged for the first time.
    pub new_steps: usize,
}

/// Tracks `line` (the anchor first, the branch's tip last): the commits the
/// cadence picks that are not on record, then the steps among all points.
/// The state (and `track.md`) is written after each commit and each step.
#[allow(clippy::too_many_arguments)]
pub async fn run(
    state: &mut State,
    folder: &Path,
    line: &[String],
    cadence: Cadence,
    prober: &mut impl Prober,
    bisector: &mut impl Bisector,
    describe: Describe<'_>,
    import: Import<'_>,
    show: &mut dyn FnMut(Event),
) -> anyhow::Result<Done> {
    let mut done = Done::default();
    retry_imports(state, folder, import, show)?;
    let tracked: BTreeSet<String> = state.points.iter().map(|p| p.commit.clone()).collect();
    let todo = select::to_run(line, &tracked, cadence);
    show(Event::Planned {
        on_record: state.points.len(),
        to_run: todo.len(),
    });
    let anchor = state.question.anchor.clone();
    for (n, &index) in todo.iter().enumerate() {
        let commit = &line[index];
        show(Event::Tracking {
            n: n + 1,
            of: todo.len(),
            commit,
        });
        let ask = crate::bisect::Ask {
            margin: state.question.margin,
            bad_end: false,
        };
        let outcome = prober.probe(&anchor, commit, ask).await?;
        show(Event::Tracked {
            commit,
            outcome: &outcome,
        });
        let (date, subject) = describe(commit);
        let stored = stored(&outcome, import, show);
        state.points.push(Point {
            commit: commit.clone(),
            position: index,
            date,
            subject,
            outcome,
            stored,
        });
        persist(state, folder)?;
        done.tracked += 1;
    }
    let flagged = flagged(state, line);
    let known: BTreeSet<(String, String)> = state
        .steps
        .iter()
        .map(|s| (s.from.clone(), s.to.clone()))
        .collect();
    let mut steps = Vec::new();
    for f in flagged {
        let (from, to) = (&line[f.from], &line[f.to]);
        let step = match state.steps.iter().find(|s| &s.from == from && &s.to == to) {
            Some(s) => s.clone(),
            None => {
                let (date, subject) = describe(to);
                Step {
                    from: from.clone(),
                    to: to.clone(),
                    commits: f.to - f.from,
                    bisection: None,
                    found: if f.needs_bisect() {
                        Found::Pending
                    } else {
                        Found::Commit {
                            commit: to.clone(),
                            date,
                            subject,
                        }
                    },
                }
            }
        };
        if !known.contains(&(from.clone(), to.clone())) {
            done.new_steps += 1;
            show(Event::Flagged { step: &step });
        }
        steps.push(step);
    }
    // A step found earlier that is no longer one (points tracked since lie
    // inside it, and a finer step among them is flagged) keeps its record:
    // its bisection is evidence.
    let still: BTreeSet<(String, String)> = steps
        .iter()
        .map(|s| (s.from.clone(), s.to.clone()))
        .collect();
    steps.extend(
        state
            .steps
            .iter()
            .filter(|s| !still.contains(&(s.from.clone(), s.to.clone())))
            .filter(|s| s.found != Found::Pending)
            .cloned(),
    );
    state.steps = steps;
    persist(state, folder)?;
    for i in 0..state.steps.len() {
        if state.steps[i].found != Found::Pending {
            continue;
        }
        let (from, to) = (state.steps[i].from.clone(), state.steps[i].to.clone());
        let (bisection, found) = bisector.bisect(&from, &to).await?;
        state.steps[i].bisection = Some(bisection.display().to_string());
        state.steps[i].found = found;
        persist(state, folder)?;
        show(Event::Resolved {
            step: &state.steps[i],
        });
    }
    Ok(done)
}

/// The steps among the points that lie on `line` (a point a force-push
/// took off the branch is kept on record, but has no neighbours).
fn flagged(state: &State, line: &[String]) -> Vec<steps::Flagged> {
    let mut points: Vec<steps::Point> = state
        .points
        .iter()
        .filter_map(|p| {
            line.iter()
                .position(|c| c == &p.commit)
                .map(|index| steps::Point {
                    index,
                    outcome: &p.outcome,
                })
        })
        .collect();
    points.sort_by_key(|p| p.index);
    steps::flagged(&points, state.question.margin)
}

/// Points whose run could not be imported earlier (the store was locked,
/// full, or not there): tried again.
fn retry_imports(
    state: &mut State,
    folder: &Path,
    import: Import<'_>,
    show: &mut dyn FnMut(Event),
) -> anyhow::Result<()> {
    let mut changed = false;
    for point in state.points.iter_mut().filter(|p| p.stored.is_none()) {
        point.stored = stored(&point.outcome, import, show);
        changed |= point.stored.is_some();
    }
    if changed {
        persist(state, folder)?;
    }
    Ok(())
}

/// The run's address in the store, or None (said why) when it has no run
/// or could not be imported.
fn stored(outcome: &Outcome, import: Import<'_>, show: &mut dyn FnMut(Event)) -> Option<String> {
    let run = &outcome.measured()?.run;
    match import(Path::new(run)) {
        Ok(address) => Some(address),
        Err(why) => {
            show(Event::NotImported { run, why: &why });
            None
        }
    }
}

/// `track.json` (atomically), then `track.md` from it.
fn persist(state: &State, folder: &Path) -> anyhow::Result<()> {
    use anyhow::Context as _;
    state.save(folder)?;
    let path = folder.join(REPORT_FILE);
    std::fs::write(&path, markdown::page(state))
        .with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bisect::search::Measured;
    use labrun_report::compare::Figure;

    /// Commits from `slow_from` on measure 2x the anchor.
    struct Table {
        line: Vec<String>,
        slow_from: usize,
        calls: Vec<String>,
        stop_after: Option<usize>,
    }

    impl Prober for Table {
        async fn probe(
            &mut self,
            good: &str,
            commit: &str,
            _ask: crate::bisect::Ask,
        ) -> anyhow::Result<Outcome> {
            assert_eq!(good, self.line[0], "every point is paired with the anchor");
            if self.stop_after == Some(self.calls.len()) {
                anyhow::bail!("interrupted");
            }
            self.calls.push(commit.to_string());
            let i = self.line.iter().position(|c| c == commit).unwrap();
            let m = |ratio: f64| Measured {
                ratio,
                interval: Some([ratio * 0.95, ratio * 1.04]),
                pairs: 3,
                run: format!("runs/r{i}"),
            };
            Ok(if i >= self.slow_from {
                Outcome::Bad(m(2.0))
            } else {
                Outcome::Good(m(1.0))
            })
        }
    }

    /// Names the planted commit, as `bisect` would.
    struct Named {
        answer: String,
        asked: Vec<(String, String)>,
    }

    impl Bisector for Named {
        async fn bisect(&mut self, from: &str, to: &str) -> anyhow::Result<(PathBuf, Found)> {
            self.asked.push((from.into(), to.into()));
            Ok((
                PathBuf::from("bisect-x"),
                Found::Commit {
                    commit: self.answer.clone(),
                    date: "2025-03-14".into(),
                    subject: "slower".into(),
                },
            ))
        }
    }

    fn question(line: &[String]) -> state::Question {
        state::Question {
            tool: "toy".into(),
            branch: "main".into(),
            anchor: line[0].clone(),
            phase: "backup_full".into(),
            figure: Figure::WallTime,
            margin: 0.05,
        }
    }

    fn line(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("{i:040x}")).collect()
    }

    async fn track(
        state: &mut State,
        folder: &Path,
        line: &[String],
        cadence: Cadence,
        table: &mut Table,
        named: &mut Named,
        imported: &mut Vec<PathBuf>,
    ) -> anyhow::Result<Done> {
        let describe = |c: &str| ("2025-03-14".to_string(), format!("commit {}", &c[36..]));
        let mut import = |run: &Path| {
            imported.push(run.to_path_buf());
            Ok(format!("sha256:{}", run.display()))
        };
        run(
            state,
            folder,
            line,
            cadence,
            table,
            named,
            &describe,
            &mut import,
            &mut |_| {},
        )
        .await
    }

    #[tokio::test]
    async fn every_third_commit_flags_the_step_bisects_it_and_a_rerun_does_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let line = line(8);
        let mut table = Table {
            line: line.clone(),
            slow_from: 4,
            calls: vec![],
            stop_after: None,
        };
        let mut named = Named {
            answer: line[4].clone(),
            asked: vec![],
        };
        let mut imported = vec![];
        let mut state = State::new(question(&line));
        let done = track(
            &mut state,
            dir.path(),
            &line,
            Cadence::Every(3),
            &mut table,
            &mut named,
            &mut imported,
        )
        .await
        .unwrap();
        assert_eq!(
            done,
            Done {
                tracked: 3,
                new_steps: 1
            }
        );
        assert_eq!(table.calls, [line[3].as_str(), &line[6], &line[7]]);
        assert_eq!(named.asked, [(line[3].clone(), line[6].clone())]);
        assert_eq!(imported.len(), 3);
        assert!(state.points.iter().all(|p| p.stored.is_some()));
        assert!(
            matches!(&state.steps[0].found, Found::Commit { commit, .. } if *commit == line[4])
        );
        let md = std::fs::read_to_string(dir.path().join(REPORT_FILE)).unwrap();
        assert!(md.contains(&line[4]), "{md}");

        // Again, from the file: nothing measured, imported or bisected twice.
        let mut again = State::open(dir.path(), question(&line)).unwrap();
        let done = track(
            &mut again,
            dir.path(),
            &line,
            Cadence::Every(3),
            &mut table,
            &mut named,
            &mut imported,
        )
        .await
        .unwrap();
        assert_eq!(done, Done::default());
        assert_eq!(table.calls.len(), 3);
        assert_eq!(named.asked.len(), 1);
        assert_eq!(imported.len(), 3);
        assert_eq!(again, state);

        // Every commit now: the step between neighbours is named without a
        // bisection, and the earlier bisection's finding is kept.
        let done = track(
            &mut again,
            dir.path(),
            &line,
            Cadence::Every(1),
            &mut table,
            &mut named,
            &mut imported,
        )
        .await
        .unwrap();
        assert_eq!(
            done,
            Done {
                tracked: 4,
                new_steps: 1
            }
        );
        assert_eq!(named.asked.len(), 1);
        let found: Vec<_> = again.steps.iter().map(|s| (&s.from, &s.to)).collect();
        assert_eq!(found, [(&line[3], &line[4]), (&line[3], &line[6])]);
    }

    #[tokio::test]
    async fn an_interrupted_track_continues_and_neighbours_need_no_bisection() {
        let dir = tempfile::tempdir().unwrap();
        let line = line(6);
        let mut table = Table {
            line: line.clone(),
            slow_from: 3,
            calls: vec![],
            stop_after: Some(2),
        };
        let mut named = Named {
            answer: String::new(),
            asked: vec![],
        };
        let mut imported = vec![];
        let mut state = State::new(question(&line));
        let err = track(
            &mut state,
            dir.path(),
            &line,
            Cadence::Every(1),
            &mut table,
            &mut named,
            &mut imported,
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("interrupted"));
        let mut again = State::open(dir.path(), question(&line)).unwrap();
        assert_eq!(again.points.len(), 2, "kept after each commit");
        table.stop_after = None;
        let done = track(
            &mut again,
            dir.path(),
            &line,
            Cadence::Every(1),
            &mut table,
            &mut named,
            &mut imported,
        )
        .await
        .unwrap();
        assert_eq!(
            done,
            Done {
                tracked: 3,
                new_steps: 1
            }
        );
        // No commit measured twice.
        assert_eq!(table.calls, line[1..].to_vec());
        assert!(named.asked.is_empty(), "the step is one commit long");
        assert!(
            matches!(&again.steps[0].found, Found::Commit { commit, .. } if *commit == line[3])
        );
    }

    #[tokio::test]
    async fn a_run_the_store_refused_is_imported_by_the_next_track() {
        let dir = tempfile::tempdir().unwrap();
        let line = line(3);
        let mut table = Table {
            line: line.clone(),
            slow_from: 9,
            calls: vec![],
            stop_after: None,
        };
        let mut named = Named {
            answer: String::new(),
            asked: vec![],
        };
        let mut state = State::new(question(&line));
        let describe = |_: &str| (String::new(), String::new());
        let mut refuse = |_: &Path| Err("the store is full".to_string());
        let mut said = Vec::new();
        run(
            &mut state,
            dir.path(),
            &line,
            Cadence::Tip,
            &mut table,
            &mut named,
            &describe,
            &mut refuse,
            &mut |e| said.push(format!("{e:?}")),
        )
        .await
        .unwrap();
        assert_eq!(state.points[0].stored, None);
        assert!(
            said.iter().any(|s| s.contains("the store is full")),
            "{said:?}"
        );
        let mut imported = vec![];
        let done = track(
            &mut state,
            dir.path(),
            &line,
            Cadence::Tip,
            &mut table,
            &mut named,
            &mut imported,
        )
        .await
        .unwrap();
        assert_eq!(done.tracked, 0);
        assert_eq!(imported, [PathBuf::from("runs/r2")]);
        assert!(state.points[0].stored.is_some());
    }
}
