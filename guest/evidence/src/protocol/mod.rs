//! The protocol: the steps of one tool cycle, in order, as data. The
//! published cycle (SPEC 4) is [`published`]; a lab may write its own list
//! (`protocol:`), and the plan carries it to the agent, which runs the list
//! as written. Lab file and plan share these types.
//!
//! Written in a lab as a list whose items are either a bare word for the
//! agent's own work (`source`, `change`, `verify`) or a mapping that runs a
//! tool command:
//!
//! ```yaml
//! protocol:
//!   - source                                  # the pristine source tree
//!   - {run: init}
//!   - {run: backup, name: backup_full, makes: s1}
//!   - change                                  # the seeded 5% change
//!   - {run: backup, name: backup_incremental, makes: s2}
//!   - {run: restore, restores: s2, repo_size: false}
//!   - verify                                  # the restore against s2's tree
//!   - {run: check}                            # any command the tools define
//! ```
//!
//! A git-history lab's tree comes from its commits instead: `commit` moves
//! it to the next one, and `each_commit:` repeats its steps once per commit
//! of the series ([`history`] is SPEC 6's study written so).

mod check;
mod form;

pub use check::{StepAt, check};

use crate::step::Step;
use serde::{Deserialize, Serialize};

/// One step of a tool cycle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "form::StepForm", into = "form::StepForm")]
pub enum ProtocolStep {
    /// The tool cycle's pristine source tree (a copy of the generated one,
    /// or the previous tool cycle's reset). Recorded as `generate`.
    Source,
    /// The seeded 5% change of SPEC 3, in place. The k-th change of a
    /// protocol uses seed `change_seed + k - 1`: rounds of change and backup
    /// pile up snapshots that differ.
    Change { name: Step },
    /// The metadata-fidelity fixture (modes, mtimes, links, an empty
    /// directory, a sparse file, odd names, an xattr) written to a folder of
    /// its own, which is `{source}` for the steps after it: back it up,
    /// restore it, and the `verify` after that reports, kind by kind, what
    /// the tool kept.
    Fixture,
    /// The restore target hashed and compared with the tree of the snapshot
    /// the last restore restored.
    Verify { name: Step },
    /// A command of the tool.
    Run(RunStep),
    /// A git-history dataset's tree moved to the next commit of its series
    /// (the first into an empty tree), its manifest kept. Untimed; recorded
    /// as `generate` for the first commit and `change` for the next ones.
    Commit,
    /// Its steps once per commit of a git-history series, in order, from
    /// commit `from` to the last; `{k}` in a snapshot label stands for the
    /// commit's number, and each record carries its commit.
    EachCommit(EachCommit),
}

#[derive(Debug, Clone, PartialEq)]
pub struct EachCommit {
    /// The first commit (1-based) the steps run for.
    pub from: u32,
    pub steps: Vec<ProtocolStep>,
}

/// What `{k}` in a snapshot label is replaced with: the commit's number.
pub const COMMIT_NUMBER: &str = "{k}";

#[derive(Debug, Clone, PartialEq)]
pub struct RunStep {
    /// In records, logs and reports; the command's key unless named.
    pub name: Step,
    /// The key of the tool's command (`backup`, `check`, `stats`).
    pub command: String,
    /// The label of the snapshot this command makes of the source tree as it
    /// is now (`{snapshot}` is the label; the id comes from `snapshot_id`).
    pub makes: Option<String>,
    /// Restores this snapshot into `{target}` (emptied first); a `verify`
    /// after it compares what it restored with the snapshot's tree.
    pub restores: Option<String>,
    /// With `restores:`, the label of an earlier snapshot whose tree fills
    /// `{target}` first: the restore goes over older data, and its verify
    /// says whether the tool kept or removed the files only that tree had.
    pub over: Option<String>,
    /// Works on this snapshot otherwise (`forget`, `diff`): `{snapshot}` is
    /// its id.
    pub snapshot: Option<String>,
    /// Measured as a phase of the report (whole tree, timeline).
    pub timed: bool,
    /// Drop the page cache first (default: when timed).
    pub drop_cache: bool,
    /// Measure the repository after it.
    pub repo_size: bool,
    /// A tool without this command skips the step (e.g. `compact`).
    pub optional: bool,
    /// Kill the tool (SIGKILL to its whole tree) part-way: an interrupted
    /// backup. The step passes when it was killed, or when it finished
    /// first (the record says which).
    pub kill: Option<KillPoint>,
    /// Its failure is recorded but ends nothing: the cycle goes on, and the
    /// run is not failed by it (a check right after a kill may well fail:
    /// that is what it measures).
    pub may_fail: bool,
}

/// When a step is killed on purpose.
#[derive(Debug, Clone, PartialEq)]
pub enum KillPoint {
    /// This long after its start (`kill_after_secs: 120`).
    AfterSecs(f64),
    /// At this fraction of the wall time an earlier step of the same tool
    /// cycle took (`kill_after: {fraction: 0.5, of: backup_reference}`):
    /// the same point of the work on any machine and at any scale.
    FractionOf { fraction: f64, step: Step },
}

impl RunStep {
    /// A timed step running `command`, cache dropped first, repository
    /// measured after: the published cycle's kind of step.
    pub fn new(name: Step, command: &str) -> RunStep {
        RunStep {
            name,
            command: command.to_string(),
            makes: None,
            restores: None,
            over: None,
            snapshot: None,
            timed: true,
            drop_cache: true,
            repo_size: true,
            optional: false,
            kill: None,
            may_fail: false,
        }
    }

    /// This step for commit `k` of an `each_commit` block: `{k}` in its
    /// snapshot labels replaced by the number.
    pub fn at_commit(&self, k: u32) -> RunStep {
        let at = |label: &Option<String>| {
            label
                .as_ref()
                .map(|l| l.replace(COMMIT_NUMBER, &k.to_string()))
        };
        RunStep {
            makes: at(&self.makes),
            restores: at(&self.restores),
            over: at(&self.over),
            snapshot: at(&self.snapshot),
            ..self.clone()
        }
    }

    /// The snapshot label `{snapshot}` stands for, if any.
    pub fn snapshot_label(&self) -> Option<&str> {
        self.makes
            .as_deref()
            .or(self.restores.as_deref())
            .or(self.snapshot.as_deref())
    }
}

impl ProtocolStep {
    /// The name its records carry (a `commit` step's records say
    /// `generate` or `change`; a block has none of its own).
    pub fn name(&self) -> Step {
        match self {
            ProtocolStep::Source => Step::GENERATE,
            ProtocolStep::Change { name } => name.clone(),
            ProtocolStep::Fixture => Step::FIXTURE,
            ProtocolStep::Verify { name } => name.clone(),
            ProtocolStep::Run(r) => r.name.clone(),
            ProtocolStep::Commit => Step::named("commit"),
            ProtocolStep::EachCommit(_) => Step::named("each_commit"),
        }
    }

    pub fn timed(&self) -> bool {
        matches!(self, ProtocolStep::Run(r) if r.timed)
    }

    pub fn as_run(&self) -> Option<&RunStep> {
        match self {
            ProtocolStep::Run(r) => Some(r),
            _ => None,
        }
    }
}

/// Every step, a block's steps in its place (each once, however many
/// commits it runs for).
pub fn flat(steps: &[ProtocolStep]) -> impl Iterator<Item = &ProtocolStep> {
    steps.iter().flat_map(|s| match s {
        ProtocolStep::EachCommit(block) => block.steps.iter().collect::<Vec<_>>(),
        other => vec![other],
    })
}

/// The names of the steps of `steps` that are timed, in order: the phases a
/// report shows.
pub fn timed_steps(steps: &[ProtocolStep]) -> Vec<Step> {
    flat(steps)
        .filter(|s| s.timed())
        .map(|s| s.name())
        .collect()
}

/// The published cycle (SPEC 4): init, full backup, 5% change, incremental
/// backup, restore, verify; the four tool commands timed.
pub fn published() -> Vec<ProtocolStep> {
    let run = RunStep::new;
    vec![
        ProtocolStep::Source,
        ProtocolStep::Run(run(Step::INIT, "init")),
        ProtocolStep::Run(RunStep {
            makes: Some("s1".into()),
            ..run(Step::BACKUP_FULL, "backup")
        }),
        ProtocolStep::Change { name: Step::CHANGE },
        ProtocolStep::Run(RunStep {
            makes: Some("s2".into()),
            ..run(Step::BACKUP_INCREMENTAL, "backup")
        }),
        ProtocolStep::Run(RunStep {
            restores: Some("s2".into()),
            repo_size: false,
            ..run(Step::RESTORE, "restore")
        }),
        ProtocolStep::Verify { name: Step::VERIFY },
    ]
}

/// The git-history study (SPEC 6): `init`; the tree at each commit in turn,
/// each backed up (the first backup full, the next ones incremental); then
/// every snapshot restored into an emptied target and verified against its
/// commit.
pub fn history() -> Vec<ProtocolStep> {
    let run = RunStep::new;
    vec![
        ProtocolStep::Run(run(Step::INIT, "init")),
        ProtocolStep::Commit,
        ProtocolStep::Run(RunStep {
            makes: Some("s1".into()),
            ..run(Step::BACKUP_FULL, "backup")
        }),
        ProtocolStep::EachCommit(EachCommit {
            from: 2,
            steps: vec![
                ProtocolStep::Commit,
                ProtocolStep::Run(RunStep {
                    makes: Some(format!("s{COMMIT_NUMBER}")),
                    ..run(Step::BACKUP_INCREMENTAL, "backup")
                }),
            ],
        }),
        ProtocolStep::EachCommit(EachCommit {
            from: 1,
            steps: vec![
                ProtocolStep::Run(RunStep {
                    restores: Some(format!("s{COMMIT_NUMBER}")),
                    repo_size: false,
                    ..run(Step::RESTORE, "restore")
                }),
                ProtocolStep::Verify { name: Step::VERIFY },
            ],
        }),
    ]
}

/// The default protocol of a dataset: the published cycle, or the
/// git-history study.
pub fn default_for(history: bool) -> Vec<ProtocolStep> {
    if history {
        self::history()
    } else {
        published()
    }
}

#[cfg(test)]
mod tests;
