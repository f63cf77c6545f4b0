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
use crate::run::background::Background;
use crate::run::cache::{CacheDrop, drop_page_cache};
use crate::run::cgroup::Cgroups;
use crate::run::dataset_store::{DATASETS_DIR, DatasetStore};
use crate::run::error::RunError;
use crate::run::evidence::{Done, Evidence, FailedCycle, blank_record, unix_ms_now};
use crate::run::interrupt::{InProcess, Interrupt, signal_name};
use crate::run::leftover::{self, stop_leftover_tool};
use crate::run::measure::{Executor, Processes};
use crate::run::placeholders::Vars;
use crate::run::plan_check::{check_binaries, load_plan};
use crate::run::private_paths::PathRedactor;
use crate::run::remove::remove_trees;
use crate::run::rotation::cycle_order;
use crate::run::run_dirs::resolve as resolve_dirs;
use crate::run::scrub::scrub_file;
use crate::run::space;
use crate::run::storage::{self, Storage, StorageError};
use crate::run::tool_versions::{self, VersionProbe};
use labrun_dataset::DatasetParams;
use labrun_evidence::{
    DatasetPlan, EntryKind, Event, Manifest, Plan, SCHEMA_VERSION, Step, StepRecord, ToolPlan,
};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod cycle;
mod history;
#[cfg(test)]
mod interpreter_tests;
pub(crate) mod real_tree;
mod restore_over;
mod same_tree;
mod source_tree;
mod tool_step;
mod tree_manifests;
mod verify_step;

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
    let mut runner = Runner {
        executor,
        pristine: root.join("pristine"),
        pristine_is_ours: true,
        real_tree: None,
        private_paths: PathRedactor::default(),
        root,
        params,
        change_seed: change_seed.unwrap_or(params.seed.wrapping_add(1)),
        plan: &plan,
        ev: evidence,
        interrupt,
        first_manifests: Default::default(),
        source_reusable: false,
        warned: HashSet::new(),
        start_warnings,
        records: 0,
        failed_steps: 0,
        failed_cycles: Vec::new(),
        cgroups: Cgroups::open(),
        cycle_walls: Default::default(),
        storage: None,
        datasets,
        background: Background::default(),
        versions: None,
    };
    let outcome = runner.run_all();
    if outcome.is_err() {
        runner.stop_storage();
    }
    match outcome {
        Ok(outcome) => Ok(outcome),
        Err(Halt::Signal(signal)) => {
            runner.finish_stopped(format!("interrupted by {}", signal_name(signal)));
            Ok(RunOutcome::Interrupted(signal))
        }
        Err(Halt::Fatal(e)) => {
            runner.finish_stopped(e.to_string());
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

struct Runner<'p> {
    plan: &'p Plan,
    /// Runs every measured command (tool steps and their helpers).
    executor: &'p dyn Executor,
    ev: Evidence,
    interrupt: Arc<Interrupt>,
    root: PathBuf,
    pristine: PathBuf,
    /// The run made the pristine tree and removes it at its end; false for
    /// a folder read in place (a user's: never written, never removed).
    pristine_is_ours: bool,
    /// A real tree's manifest and changes ([`real_tree`]).
    real_tree: Option<real_tree::RealTree>,
    /// A private tree's paths, hashed in every tool log (empty otherwise).
    private_paths: PathRedactor,
    params: DatasetParams,
    change_seed: u64,
    /// Digests of the run's first manifests of its trees (each change
    /// round's, each commit's, the fidelity fixture's), by name, as this
    /// agent wrote or read them (`same_tree.rs`).
    first_manifests: std::collections::BTreeMap<String, String>,
    /// The current tool cycle's source tree was made pristine, so the next
    /// tool cycle may reset it rather than copy the dataset again.
    source_reusable: bool,
    /// Warnings already given (each once per run).
    warned: HashSet<String>,
    /// Found before the evidence existed; given right after the run starts.
    start_warnings: Vec<String>,
    records: u64,
    failed_steps: u64,
    failed_cycles: Vec<FailedCycle>,
    /// Where timed steps' cgroups are made (or why they cannot be).
    cgroups: Cgroups,
    /// The wall time of each step that succeeded in this tool cycle (a
    /// kill point may be a fraction of one).
    cycle_walls: std::collections::BTreeMap<Step, f64>,
    /// The storage network and server, while up (the plan's `storage`).
    storage: Option<Storage>,
    /// Datasets kept between the rounds of an interleaved run (the plan's
    /// `round`).
    datasets: Option<DatasetStore>,
    /// Removals going on beside untimed work; settled before every timed
    /// step (and every cache drop).
    background: Background,
    /// The tools' version commands, from the dataset's generation until the
    /// first timed step (or the run's end) collects them.
    versions: Option<VersionProbe>,
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
        self.ev.write_plan(self.plan)?;
        self.ev.emit(&Event::RunStarted {
            run_id: self.plan.run_id.clone(),
            tools: self.plan.tools.iter().map(|t| t.name.clone()).collect(),
            cycles: self.plan.cycles,
        })?;
        for warning in std::mem::take(&mut self.start_warnings) {
            self.warn_once(warning)?;
        }
        self.start_storage()?;
        // The tools' versions are asked for while the dataset is written
        // and the first source tree is prepared, and are in before the
        // first timed step (an interpreter's cold start took 20 s under
        // emulation, longer than a small dataset's generation).
        self.versions = Some(VersionProbe::start(self.plan, &self.ev));
        self.generate_pristine()?;
        let plan = self.plan;
        for cycle in plan.cycle_numbers() {
            for (order, index) in cycle_order(plan.tools.len(), cycle, plan.rotate_tools)
                .into_iter()
                .enumerate()
            {
                let tool = &plan.tools[index];
                let ok = self.tool_cycle(tool, cycle, order as u32)?;
                if !ok {
                    self.failed_cycles.push(FailedCycle {
                        tool: tool.name.clone(),
                        cycle,
                    });
                }
                self.ev.emit(&Event::CycleFinished {
                    tool: tool.name.clone(),
                    cycle,
                    ok,
                })?;
            }
        }
        self.stop_storage();
        self.collect_versions()?;
        self.settle_background()?;
        self.keep_dataset()?;
        self.remove_tree(&self.root.clone());
        let ok = self.failed_cycles.is_empty() && self.failed_steps == 0;
        self.ev.write_done(&Done {
            schema_version: SCHEMA_VERSION,
            run_id: self.plan.run_id.clone(),
            ok,
            records: self.records,
            failed_steps: self.failed_steps,
            failed_cycles: self.failed_cycles.clone(),
            finished_unix_ms: unix_ms_now(),
        })?;
        // After done.json: a host that sees this event finds the run complete.
        self.ev.emit(&Event::RunFinished {
            ok,
            stopped_because: None,
        })?;
        Ok(if ok {
            RunOutcome::Passed
        } else {
            RunOutcome::SomeFailed
        })
    }

    /// Before any step: the plan's storage network and server up, what was
    /// measured of them in `storage.json`.
    fn start_storage(&mut self) -> Result<(), Halt> {
        let Some(spec) = storage::wanted(self.plan) else {
            return Ok(());
        };
        let logs = self
            .ev
            .path_of(&format!("{}/storage", labrun_evidence::files::LOGS_DIR));
        match Storage::start(spec, &self.root, &logs, &self.interrupt) {
            Ok((up, record)) => {
                self.storage = Some(up);
                self.ev.write_storage(&record)?;
                if let Some(w) = storage::probe::rtt_warning(spec.network.as_ref(), &record) {
                    self.warn_once(w)?;
                }
                Ok(())
            }
            Err(StorageError::Interrupted(signal)) => Err(Halt::Signal(signal)),
            Err(e) => Err(Halt::Fatal(e.into())),
        }
    }

    /// The storage server stopped and its network removed (if they are up);
    /// what could not be undone is a warning.
    fn stop_storage(&mut self) {
        let Some(mut up) = self.storage.take() else {
            return;
        };
        for warning in up.stop() {
            let _ = self.warn_once(warning);
        }
    }

    /// Best effort: the run is over either way, and the reason is already
    /// the caller's error or exit code.
    fn finish_stopped(&mut self, reason: String) {
        let _ = self.ev.emit(&Event::RunFinished {
            ok: false,
            stopped_because: Some(reason),
        });
    }

    fn append(&mut self, record: &StepRecord) -> Result<(), Halt> {
        self.records += 1;
        if !record.ok && !record.may_fail {
            self.failed_steps += 1;
        }
        if record.ok && !record.tool.is_empty() {
            self.cycle_walls
                .insert(record.step.clone(), record.wall_secs);
        }
        self.ev.append_record(record)?;
        Ok(())
    }

    /// Removes `trees` on another thread, after the background jobs before
    /// it; the next timed step waits for it.
    fn remove_in_background(&mut self, trees: Vec<PathBuf>) {
        if trees.is_empty() {
            return;
        }
        let warnings = self.background.spawn("remove", move || {
            removal_warning(&remove_trees(&trees)).into_iter().collect()
        });
        for w in warnings {
            let _ = self.warn_once(w);
        }
    }

    /// Waits for the tools' version commands, if they are still asked,
    /// and writes what they said. A run stopped before its first timed step
    /// kills them instead (`VersionProbe`'s drop) and has no versions.
    pub(super) fn collect_versions(&mut self) -> Result<(), Halt> {
        if let Some(probe) = self.versions.take() {
            self.ev
                .write_tool_versions(&probe.collect(tool_versions::DEADLINE))?;
        }
        Ok(())
    }

    /// Waits for what runs in the background; gives its warnings.
    pub(super) fn settle_background(&mut self) -> Result<(), Halt> {
        for w in self.background.settle() {
            self.warn_once(w)?;
        }
        Ok(())
    }

    fn warn_once(&mut self, message: String) -> Result<(), Halt> {
        if self.warned.insert(message.clone()) {
            self.ev.emit(&Event::Warning { message })?;
        }
        Ok(())
    }

    fn check_stop(&self) -> Result<(), Halt> {
        match self.interrupt.stopped_by() {
            Some(signal) => Err(Halt::Signal(signal)),
            None => Ok(()),
        }
    }

    /// Runs dataset work on its own thread (see [`Interrupt::run_in_process`]),
    /// turning its progress calls into events, at most one per percent.
    fn in_process<T: Send + 'static>(
        &mut self,
        phase: Step,
        work: impl FnOnce(&mut dyn FnMut(u64, u64)) -> T + Send + 'static,
    ) -> InProcess<T> {
        let ev = &mut self.ev;
        let mut last_percent = None;
        self.interrupt.run_in_process(work, |done, total| {
            let percent = done.saturating_mul(100).checked_div(total).unwrap_or(100);
            if last_percent != Some(percent) {
                last_percent = Some(percent);
                // A failed write here shows again, as an error, at the next record.
                let _ = ev.emit(&Event::DatasetProgress {
                    phase: phase.clone(),
                    bytes_done: done,
                    bytes_total: total,
                });
            }
        })
    }

    /// Writes the record of the step a signal cut short, and stops the run.
    fn interrupted<T>(&mut self, rec: &mut StepRecord, signal: i32) -> Result<T, Halt> {
        rec.ok = false;
        rec.error = Some(format!("interrupted by {}", signal_name(signal)));
        self.append(rec)?;
        Err(Halt::Signal(signal))
    }

    /// One tool's cycle; `Ok(false)` when a step failed (the rest skipped).
    fn tool_cycle(&mut self, tool: &'p ToolPlan, cycle: u32, order: u32) -> Result<bool, Halt> {
        self.check_stop()?;
        let base = self.root.join(format!("c{cycle}-{}", tool.name));
        let folder = base.join("repo");
        let location = match &self.storage {
            Some(storage) => storage.location(&folder),
            None => storage::local_location(&folder),
        };
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

    /// Between tool cycles the source tree waits here.
    fn kept_source(&self) -> PathBuf {
        self.root.join("source")
    }

    /// Keeps the source tree for the next tool cycle (unless it could not be
    /// made pristine: then the next one copies afresh) and removes the rest
    /// on another thread, while the next tool cycle's source is prepared:
    /// the next timed step waits for it (see [`Background`]).
    fn end_tool_cycle(&mut self, tc: &ToolCycle) {
        if std::mem::take(&mut self.source_reusable) {
            // A failure only means the next tool cycle copies the dataset.
            let _ = std::fs::rename(&tc.vars.source, self.kept_source());
        }
        self.remove_in_background(vec![tc.base.clone()]);
    }

    /// The run's own dataset step (no tool, cycle 0): announced, and its
    /// record begun.
    pub(super) fn start_dataset_step(&mut self) -> Result<StepRecord, Halt> {
        self.check_stop()?;
        self.ev.emit(&Event::StepStarted {
            tool: String::new(),
            cycle: 0,
            step: Step::GENERATE,
        })?;
        Ok(blank_record(&self.plan.run_id, "", 0, Step::GENERATE))
    }

    /// Announces an untimed step of a tool cycle; returns its record (tool,
    /// cycle, order, history point filled in) and its start.
    pub(super) fn start_step(
        &mut self,
        tc: &ToolCycle,
        step: Step,
    ) -> Result<(StepRecord, Instant), Halt> {
        self.ev.emit(&Event::StepStarted {
            tool: tc.tool.name.clone(),
            cycle: tc.cycle,
            step: step.clone(),
        })?;
        let mut rec = blank_record(&self.plan.run_id, &tc.tool.name, tc.cycle, step);
        rec.order = tc.order;
        rec.history = tc.history.clone();
        Ok((rec, Instant::now()))
    }

    /// Cold cache before a timed step; warns (once per reason) when it
    /// could not be done. Returns whether it was.
    fn drop_cache(&mut self) -> Result<bool, Halt> {
        let outcome = drop_page_cache();
        if let CacheDrop::NotDropped(why) = &outcome {
            self.warn_once(why.clone())?;
        }
        Ok(outcome.dropped())
    }

    /// `fstrim` of the file system the run works on, as the record keeps
    /// it; a failure is warned about once, never a reason to stop.
    fn trim(&mut self) -> Result<labrun_evidence::record::Trim, Halt> {
        use labrun_evidence::record::TrimOutcome;
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
        let mount = crate::run::settle::mount_of(&self.root, &mounts);
        let trim = crate::run::settle::outcome(&mount, self.executor.fstrim(&mount));
        if let TrimOutcome::Failed { reason } | TrimOutcome::NotRun { reason } = &trim.outcome {
            self.warn_once(format!(
                "the work file system {} was not trimmed before timed steps: {reason}",
                trim.mount
            ))?;
        }
        Ok(trim)
    }

    /// The lab's cool-down: a sleep a stop request ends.
    fn cool_down(&self, pause: Duration) -> Result<(), Halt> {
        let until = Instant::now() + pause;
        loop {
            self.check_stop()?;
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            std::thread::sleep(left.min(Duration::from_millis(200)));
        }
    }

    fn timeout(&self) -> Option<Duration> {
        self.plan.step_timeout_secs.map(Duration::from_secs)
    }

    /// Secret values of `tool`, and a private tree's paths, out of the
    /// given logs.
    fn scrub(&mut self, tool: &ToolPlan, logs: &[&Path]) -> Result<(), Halt> {
        let secrets: Vec<&str> = tool
            .secret_env
            .iter()
            .filter_map(|k| tool.env.get(k))
            .map(String::as_str)
            .collect();
        for log in logs {
            match scrub_file(log, &secrets) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(RunError::io("cannot redact secrets in tool log", log, e).into());
                }
            }
            self.private_paths.redact_file(log).map_err(|e| {
                RunError::io("cannot hash the private tree's paths in tool log", log, e)
            })?;
        }
        Ok(())
    }

    /// Moves a private tree's names out of memory into the work folder for
    /// the rest of the run (see [`PathRedactor::park`]); should that fail,
    /// they stay in memory, where they work as well, and a warning says so.
    fn park_private_names(&mut self) {
        let path = self.root.join("private-names.u64");
        if let Err(e) = self.private_paths.park(&path) {
            let _ = self.warn_once(format!(
                "cannot write {} ({e}): the private tree's names stay in the agent's memory (8 bytes a name) for the run",
                path.display()
            ));
        }
    }

    /// Where a private tree's manifest `name` is kept with its paths: in
    /// the work folder (on the tree's own machine, removed with it at the
    /// end of the run), never in the evidence. A verify merges it with the
    /// sorted walk of a restore as it reads it, as it does a public tree's
    /// manifest, instead of holding both trees hashed and sorted by hash.
    fn plain_manifest_path(&self, name: &str) -> PathBuf {
        self.root
            .join(PLAIN_MANIFESTS)
            .join(format!("{name}.jsonl"))
    }

    /// Whether the dataset's paths stay out of the evidence.
    fn tree_is_private(&self) -> bool {
        match &self.plan.dataset {
            DatasetPlan::Tree(t) => t.private(),
            DatasetPlan::GitHistory {
                source: labrun_evidence::HistorySource::Trees { public, .. },
            } => !public,
            _ => false,
        }
    }

    /// Removes a finished tree; a failure only costs disk space, so it is a
    /// warning, not a stop.
    fn remove_tree(&mut self, dir: &Path) {
        let failed = remove_trees(&[dir.to_path_buf()]);
        self.warn_removal(&failed);
    }

    fn warn_removal(&mut self, failed: &[(PathBuf, std::io::Error)]) {
        if let Some(w) = removal_warning(failed) {
            let _ = self.warn_once(w);
        }
    }
}

/// What a failed removal warns of, if it failed.
fn removal_warning(failed: &[(PathBuf, std::io::Error)]) -> Option<String> {
    let (path, e) = failed.first()?;
    let more = match failed.len() - 1 {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    Some(format!(
        "cannot remove {}: {e}{more} (it only costs disk space)",
        path.display()
    ))
}

const LIBRARY_PANIC: &str =
    "the dataset library panicked (a bug in labrun: please report it with this run's evidence)";

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
