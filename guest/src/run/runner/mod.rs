//! The run: the dataset once, then every cycle, every tool in its rotated
//! order, every step of SPEC section 4, each written down as it ends.
//!
//! Work tree, under `--work DIR`:
//! `DIR/<run_id>/pristine` the generated dataset, kept for the whole run;
//! `DIR/<run_id>/c<cycle>-<tool>/{source,repo,restore,work}` one tool cycle:
//! a pristine source tree, a fresh empty repository, an empty restore target
//! and an empty work/home directory. The source tree of the first tool cycle
//! is a copy of the pristine one (`cp -a --reflink=auto`); every later tool
//! cycle takes over the previous one's and resets it to the pristine state
//! (see [`crate::run::reset`]: the changed bytes are copied back, anything a
//! tool added is removed), which costs about 5% of a copy and spares deleting
//! the old one. Either is recorded as an untimed `generate` step of that tool
//! and cycle. Between tool cycles the source waits in `DIR/<run_id>/source`;
//! the rest of a tool cycle's folder is removed when it ends (its repository
//! and home already while its restore is verified), so the disk holds the
//! pristine tree, one source tree and one tool cycle at a time.
//!
//! Paths: the plan decides argv and cwd; the agent checks `{target}` itself
//! against the changed manifest. So a lab backs up with cwd `{source}` and
//! the argument `.`, and restores into `{target}`, for every tool alike.

use crate::run::agent_lock::{AgentLock, DEFAULT_LOCK_NAME};
use crate::run::dataset_store::{DATASETS_DIR, DatasetStore};
use crate::run::error::RunError;
use crate::run::evidence::Evidence;
use crate::run::interrupt::{Interrupt, signal_name};
use crate::run::leftover::{self, stop_leftover_tool};
use crate::run::measure::{Executor, Processes};
use crate::run::placeholders::Vars;
use crate::run::plan_check::{check_binaries, load_plan};
use crate::run::private_paths::PathRedactor;
use crate::run::rotation::cycle_order;
use crate::run::run_dirs::resolve as resolve_dirs;
use crate::run::space;
use crate::run::storage;
use context::Context;
use labrun_dataset::DatasetParams;
use labrun_evidence::{DatasetPlan, EntryKind, Event, Manifest, Plan, ToolPlan};
use services::Services;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tally::Tally;
use workspace::{Workspace, remove_tree};

mod context;
mod cycle;
mod history;
mod in_process;
#[cfg(test)]
mod interpreter_tests;
pub(crate) mod real_tree;
mod restore_over;
mod same_tree;
mod services;
mod source_tree;
mod tally;
mod tool_step;
mod tree_manifests;
mod verify_step;
mod workspace;

const GENERATED: &str = "generated";
const CHANGED: &str = "changed";
/// The metadata-fidelity fixture's manifest (`manifests/fidelity.jsonl`).
const FIXTURE: &str = "fidelity";
/// The work folder's copies of a private tree's manifests, with its paths.
const PLAIN_MANIFESTS: &str = "plain-manifests";

pub struct RunOptions {
    pub plan: PathBuf,
    pub work: PathBuf,
    pub evidence: PathBuf,
    /// The marker held while the run goes on (see [`crate::run::agent_lock`]);
    /// `None`: [`DEFAULT_LOCK_NAME`] in the work folder.
    pub lock: Option<PathBuf>,
    /// The store of datasets kept between rounds (see
    /// [`crate::run::dataset_store`]); `None`: datasets/ in the work folder.
    pub datasets: Option<PathBuf>,
    /// Delete the plan file once read: it carries the tools' passwords, and
    /// the machine may live on after the run (the evidence keeps a redacted
    /// copy).
    pub remove_plan: bool,
    /// Stream events on stdout too (the command does; tests need not).
    pub echo_events: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOutcome {
    /// Every step of every tool passed.
    Passed,
    /// The run finished, and some step failed.
    SomeFailed,
    /// A signal stopped the run.
    Interrupted(i32),
}

impl RunOutcome {
    /// 0 all passed, 1 some step failed, 128 + signal when stopped (as a
    /// shell reports a command killed by that signal). 2, for a run that
    /// could not start or go on, is the caller's (an `Err`).
    pub fn exit_code(self) -> u8 {
        match self {
            RunOutcome::Passed => 0,
            RunOutcome::SomeFailed => 1,
            RunOutcome::Interrupted(signal) => 128u8.saturating_add(signal.clamp(1, 127) as u8),
        }
    }
}

/// Why the run stopped before its end.
enum Halt {
    Signal(i32),
    Fatal(RunError),
}

impl From<RunError> for Halt {
    fn from(e: RunError) -> Halt {
        Halt::Fatal(e)
    }
}

/// Runs the plan at `opts.plan`. `Err` when the run could not start (bad
/// plan, missing binary, unusable directories, another agent running, too
/// little disk) or could not go on (evidence could not be written); what was
/// written until then stays.
pub fn execute(opts: &RunOptions, interrupt: Arc<Interrupt>) -> Result<RunOutcome, RunError> {
    execute_with(opts, interrupt, &Processes)
}

/// [`execute`] with the commands run by `executor`.
pub fn execute_with(
    opts: &RunOptions,
    interrupt: Arc<Interrupt>,
    executor: &dyn Executor,
) -> Result<RunOutcome, RunError> {
    let plan = load_plan(&opts.plan);
    let mut start_warnings = Vec::new();
    if opts.remove_plan {
        start_warnings.extend(remove_plan(&opts.plan));
    }
    let plan = plan?;
    let binary_digests = check_binaries(&plan)?;
    storage::preflight(&plan)?;
    let dirs = resolve_dirs(&opts.work, &opts.evidence, &plan.run_id)?;
    let lock_path = opts
        .lock
        .clone()
        .unwrap_or_else(|| dirs.work.join(DEFAULT_LOCK_NAME));
    let (lock, previous) = AgentLock::acquire(&lock_path, &plan.run_id)?;
    if let Some(previous) = &previous {
        start_warnings.extend(stop_leftover_tool(previous, leftover::GRACE));
    }
    start_warnings.extend(storage::remove_leftovers());
    let store_dir = opts
        .datasets
        .clone()
        .unwrap_or_else(|| dirs.work.join(DATASETS_DIR));
    let (datasets, warnings) =
        DatasetStore::open(&store_dir, plan.round.as_ref().map(|r| r.group.as_str()));
    start_warnings.extend(warnings);
    let (params, change_seed) = match plan.dataset {
        DatasetPlan::Synthetic {
            seed,
            scale,
            change_seed,
            profile,
        } => (
            DatasetParams {
                seed,
                scale,
                profile,
            },
            change_seed,
        ),
        // A git history (history.rs) and a real tree (real_tree.rs) use
        // none of the synthetic parameters.
        DatasetPlan::GitHistory { .. } | DatasetPlan::Tree(_) => {
            (DatasetParams::published(0, 0.0), None)
        }
    };
    if let DatasetPlan::Synthetic { .. } = plan.dataset {
        // What the tree takes on disk: a sparse image's holes take nothing.
        space::check_now(&dirs.work, &labrun_dataset::footprint(&params))?;
    }
    // From here on the marker names the tool that runs, so that the next
    // agent can stop it should this one be killed.
    let lock = Arc::new(lock);
    let recorder = Arc::clone(&lock);
    interrupt.record_groups_with(Box::new(move |group| recorder.record_tool(group)));
    // A plan that continues a run adds its cycles to that run's evidence.
    let evidence = if plan.continues() {
        Evidence::resume(&dirs.evidence, opts.echo_events)?
    } else {
        Evidence::create(&dirs.evidence, opts.echo_events)?
    };
    evidence.write_binary_digests(&binary_digests)?;
    let root = dirs.root;
    std::fs::create_dir_all(&root)
        .map_err(|e| RunError::io("cannot create work directory", &root, e))?;
    let private = tree_is_private(&plan);
    let mut runner = Runner {
        ctx: Context {
            plan: &plan,
            executor,
            interrupt,
        },
        ws: Workspace {
            pristine: root.join("pristine"),
            pristine_is_ours: true,
            real_tree: None,
            private,
            private_paths: PathRedactor::default(),
            root,
            params,
            change_seed: change_seed.unwrap_or(params.seed.wrapping_add(1)),
            first_manifests: Default::default(),
            source_reusable: false,
        },
        tally: Tally::new(evidence, &plan.run_id, start_warnings),
        svc: Services::new(datasets),
    };
    let outcome = runner.run_all();
    if outcome.is_err() {
        runner.svc.stop_storage(&mut runner.tally);
    }
    match outcome {
        Ok(outcome) => Ok(outcome),
        Err(Halt::Signal(signal)) => {
            runner
                .tally
                .finish_stopped(format!("interrupted by {}", signal_name(signal)));
            Ok(RunOutcome::Interrupted(signal))
        }
        Err(Halt::Fatal(e)) => {
            runner.tally.finish_stopped(e.to_string());
            Err(e)
        }
    }
}

/// Deletes the plan just read; a failure is a warning for the evidence
/// (the passwords stay on the machine), not a reason to refuse the run.
fn remove_plan(plan: &Path) -> Option<String> {
    match std::fs::remove_file(plan) {
        Ok(()) => None,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => Some(format!(
            "cannot remove the plan {} ({e}): it holds the tools' passwords; delete it by hand",
            plan.display()
        )),
    }
}

/// The interpreter's state, split by what it is: the steps get the parts
/// they use (see `cycle.rs`).
struct Runner<'p> {
    ctx: Context<'p>,
    ws: Workspace,
    tally: Tally,
    svc: Services,
}

/// One tool in one cycle: its directories and placeholders.
#[derive(Clone)]
struct ToolCycle<'p> {
    tool: &'p ToolPlan,
    cycle: u32,
    order: u32,
    base: PathBuf,
    vars: Vars,
    /// The commit of a git-history series the step belongs to (in records
    /// and log names), set by the interpreter.
    history: Option<labrun_evidence::HistoryPoint>,
}

impl<'p> Runner<'p> {
    fn run_all(&mut self) -> Result<RunOutcome, Halt> {
        let plan = self.ctx.plan;
        self.tally.ev.write_plan(plan)?;
        self.tally.ev.emit(&Event::RunStarted {
            run_id: plan.run_id.clone(),
            tools: plan.tools.iter().map(|t| t.name.clone()).collect(),
            cycles: plan.cycles,
        })?;
        self.tally.give_start_warnings()?;
        self.svc
            .start_storage(&self.ctx, &self.ws.root, &mut self.tally)?;
        // The tools' versions are asked for while the dataset is written
        // and the first source tree is prepared, and are in before the
        // first timed step (an interpreter's cold start took 20 s under
        // emulation, longer than a small dataset's generation).
        self.svc.ask_versions(plan, &self.tally);
        source_tree::generate_pristine(
            &self.ctx,
            &mut self.ws,
            &mut self.tally,
            self.svc.datasets.as_ref(),
        )?;
        for cycle in plan.cycle_numbers() {
            for (order, index) in cycle_order(plan.tools.len(), cycle, plan.rotate_tools)
                .into_iter()
                .enumerate()
            {
                let tool = &plan.tools[index];
                let ok = self.tool_cycle(tool, cycle, order as u32)?;
                if !ok {
                    self.tally.cycle_failed(&tool.name, cycle);
                }
                self.tally.ev.emit(&Event::CycleFinished {
                    tool: tool.name.clone(),
                    cycle,
                    ok,
                })?;
            }
        }
        self.svc.stop_storage(&mut self.tally);
        self.svc.collect_versions(&mut self.tally)?;
        self.svc.settle_background(&mut self.tally)?;
        source_tree::keep_dataset(&self.ctx, &self.ws, &mut self.tally, &self.svc)?;
        remove_tree(&self.ws.root, &mut self.tally);
        Ok(if self.tally.finish()? {
            RunOutcome::Passed
        } else {
            RunOutcome::SomeFailed
        })
    }

    /// One tool's cycle; `Ok(false)` when a step failed (the rest skipped).
    fn tool_cycle(&mut self, tool: &'p ToolPlan, cycle: u32, order: u32) -> Result<bool, Halt> {
        self.ctx.check_stop()?;
        let base = self.ws.root.join(format!("c{cycle}-{}", tool.name));
        let location = self.svc.location(&base.join("repo"));
        let vars = Vars::for_cycle(
            tool.binary.clone(),
            path_str(&base.join("source")),
            path_str(&base.join("restore")),
            path_str(&base.join("work")),
            location,
            tool.repo.as_deref(),
        );
        // The repository folder is made empty here wherever the tool reaches
        // it from (a storage server's disk is this machine's).
        for dir in [&vars.location.path, &vars.target, &vars.work] {
            std::fs::create_dir_all(dir)
                .map_err(|e| RunError::io("cannot create work directory", dir, e))?;
        }
        let tc = ToolCycle {
            tool,
            cycle,
            order,
            base,
            vars,
            history: None,
        };
        let ok = self.tool_cycle_steps(&tc)?;
        self.end_tool_cycle(&tc);
        Ok(ok)
    }

    /// Keeps the source tree for the next tool cycle (unless it could not be
    /// made pristine: then the next one copies afresh) and removes the rest
    /// on another thread, while the next tool cycle's source is prepared:
    /// the next timed step waits for it (see [`crate::run::background`]).
    fn end_tool_cycle(&mut self, tc: &ToolCycle) {
        if std::mem::take(&mut self.ws.source_reusable) {
            // A failure only means the next tool cycle copies the dataset.
            let _ = std::fs::rename(&tc.vars.source, self.ws.kept_source());
        }
        self.svc
            .remove_in_background(vec![tc.base.clone()], &mut self.tally);
    }
}

/// Whether the dataset's paths stay out of the evidence.
fn tree_is_private(plan: &Plan) -> bool {
    match &plan.dataset {
        DatasetPlan::Tree(t) => t.private(),
        DatasetPlan::GitHistory {
            source: labrun_evidence::HistorySource::Trees { public, .. },
        } => !public,
        _ => false,
    }
}

fn log_prefix(tc: &ToolCycle) -> String {
    match &tc.history {
        Some(p) => format!("c{}-s{}", tc.cycle, p.index),
        None => format!("c{}", tc.cycle),
    }
}

fn file_count(m: &Manifest) -> u64 {
    m.entries
        .iter()
        .filter(|e| e.kind == EntryKind::File)
        .count() as u64
}

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes() {
        assert_eq!(RunOutcome::Passed.exit_code(), 0);
        assert_eq!(RunOutcome::SomeFailed.exit_code(), 1);
        assert_eq!(RunOutcome::Interrupted(libc::SIGTERM).exit_code(), 143);
        assert_eq!(RunOutcome::Interrupted(libc::SIGINT).exit_code(), 130);
    }
}
