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
use crate::run::cache::{CacheDrop, drop_page_cache};
use crate::run::cgroup::Cgroups;
use crate::run::env::{from_process, tool_env};
use crate::run::error::{RunError, describe_io};
use crate::run::evidence::{Done, Evidence, FailedCycle, blank_record, unix_ms_now};
use crate::run::interrupt::{InProcess, Interrupt, signal_name};
use crate::run::leftover::{self, stop_leftover_tool};
use crate::run::measure::{CommandSpec, Measurement, TreeSpec, run_measured};
use crate::run::placeholders::{Vars, substitute};
use crate::run::plan_check::{check_binaries, load_plan};
use crate::run::remove::remove_trees;
use crate::run::repo_size::allocated_bytes;
use crate::run::reset::reset_tree;
use crate::run::rotation::cycle_order;
use crate::run::run_dirs::resolve as resolve_dirs;
use crate::run::scrub::scrub_file;
use crate::run::space;
use labrun_dataset::DatasetParams;
use labrun_evidence::{
    CommandTemplate, DatasetPlan, EntryKind, Event, Manifest, Plan, SCHEMA_VERSION, Step,
    StepRecord, ToolPlan,
};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

// The git-history study (SPEC 6): a child module, so it runs this file's
// steps as they are.
#[path = "history.rs"]
mod history;

const GENERATED: &str = "generated";
const CHANGED: &str = "changed";

pub struct RunOptions {
    pub plan: PathBuf,
    pub work: PathBuf,
    pub evidence: PathBuf,
    /// The marker held while the run goes on (see [`crate::run::agent_lock`]);
    /// `None`: [`DEFAULT_LOCK_NAME`] in the work folder.
    pub lock: Option<PathBuf>,
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
    let plan = load_plan(&opts.plan);
    let mut start_warnings = Vec::new();
    if opts.remove_plan {
        start_warnings.extend(remove_plan(&opts.plan));
    }
    let plan = plan?;
    check_binaries(&plan)?;
    let dirs = resolve_dirs(&opts.work, &opts.evidence, &plan.run_id)?;
    let lock_path = opts
        .lock
        .clone()
        .unwrap_or_else(|| dirs.work.join(DEFAULT_LOCK_NAME));
    let (lock, previous) = AgentLock::acquire(&lock_path, &plan.run_id)?;
    if let Some(previous) = &previous {
        start_warnings.extend(stop_leftover_tool(previous, leftover::GRACE));
    }
    if let DatasetPlan::Synthetic { seed, scale, .. } = plan.dataset {
        let dataset = labrun_dataset::layout(&DatasetParams { seed, scale }).total_bytes();
        space::check_now(&dirs.work, dataset)?;
    }
    // From here on the marker names the tool that runs, so that the next
    // agent can stop it should this one be killed.
    let lock = Arc::new(lock);
    let recorder = Arc::clone(&lock);
    interrupt.record_groups_with(Box::new(move |group| recorder.record_tool(group)));
    let evidence = Evidence::create(&dirs.evidence, opts.echo_events)?;
    let root = dirs.root;
    std::fs::create_dir_all(&root)
        .map_err(|e| RunError::io("cannot create work directory", &root, e))?;
    let (seed, scale, change_seed) = match plan.dataset {
        DatasetPlan::Synthetic {
            seed,
            scale,
            change_seed,
        } => (seed, scale, change_seed),
        // A git history (history.rs) uses none of the synthetic parameters.
        DatasetPlan::GitHistory { .. } => (0, 0.0, None),
    };
    let mut runner = Runner {
        pristine: root.join("pristine"),
        root,
        params: DatasetParams { seed, scale },
        change_seed: change_seed.unwrap_or(seed.wrapping_add(1)),
        plan: &plan,
        ev: evidence,
        interrupt,
        changed_digest: None,
        source_reusable: false,
        warned: HashSet::new(),
        start_warnings,
        records: 0,
        failed_steps: 0,
        failed_cycles: Vec::new(),
        cgroups: Cgroups::open(),
    };
    match runner.run_all() {
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
    ev: Evidence,
    interrupt: Arc<Interrupt>,
    root: PathBuf,
    pristine: PathBuf,
    params: DatasetParams,
    change_seed: u64,
    /// Digest of the first changed manifest: every later change must match.
    changed_digest: Option<String>,
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
}

/// One tool in one cycle: its directories and placeholders.
struct ToolCycle<'p> {
    tool: &'p ToolPlan,
    cycle: u32,
    order: u32,
    base: PathBuf,
    vars: Vars,
    /// Set by history.rs: the point of a git-history series its steps
    /// belong to (in records and log names).
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
        self.generate_pristine()?;
        let plan = self.plan;
        for cycle in 1..=plan.cycles {
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
        if !record.ok {
            self.failed_steps += 1;
        }
        self.ev.append_record(record)?;
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
                    phase,
                    bytes_done: done,
                    bytes_total: total,
                });
            }
        })
    }

    /// The dataset, once per run. Without it nothing can run: failure is fatal.
    fn generate_pristine(&mut self) -> Result<(), Halt> {
        if let DatasetPlan::GitHistory { source } = &self.plan.dataset {
            return self.prepare_history(source);
        }
        let mut rec = self.start_dataset_step()?;
        let started = Instant::now();
        let (out, params) = (self.pristine.clone(), self.params);
        let result = self.in_process(Step::Generate, move |progress| {
            labrun_dataset::generate(&out, &params, progress)
        });
        rec.wall_secs = started.elapsed().as_secs_f64();
        match result {
            InProcess::Done(Ok(manifest)) => {
                self.ev.write_manifest(GENERATED, &manifest)?;
                rec.files = Some(file_count(&manifest));
                rec.bytes = Some(manifest.total_file_bytes());
                rec.ok = true;
                drop(manifest);
                self.append(&rec)
            }
            InProcess::Done(Err(e)) => {
                let message = format!("{} ({})", describe_io(&e), self.pristine.display());
                rec.error = Some(message.clone());
                self.append(&rec)?;
                Err(Halt::Fatal(RunError::Dataset {
                    phase: "generation",
                    message,
                }))
            }
            InProcess::Stopped(signal) => self.interrupted(&mut rec, signal),
            InProcess::Died => {
                rec.error = Some(LIBRARY_PANIC.into());
                self.append(&rec)?;
                Err(Halt::Fatal(RunError::Dataset {
                    phase: "generation",
                    message: LIBRARY_PANIC.into(),
                }))
            }
        }
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
        let vars = Vars {
            bin: tool.binary.clone(),
            repo: path_str(&base.join("repo")),
            source: path_str(&base.join("source")),
            target: path_str(&base.join("restore")),
            snapshot: String::new(),
            work: path_str(&base.join("work")),
        };
        for dir in [&vars.repo, &vars.target, &vars.work] {
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
    /// made pristine: then the next one copies afresh) and removes the rest.
    fn end_tool_cycle(&mut self, tc: &ToolCycle) {
        if std::mem::take(&mut self.source_reusable) {
            // A failure only means the next tool cycle copies the dataset.
            let _ = std::fs::rename(&tc.vars.source, self.kept_source());
        }
        self.remove_tree(&tc.base);
    }

    fn tool_cycle_steps(&mut self, tc: &ToolCycle) -> Result<bool, Halt> {
        if let DatasetPlan::GitHistory { source } = &self.plan.dataset {
            return self.history_steps(tc, source);
        }
        let commands = &tc.tool.commands;
        if !self.prepare_source(tc)? {
            return Ok(false);
        }
        if !self.tool_step(tc, Step::Init, &commands.init, "s1")?.ok {
            return Ok(false);
        }
        if !self
            .tool_step(tc, Step::BackupFull, &commands.backup, "s1")?
            .ok
        {
            return Ok(false);
        }
        if !self.change_source(tc)? {
            return Ok(false);
        }
        let s2 = self.tool_step(tc, Step::BackupIncremental, &commands.backup, "s2")?;
        if !s2.ok {
            return Ok(false);
        }
        let snapshot = s2.snapshot.unwrap_or_else(|| "s2".to_string());
        if !self
            .tool_step(tc, Step::Restore, &commands.restore, &snapshot)?
            .ok
        {
            return Ok(false);
        }
        self.verify_restore(tc)
    }

    /// A pristine source tree for this tool cycle, recorded as an untimed
    /// `generate` step of the tool and cycle: the previous tool cycle's,
    /// reset, or else a copy of the generated one.
    fn prepare_source(&mut self, tc: &ToolCycle) -> Result<bool, Halt> {
        let kept = self.kept_source();
        if std::fs::symlink_metadata(&kept).is_ok() {
            if std::fs::rename(&kept, &tc.vars.source).is_ok() {
                return self.reset_source(tc);
            }
            // Not movable (it should always be): start from a copy instead.
            self.remove_tree(&kept);
        }
        let argv = vec![
            "cp".to_string(),
            "-a".to_string(),
            "--reflink=auto".to_string(),
            path_str(&self.pristine),
            tc.vars.source.clone(),
        ];
        let env = tool_env(&Default::default(), &tc.vars, from_process);
        let rec = self.measured_step(
            tc,
            Step::Generate,
            argv,
            PathBuf::from(&tc.vars.work),
            &env,
            false,
        )?;
        let ok = self.finish_tool_record(rec, |_, _| Ok(()))?;
        self.source_reusable = ok;
        Ok(ok)
    }

    /// The previous tool cycle's source tree, made pristine again in place.
    fn reset_source(&mut self, tc: &ToolCycle) -> Result<bool, Halt> {
        self.check_stop()?;
        let (mut rec, started) = self.start_step(tc, Step::Generate)?;
        let (pristine, source, params, seed) = (
            self.pristine.clone(),
            PathBuf::from(&tc.vars.source),
            self.params,
            self.change_seed,
        );
        let result = self.in_process(Step::Generate, move |_| {
            let touched = labrun_dataset::change_plan(&params, seed);
            reset_tree(&pristine, &source, &touched)
        });
        rec.wall_secs = started.elapsed().as_secs_f64();
        match result {
            InProcess::Done(Ok(stats)) => {
                rec.ok = true;
                rec.files = Some(stats.entries_written);
                rec.bytes = Some(stats.bytes_written);
            }
            InProcess::Done(Err(e)) => {
                rec.error = Some(format!(
                    "cannot reset the source tree {} to the generated one: {}",
                    tc.vars.source,
                    describe_io(&e)
                ))
            }
            InProcess::Stopped(signal) => return self.interrupted(&mut rec, signal),
            InProcess::Died => {
                rec.error = Some(
                    "resetting the source tree panicked (a bug in labrun: please report it with this run's evidence)"
                        .into(),
                )
            }
        }
        self.source_reusable = rec.ok;
        let ok = rec.ok;
        self.append(&rec)?;
        Ok(ok)
    }

    /// A step of the tool itself (init, backup, restore), with the snapshot
    /// id and repository size after it where they apply.
    fn tool_step(
        &mut self,
        tc: &ToolCycle,
        step: Step,
        template: &CommandTemplate,
        snapshot: &str,
    ) -> Result<StepOutcome, Halt> {
        let vars = Vars {
            snapshot: snapshot.to_string(),
            ..tc.vars.clone()
        };
        let argv: Vec<String> = template.argv.iter().map(|a| substitute(a, &vars)).collect();
        let cwd = PathBuf::from(
            template
                .cwd
                .as_deref()
                .map_or_else(|| vars.work.clone(), |c| substitute(c, &vars)),
        );
        let env = tool_env(&tc.tool.env, &vars, from_process);
        let timed = self.plan.timed_steps.contains(&step);
        let mut rec = self.measured_step(tc, step, argv, cwd, &env, timed)?;
        if step != Step::Init {
            rec.snapshot = Some(snapshot.to_string());
        }
        let mut made = None;
        let ok = self.finish_tool_record(rec, |runner, rec| {
            if matches!(step, Step::BackupFull | Step::BackupIncremental) {
                if let Some(t) = &tc.tool.commands.snapshot_id {
                    match runner.aux_command(tc, step, "snapshot_id", t, &vars, &env)? {
                        Ok(id) => rec.snapshot = Some(id),
                        Err(why) => return fail(rec, why),
                    }
                }
                made = rec.snapshot.clone();
            }
            if matches!(
                step,
                Step::Init | Step::BackupFull | Step::BackupIncremental
            ) {
                let size = match &tc.tool.commands.repo_size {
                    Some(t) => runner
                        .aux_command(tc, step, "repo_size", t, &vars, &env)?
                        .and_then(|out| parse_size(&out)),
                    None => allocated_bytes(Path::new(&vars.repo)).map_err(|e| {
                        format!("cannot measure the repository size of {}: {e}", vars.repo)
                    }),
                };
                match size {
                    Ok(bytes) => rec.repo_size_bytes = Some(bytes),
                    Err(why) => return fail(rec, why),
                }
            }
            Ok(())
        })?;
        Ok(StepOutcome { ok, snapshot: made })
    }

    /// Runs one command of a tool cycle and fills a record with what it cost.
    /// A signal during it writes the record and stops the run.
    fn measured_step(
        &mut self,
        tc: &ToolCycle,
        step: Step,
        argv: Vec<String>,
        cwd: PathBuf,
        env: &std::collections::BTreeMap<String, String>,
        timed: bool,
    ) -> Result<StepRecord, Halt> {
        self.check_stop()?;
        self.ev.emit(&Event::StepStarted {
            tool: tc.tool.name.clone(),
            cycle: tc.cycle,
            step,
        })?;
        let cache_dropped = timed && self.plan.drop_caches && self.drop_cache()?;
        let logs = self
            .ev
            .log_paths(&tc.tool.name, &format!("{}-{step}", log_prefix(tc)))?;
        let mut rec = blank_record(&self.plan.run_id, &tc.tool.name, tc.cycle, step);
        rec.history = tc.history.clone();
        rec.order = tc.order;
        rec.timed = timed;
        rec.cache_dropped = cache_dropped;
        rec.stdout_path = Some(logs.stdout_rel.clone());
        rec.stderr_path = Some(logs.stderr_rel.clone());
        rec.started_unix_ms = unix_ms_now();
        let label = format!("{}-{step}", log_prefix(tc));
        let tree = timed.then(|| TreeSpec {
            cgroup: self.cgroups.for_step(&format!("{}-{label}", tc.tool.name)),
            timeline: Some(logs.stdout.with_extension("timeline.jsonl")),
            timeline_rel: Some(format!(
                "{}.timeline.jsonl",
                logs.stdout_rel.trim_end_matches(".out")
            )),
        });
        let spec = CommandSpec {
            argv: &argv,
            cwd: &cwd,
            env,
            stdout: &logs.stdout,
            stderr: &logs.stderr,
            timeout: self.timeout(),
            tree,
        };
        let result = run_measured(&spec, &self.interrupt);
        rec.argv = argv;
        self.scrub(tc.tool, &[&logs.stdout, &logs.stderr])?;
        match result {
            Ok(m) => {
                fill_measurement(&mut rec, &m, self.plan.step_timeout_secs, &logs.stderr_rel);
                if let Some(signal) = m.interrupted_by {
                    return self.interrupted(&mut rec, signal);
                }
            }
            Err(e) => rec.error = Some(e.to_string()),
        }
        Ok(rec)
    }

    /// Runs `after` for a step that succeeded (it may still fail the
    /// record), then writes the record. Returns the record's `ok`.
    fn finish_tool_record(
        &mut self,
        mut rec: StepRecord,
        after: impl FnOnce(&mut Self, &mut StepRecord) -> Result<(), AuxHalt>,
    ) -> Result<bool, Halt> {
        if rec.ok {
            match after(self, &mut rec) {
                Ok(()) => {}
                Err(AuxHalt::Signal(signal, what)) => {
                    rec.ok = false;
                    rec.error = Some(format!(
                        "interrupted by {} during {what}",
                        signal_name(signal)
                    ));
                    self.append(&rec)?;
                    return Err(Halt::Signal(signal));
                }
                Err(AuxHalt::Fatal(e)) => {
                    rec.ok = false;
                    rec.error = Some(e.to_string());
                    self.append(&rec)?;
                    return Err(Halt::Fatal(e));
                }
            }
        }
        let ok = rec.ok;
        self.append(&rec)?;
        Ok(ok)
    }

    /// A helper command (`snapshot_id`, `repo_size`): untimed, logged beside
    /// its step; gives its last non-empty stdout line.
    fn aux_command(
        &mut self,
        tc: &ToolCycle,
        step: Step,
        name: &'static str,
        template: &CommandTemplate,
        vars: &Vars,
        env: &std::collections::BTreeMap<String, String>,
    ) -> Result<Result<String, String>, AuxHalt> {
        let argv: Vec<String> = template.argv.iter().map(|a| substitute(a, vars)).collect();
        let cwd = PathBuf::from(
            template
                .cwd
                .as_deref()
                .map_or_else(|| vars.work.clone(), |c| substitute(c, vars)),
        );
        let logs = self
            .ev
            .log_paths(&tc.tool.name, &format!("{}-{step}.{name}", log_prefix(tc)))
            .map_err(AuxHalt::Fatal)?;
        let spec = CommandSpec {
            argv: &argv,
            cwd: &cwd,
            env,
            stdout: &logs.stdout,
            stderr: &logs.stderr,
            timeout: self.timeout(),
            // A cgroup, not for figures: what a helper starts (duplicity's
            // `collection-status` starts a gpg-agent) must not outlive it.
            tree: Some(TreeSpec {
                cgroup: self.cgroups.for_step(&format!(
                    "{}-{}-{step}.{name}",
                    tc.tool.name,
                    log_prefix(tc)
                )),
                timeline: None,
                timeline_rel: None,
            }),
        };
        let result = run_measured(&spec, &self.interrupt);
        if let Ok(m) = &result
            && let Some(t) = m.tree.as_ref().filter(|t| !t.leftovers.is_empty())
        {
            let _ = self.warn_once(format!(
                "{} `{name}` left processes running; they were killed: {}",
                tc.tool.name,
                t.leftovers.join(", ")
            ));
        }
        self.scrub(tc.tool, &[&logs.stdout, &logs.stderr])
            .map_err(|h| match h {
                Halt::Fatal(e) => AuxHalt::Fatal(e),
                Halt::Signal(s) => AuxHalt::Signal(s, name),
            })?;
        let m = match result {
            Ok(m) => m,
            Err(e) => return Ok(Err(format!("{name} command: {e}"))),
        };
        if let Some(signal) = m.interrupted_by {
            return Err(AuxHalt::Signal(signal, name));
        }
        if !m.succeeded() {
            return Ok(Err(format!(
                "{name} command `{}` failed ({}); see {}",
                argv.join(" "),
                describe_exit(&m, self.plan.step_timeout_secs),
                logs.stderr_rel
            )));
        }
        let stdout = std::fs::read_to_string(&logs.stdout).map_err(|e| {
            AuxHalt::Fatal(RunError::io("cannot read tool output", &logs.stdout, e))
        })?;
        match stdout.lines().map(str::trim).rfind(|l| !l.is_empty()) {
            Some(line) => Ok(Ok(line.to_string())),
            None => Ok(Err(format!(
                "{name} command `{}` printed nothing; see {}",
                argv.join(" "),
                logs.stdout_rel
            ))),
        }
    }

    /// The 5% change on this tool cycle's source tree (untimed). Its
    /// manifest must be the same in every tool cycle: the first is kept as
    /// `manifests/changed.jsonl`, a different one beside it for inspection.
    fn change_source(&mut self, tc: &ToolCycle) -> Result<bool, Halt> {
        self.check_stop()?;
        let (mut rec, started) = self.start_step(tc, Step::Change)?;
        let (dir, params, seed) = (
            PathBuf::from(&tc.vars.source),
            self.params,
            self.change_seed,
        );
        let result = self.in_process(Step::Change, move |progress| {
            labrun_dataset::apply_change(&dir, &params, seed, progress)
        });
        rec.wall_secs = started.elapsed().as_secs_f64();
        match result {
            InProcess::Done(Ok(manifest)) => {
                rec.ok = true;
                match &self.changed_digest {
                    None => self.changed_digest = Some(self.ev.write_manifest(CHANGED, &manifest)?),
                    Some(first) if *first == Evidence::manifest_digest(&manifest) => {}
                    Some(_) => {
                        let name = format!("{CHANGED}-c{}-{}", tc.cycle, tc.tool.name);
                        self.ev.write_manifest(&name, &manifest)?;
                        rec.ok = false;
                        rec.error = Some(format!(
                            "the change made a different tree than in the first tool cycle (manifests/{CHANGED}.jsonl vs manifests/{name}.jsonl): the dataset change is not deterministic, a bug in labrun"
                        ));
                    }
                }
            }
            InProcess::Done(Err(e)) => {
                rec.error = Some(format!("{} ({})", describe_io(&e), tc.vars.source))
            }
            InProcess::Stopped(signal) => return self.interrupted(&mut rec, signal),
            InProcess::Died => rec.error = Some(LIBRARY_PANIC.into()),
        }
        let ok = rec.ok;
        self.append(&rec)?;
        Ok(ok)
    }

    /// What the verification no longer needs, removed while it runs: the
    /// repository and home, and after the run's last tool cycle the source
    /// and pristine trees too. Hashing is mostly CPU, removing mostly
    /// waiting for the disk; overlapped, the two take less time.
    fn remove_during_verify(&self, tc: &ToolCycle) -> Vec<PathBuf> {
        let mut done_with = vec![PathBuf::from(&tc.vars.repo), PathBuf::from(&tc.vars.work)];
        let last = tc.cycle == self.plan.cycles && tc.order as usize + 1 == self.plan.tools.len();
        if last {
            done_with.push(PathBuf::from(&tc.vars.source));
            done_with.push(self.pristine.clone());
        }
        done_with
    }

    /// Announces an untimed step of a tool cycle; returns its record (tool,
    /// cycle, order, history point filled in) and its start.
    /// The run's own dataset step (no tool, cycle 0): announced, and its
    /// record begun.
    pub(super) fn start_dataset_step(&mut self) -> Result<StepRecord, Halt> {
        self.check_stop()?;
        self.ev.emit(&Event::StepStarted {
            tool: String::new(),
            cycle: 0,
            step: Step::Generate,
        })?;
        Ok(blank_record(&self.plan.run_id, "", 0, Step::Generate))
    }

    pub(super) fn start_step(
        &mut self,
        tc: &ToolCycle,
        step: Step,
    ) -> Result<(StepRecord, Instant), Halt> {
        self.ev.emit(&Event::StepStarted {
            tool: tc.tool.name.clone(),
            cycle: tc.cycle,
            step,
        })?;
        let mut rec = blank_record(&self.plan.run_id, &tc.tool.name, tc.cycle, step);
        rec.order = tc.order;
        rec.history = tc.history.clone();
        Ok((rec, Instant::now()))
    }

    /// Hashes the restored tree and compares it with the changed manifest,
    /// removing what the cycle is done with meanwhile.
    fn verify_restore(&mut self, tc: &ToolCycle) -> Result<bool, Halt> {
        self.check_stop()?;
        let done_with = self.remove_during_verify(tc);
        self.verify_tree(
            tc,
            CHANGED,
            "the restored tree differs from the changed source",
            done_with,
        )
    }

    /// The verify step of a restore: hashes `{target}` and compares it with
    /// the manifest named `manifest`; `differs` opens the error of a
    /// mismatch. The trees in `done_with` are removed on another thread while
    /// it hashes (the caller has checked for a stop request).
    pub(super) fn verify_tree(
        &mut self,
        tc: &ToolCycle,
        manifest: &str,
        differs: &str,
        done_with: Vec<PathBuf>,
    ) -> Result<bool, Halt> {
        let removing = std::thread::Builder::new()
            .name("remove".into())
            .spawn(move || remove_trees(&done_with));
        let (mut rec, started) = self.start_step(tc, Step::Verify)?;
        let manifest_path = self.ev.manifest_path(manifest);
        let target = PathBuf::from(&tc.vars.target);
        // The manifest is read on the worker and freed with it: the agent
        // holds no manifest while a tool runs.
        let result = self.in_process(Step::Verify, move |_| {
            let manifest = std::fs::File::open(&manifest_path)
                .and_then(|f| Manifest::read_from(std::io::BufReader::new(f)))
                .map_err(|e| format!("cannot read {}: {e}", manifest_path.display()))?;
            labrun_dataset::verify(&target, &manifest)
                .map_err(|e| format!("{e} ({})", target.display()))
        });
        rec.wall_secs = started.elapsed().as_secs_f64();
        // Not a failed thread start: then the tool cycle's end removes it all.
        if let Ok(removing) = removing {
            let failed = removing.join().unwrap_or_default();
            self.warn_removal(&failed);
        }
        match result {
            InProcess::Done(Ok(outcome)) => {
                rec.ok = outcome.passed;
                rec.files = Some(outcome.files_checked);
                rec.bytes = Some(outcome.bytes_checked);
                if !outcome.passed {
                    rec.error = Some(format!(
                        "{differs}: {} missing, {} extra, {} changed{}",
                        outcome.missing,
                        outcome.extra,
                        outcome.changed,
                        match outcome.first_differences.first() {
                            Some(d) => format!(" (first: {d})"),
                            None => String::new(),
                        }
                    ));
                }
                rec.verify = Some(outcome);
            }
            InProcess::Done(Err(e)) => rec.error = Some(e),
            InProcess::Stopped(signal) => return self.interrupted(&mut rec, signal),
            InProcess::Died => rec.error = Some(LIBRARY_PANIC.into()),
        }
        let ok = rec.ok;
        self.append(&rec)?;
        Ok(ok)
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

    fn timeout(&self) -> Option<Duration> {
        self.plan.step_timeout_secs.map(Duration::from_secs)
    }

    /// Secret values of `tool` out of the given logs.
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
        }
        Ok(())
    }

    /// Removes a finished tree; a failure only costs disk space, so it is a
    /// warning, not a stop.
    fn remove_tree(&mut self, dir: &Path) {
        let failed = remove_trees(&[dir.to_path_buf()]);
        self.warn_removal(&failed);
    }

    fn warn_removal(&mut self, failed: &[(PathBuf, std::io::Error)]) {
        if let Some((path, e)) = failed.first() {
            let more = match failed.len() - 1 {
                0 => String::new(),
                n => format!(" and {n} more"),
            };
            let _ = self.warn_once(format!(
                "cannot remove {}: {e}{more} (it only costs disk space)",
                path.display()
            ));
        }
    }
}

struct StepOutcome {
    ok: bool,
    /// The snapshot a backup made (its id from `snapshot_id`, or its label).
    snapshot: Option<String>,
}

/// Why a helper command stopped the run (as opposed to failing the step).
enum AuxHalt {
    Signal(i32, &'static str),
    Fatal(RunError),
}

impl From<RunError> for AuxHalt {
    fn from(e: RunError) -> AuxHalt {
        AuxHalt::Fatal(e)
    }
}

const LIBRARY_PANIC: &str =
    "the dataset library panicked (a bug in labrun: please report it with this run's evidence)";

fn fail(rec: &mut StepRecord, why: String) -> Result<(), AuxHalt> {
    rec.ok = false;
    rec.error = Some(why);
    Ok(())
}

fn fill_measurement(rec: &mut StepRecord, m: &Measurement, timeout: Option<u64>, stderr_rel: &str) {
    rec.wall_secs = m.wall_secs;
    rec.user_secs = m.user_secs;
    rec.sys_secs = m.sys_secs;
    rec.max_rss_kib = m.max_rss_kib;
    rec.tree = m.tree.clone();
    rec.exit = Some(m.exit.clone());
    rec.ok = m.succeeded();
    if !rec.ok {
        rec.error = Some(format!("{}; see {stderr_rel}", describe_exit(m, timeout)));
    }
}

fn describe_exit(m: &Measurement, timeout: Option<u64>) -> String {
    if let Some(signal) = m.interrupted_by {
        return format!("interrupted by {}", signal_name(signal));
    }
    if m.timed_out {
        return format!(
            "timed out after {} s (step_timeout_secs): its process group was killed",
            timeout.unwrap_or(0)
        );
    }
    match (m.exit.code, m.exit.signal) {
        (Some(code), _) => format!("exited with code {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => "ended with an unknown status".to_string(),
    }
}

/// `repo_size` output: the first number of the line (so `du -sb {repo}`,
/// which prints "12345<TAB>/path", works as is).
fn parse_size(line: &str) -> Result<u64, String> {
    line.split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("repo_size printed {line:?}, not a number of bytes"))
}

/// `c<cycle>`, or `c<cycle>-s<index>` for a step of a git-history series.
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

    #[test]
    fn repo_size_output() {
        assert_eq!(parse_size("12345\t/w/repo"), Ok(12345));
        assert_eq!(parse_size(" 42 "), Ok(42));
        assert!(parse_size("12 KiB").is_ok());
        assert!(parse_size("about 12").unwrap_err().contains("about 12"));
    }
}
