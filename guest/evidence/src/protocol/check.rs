//! The rule a protocol keeps that no single step shows: the order of the
//! agent's steps, snapshot labels, names, the commits of a git history, and
//! commands the tools lack. The one rule for the lab check and the agent's
//! plan check.

use super::{COMMIT_NUMBER, EachCommit, ProtocolStep, RunStep};
use crate::step::Step;
use std::collections::BTreeSet;

/// Where a step is: its index in the protocol and, inside an `each_commit:`
/// block, its index there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepAt {
    pub index: usize,
    pub inner: Option<usize>,
}

impl std::fmt::Display for StepAt {
    /// As the lab writes it: `protocol[3]`, `protocol[3].each_commit[1]`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "protocol[{}]", self.index)?;
        match self.inner {
            Some(j) => write!(f, ".each_commit[{j}]"),
            None => Ok(()),
        }
    }
}

/// Every problem of `steps`, each with its step. `tools`: each tool's name
/// and commands; `history`: the dataset is a git history (its tree comes
/// from `commit` steps, not `source`).
pub fn check<'a>(
    steps: &[ProtocolStep],
    tools: impl IntoIterator<Item = (&'a str, &'a crate::ToolCommands)>,
    history: bool,
) -> Vec<(StepAt, String)> {
    let mut walk = Walk {
        tools: tools.into_iter().collect(),
        history,
        out: Vec::new(),
        names: BTreeSet::new(),
        runs: BTreeSet::new(),
        made: Vec::new(),
        restored: false,
        missing: BTreeSet::new(),
        tree: Tree::Empty,
    };
    let top = |index| StepAt { index, inner: None };
    if !history && steps.first() != Some(&ProtocolStep::Source) {
        walk.problem(
            top(0),
            "a protocol starts with `source` (the tool cycle's pristine source tree)",
        );
    }
    for (i, step) in steps.iter().enumerate() {
        match step {
            ProtocolStep::EachCommit(block) => walk.block(i, block),
            _ => walk.step(top(i), step, None),
        }
    }
    walk.out
}

/// A snapshot label a step makes: one, or one per commit of a block.
enum Made {
    One(String),
    PerCommit { label: String, from: u32 },
}

impl Made {
    /// Whether it names `label` (a label without `{k}`).
    fn names(&self, label: &str) -> bool {
        match self {
            Made::One(l) => l == label,
            Made::PerCommit { label: t, from } => commit_of(t, label).is_some_and(|k| k >= *from),
        }
    }
}

/// `k` when `label` is `template` with `{k}` replaced by it.
fn commit_of(template: &str, label: &str) -> Option<u32> {
    let (before, after) = template.split_once(COMMIT_NUMBER)?;
    let middle = label.strip_prefix(before)?.strip_suffix(after)?;
    middle
        .parse()
        .ok()
        .filter(|_| middle.bytes().all(|b| b.is_ascii_digit()))
}

/// A snapshot label (`makes:`, `restores:`, `snapshot:`) becomes `{snapshot}`
/// in a tool's argv, a shell command's text and a file name: it follows the
/// step names' rule (a-z, 0-9, `_`, starting with a letter, up to 40), with
/// `{k}` for a commit's number at most once.
pub fn check_label(label: &str) -> Result<(), String> {
    if Step::is_plain_word(&label.replacen(COMMIT_NUMBER, "1", 1)) {
        Ok(())
    } else {
        Err(format!(
            "snapshot label {label:?}: use 1-40 of a-z, 0-9 and _, starting with a letter, and {COMMIT_NUMBER} for a commit's number (e.g. s1, s{COMMIT_NUMBER}): it reaches commands and file names as {{snapshot}}"
        ))
    }
}

/// Where a git history's tree is, step by step.
#[derive(Clone, Copy)]
enum Tree {
    /// No commit yet.
    Empty,
    /// At this commit.
    At(u32),
    /// A block moved it through the series to the last commit.
    AtLast,
}

struct Walk<'a> {
    tools: Vec<(&'a str, &'a crate::ToolCommands)>,
    history: bool,
    out: Vec<(StepAt, String)>,
    names: BTreeSet<Step>,
    /// Tool steps so far (a kill point may name one).
    runs: BTreeSet<Step>,
    made: Vec<Made>,
    restored: bool,
    // A missing command is said once per tool, at the first step running it.
    missing: BTreeSet<(&'a str, String)>,
    tree: Tree,
}

impl<'a> Walk<'a> {
    fn problem(&mut self, at: StepAt, message: impl Into<String>) {
        self.out.push((at, message.into()));
    }

    fn block(&mut self, index: usize, block: &EachCommit) {
        let at = |inner| StepAt {
            index,
            inner: Some(inner),
        };
        if !self.history {
            self.problem(
                at(0).outer(),
                "`each_commit:` repeats steps for each commit of a git-history dataset: this lab's dataset is synthetic",
            );
            return;
        }
        if let Some(j) = block.steps.iter().position(|s| *s == ProtocolStep::Commit) {
            if j != 0 {
                self.problem(
                    at(j),
                    "in a block, `commit` comes first: the steps after it work on that commit's tree",
                );
            }
            let expected = match self.tree {
                Tree::Empty => Some(1),
                Tree::At(n) => Some(n + 1),
                Tree::AtLast => None,
            };
            match expected {
                Some(n) if n == block.from => {}
                Some(n) => self.problem(
                    at(0).outer(),
                    format!("the block moves the tree from commit {} on, but the one after the steps before it is commit {n}: write `from: {n}`", block.from),
                ),
                None => self.problem(
                    at(0).outer(),
                    "an earlier block moved the tree through the whole series: no commit is left to move to",
                ),
            }
        }
        self.restored = false;
        let mut commits = 0;
        for (j, step) in block.steps.iter().enumerate() {
            match step {
                ProtocolStep::EachCommit(_) => {
                    self.problem(at(j), "`each_commit:` blocks do not nest")
                }
                ProtocolStep::Commit => {
                    commits += 1;
                    if commits > 1 {
                        self.problem(
                            at(j),
                            "a block moves the tree once per commit: one `commit` step in it",
                        );
                    }
                    self.tree = Tree::AtLast;
                }
                _ => self.step(at(j), step, Some(block.from)),
            }
        }
    }

    /// One step; `block`: the `from` of the block it is in.
    fn step(&mut self, at: StepAt, step: &ProtocolStep, block: Option<u32>) {
        let name = step.name();
        let named = !matches!(step, ProtocolStep::Commit | ProtocolStep::EachCommit(_));
        if named && !self.names.insert(name.clone()) {
            self.problem(at, format!(
                "two steps are called {name}: give one a `name:` (records and reports tell steps apart by name)"
            ));
        }
        match step {
            ProtocolStep::Source if self.history => self.synthetic_only(at, "source"),
            ProtocolStep::Change { .. } if self.history => self.synthetic_only(at, "change"),
            ProtocolStep::Fixture if self.history => self.synthetic_only(at, "fixture"),
            ProtocolStep::Source if at.index > 0 => self.problem(at, "`source` comes once, first"),
            ProtocolStep::Source | ProtocolStep::Fixture | ProtocolStep::Change { .. } => {}
            ProtocolStep::Commit | ProtocolStep::EachCommit(_) if !self.history => self.problem(
                at,
                "`commit` moves a git-history dataset's tree: this lab's dataset is synthetic",
            ),
            ProtocolStep::Commit => {
                self.tree = match self.tree {
                    Tree::Empty => Tree::At(1),
                    Tree::At(n) => Tree::At(n + 1),
                    Tree::AtLast => {
                        self.problem(at, "an earlier block moved the tree through the whole series: no commit is left to move to");
                        Tree::AtLast
                    }
                }
            }
            ProtocolStep::EachCommit(_) => {}
            ProtocolStep::Verify { .. } => {
                if !std::mem::take(&mut self.restored) {
                    self.problem(at, "`verify` checks what a restore put in {target}: it follows a step with `restores:`");
                }
            }
            ProtocolStep::Run(r) => self.run(at, r, block),
        }
    }

    fn synthetic_only(&mut self, at: StepAt, word: &str) {
        self.problem(at, format!(
            "`{word}` works on the synthetic dataset: a git-history lab's tree comes from its commits (`commit`, `each_commit:`)"
        ));
    }

    fn run(&mut self, at: StepAt, r: &RunStep, block: Option<u32>) {
        if [Step::GENERATE, Step::CHANGE, Step::FIXTURE].contains(&r.name) {
            self.problem(
                at,
                format!(
                    "{} is the name of an agent step: name this one otherwise",
                    r.name
                ),
            );
        }
        if let Some(super::KillPoint::FractionOf { step, .. }) = &r.kill
            && !self.runs.contains(step)
        {
            self.problem(at, format!(
                "is killed at a fraction of {step}'s time, but no tool step called {step} runs before it"
            ));
        }
        self.runs.insert(r.name.clone());
        for label in [&r.makes, &r.restores, &r.over, &r.snapshot]
            .into_iter()
            .flatten()
        {
            if let Err(why) = check_label(label) {
                self.problem(at, why);
            }
        }
        let per_commit = |l: &str| l.contains(COMMIT_NUMBER);
        if let Some(label) = r.makes.as_deref() {
            if self.history && matches!(self.tree, Tree::Empty) {
                self.problem(at, "backs up before any `commit`: the tree is still empty");
            }
            match block {
                Some(from) if per_commit(label) => self.make(at, Made::PerCommit { label: label.into(), from }),
                Some(_) => self.problem(at, format!(
                    "makes a snapshot for every commit: put {COMMIT_NUMBER} in its label (s{COMMIT_NUMBER}), not {label}"
                )),
                None if per_commit(label) => self.problem(at, format!(
                    "{COMMIT_NUMBER} stands for a commit's number inside `each_commit:` only"
                )),
                None => self.make(at, Made::One(label.into())),
            }
        }
        for label in [&r.restores, &r.over, &r.snapshot].into_iter().flatten() {
            self.uses(at, label, block);
        }
        self.restored |= r.restores.is_some();
        let tools = self.tools.clone();
        for (tool, commands) in tools {
            match commands.get(&r.command) {
                None if r.optional => {}
                None if !self.missing.insert((tool, r.command.clone())) => {}
                None => self.problem(at, format!(
                    "runs `{}`, which tool {} has no command for: add `commands.{}` to it, or mark the step `optional: true`",
                    r.command, tool, r.command
                )),
                Some(c)
                    if r.snapshot_label().is_none()
                        && c.argv.iter().chain(c.cwd.iter()).any(|a| a.contains("{snapshot}")) =>
                {
                    self.problem(at, format!(
                        "runs {}'s `{}`, which uses {{snapshot}}, but names no snapshot: add `makes:`, `restores:` or `snapshot:`",
                        tool, r.command
                    ))
                }
                Some(_) => {}
            }
        }
    }

    fn make(&mut self, at: StepAt, made: Made) {
        let twice = match &made {
            Made::One(l) => self.made.iter().any(|m| m.names(l)),
            Made::PerCommit { label, .. } => self.made.iter().any(|m| match m {
                Made::PerCommit { label: other, .. } => other == label,
                Made::One(l) => made.names(l),
            }),
        };
        if twice {
            let label = match &made {
                Made::One(l) => l.clone(),
                Made::PerCommit { label, from } => format!("{label} (from commit {from})"),
            };
            self.problem(
                at,
                format!("snapshot {label} is made twice: give each backup its own label"),
            );
        }
        self.made.push(made);
    }

    /// A step restores or works on snapshot `label`: an earlier step made it
    /// (every commit's, for a label with `{k}`).
    fn uses(&mut self, at: StepAt, label: &str, block: Option<u32>) {
        let found = match block {
            Some(from) if label.contains(COMMIT_NUMBER) => {
                let per_commit = self.made.iter().find_map(|m| match m {
                    Made::PerCommit { label: t, from } if t == label => Some(*from),
                    _ => None,
                });
                // Commits before the per-commit label's first need one each.
                per_commit.is_some_and(|first| {
                    (from..first).all(|k| {
                        let one = label.replace(COMMIT_NUMBER, &k.to_string());
                        self.made.iter().any(|m| m.names(&one))
                    })
                })
            }
            None if label.contains(COMMIT_NUMBER) => {
                self.problem(
                    at,
                    format!(
                        "{COMMIT_NUMBER} stands for a commit's number inside `each_commit:` only"
                    ),
                );
                return;
            }
            _ => self.made.iter().any(|m| m.names(label)),
        };
        if !found {
            let made: Vec<String> = self
                .made
                .iter()
                .map(|m| match m {
                    Made::One(l) => l.clone(),
                    Made::PerCommit { label, from } => format!("{label} from commit {from}"),
                })
                .collect();
            self.problem(
                at,
                format!(
                    "uses snapshot {label}, which no earlier step `makes:` (made so far: {})",
                    if made.is_empty() {
                        "none".to_string()
                    } else {
                        made.join(", ")
                    }
                ),
            );
        }
    }
}

impl StepAt {
    /// The block itself, for a problem of the whole block.
    fn outer(self) -> StepAt {
        StepAt {
            inner: None,
            ..self
        }
    }
}
