//! A step that runs one of the tool's commands: measured (and timed where
//! the protocol says so), its logs scrubbed of secrets, then the helper
//! commands that follow it (snapshot id, repository size).

use super::context::Context;
use super::services::Services;
use super::tally::Tally;
use super::workspace::Workspace;
use super::{Halt, ToolCycle, log_prefix};
use crate::run::cache::{CacheDrop, drop_page_cache};
use crate::run::env::{from_process, tool_env};
use crate::run::error::RunError;
use crate::run::evidence::unix_ms_now;
use crate::run::flush::flush;
use crate::run::interrupt::signal_name;
use crate::run::measure::{CommandSpec, Measurement, TreeSpec};
use crate::run::placeholders::{Vars, resolve};
use crate::run::repo_size::allocated_bytes;
use labrun_evidence::command::roles;
use labrun_evidence::protocol::KillPoint;
use labrun_evidence::record::{KillFraction, PlannedKill};
use labrun_evidence::{CommandTemplate, Event, RunStep, Step, StepRecord};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What a step that runs a command uses: the run's handles, the work
/// folder read only (where to trim, which paths to hash in logs), the
/// tally, and the services (cgroups, background work to settle, versions
/// to collect first).
pub(super) struct Commands<'a, 'p> {
    pub ctx: &'a Context<'p>,
    pub ws: &'a Workspace,
    pub tally: &'a mut Tally,
    pub svc: &'a mut Services,
}

impl Commands<'_, '_> {
    /// A step that runs the tool's command `r.command` with `{snapshot}` =
    /// `snapshot` (a label, or the id a `snapshot_id` gave it); after it,
    /// the id of the snapshot it made and the repository size, where the
    /// step asks for them.
    pub(super) fn tool_step(
        &mut self,
        tc: &ToolCycle,
        r: &RunStep,
        snapshot: Option<&str>,
    ) -> Result<StepOutcome, Halt> {
        let Some(template) = tc.tool.commands.get(&r.command) else {
            // The plan check refuses this; a record says so should it pass.
            let mut rec = self.tally.blank(tc, r.name.clone());
            rec.error = Some(format!("{} has no command `{}`", tc.tool.name, r.command));
            self.tally.append(&rec)?;
            return Ok(StepOutcome {
                ok: false,
                snapshot: None,
                killed: false,
            });
        };
        let vars = Vars {
            snapshot: snapshot.unwrap_or_default().to_string(),
            ..tc.vars.clone()
        };
        let (argv, cwd) = resolve(template, &vars);
        let env = tool_env(&tc.tool.env, &vars, from_process);
        let mut rec = self.measured_step(tc, r, argv, cwd, &env)?;
        rec.snapshot = snapshot.map(str::to_string);
        // A backup killed on purpose made no snapshot to ask the id of.
        let killed = rec.planned_kill.as_ref().is_some_and(|k| k.killed);
        if rec.ok && rec.timed && !killed {
            self.flush_written(r, &vars, &mut rec)?;
        }
        let mut made = None;
        let step = r.name.clone();
        let ok = self.finish_tool_record(rec, |runner, rec| {
            if r.makes.is_some() && !killed {
                if let Some(pattern) = &tc.tool.snapshot_id_pattern {
                    match snapshot_id_from_output(pattern, rec, &runner.tally.ev) {
                        Ok(id) => rec.snapshot = Some(id),
                        Err(why) => return fail(rec, why),
                    }
                } else if let Some(t) = tc.tool.commands.get(roles::SNAPSHOT_ID) {
                    match runner.aux_command(tc, &step, roles::SNAPSHOT_ID, t, &vars, &env)? {
                        Ok(id) => rec.snapshot = Some(id),
                        Err(why) => return fail(rec, why),
                    }
                }
                made = rec.snapshot.clone();
            }
            if r.repo_size {
                let size = match tc.tool.commands.get(roles::REPO_SIZE) {
                    Some(t) => runner
                        .aux_command(tc, &step, roles::REPO_SIZE, t, &vars, &env)?
                        .and_then(|out| parse_size(&out)),
                    // The folder, wherever the tool reaches it from: a
                    // server's disk is this machine's.
                    None => allocated_bytes(Path::new(&vars.location.path)).map_err(|e| {
                        format!(
                            "cannot measure the repository size of {}: {e}",
                            vars.location.path
                        )
                    }),
                };
                match size {
                    Ok(bytes) => rec.repo_size_bytes = Some(bytes),
                    Err(why) => return fail(rec, why),
                }
            }
            Ok(())
        })?;
        Ok(StepOutcome {
            ok,
            snapshot: made,
            killed,
        })
    }

    /// After a timed step that wrote, the flush of the file system it wrote
    /// (the repository's after a backup, the target's after a restore)
    /// goes in its record. A flush that fails is a warning: the step's own
    /// figures stand.
    fn flush_written(
        &mut self,
        r: &RunStep,
        vars: &Vars,
        rec: &mut StepRecord,
    ) -> Result<(), Halt> {
        let wrote = if r.makes.is_some() {
            &vars.location.path
        } else if r.restores.is_some() {
            &vars.target
        } else {
            return Ok(());
        };
        // A repository only a server reaches has no folder here to flush.
        if wrote.is_empty() {
            return Ok(());
        }
        match flush(Path::new(wrote)) {
            Ok(f) => rec.flush = Some(f),
            Err(why) => self.tally.warn_once(format!(
                "{why}: the step's durable time is not measured (its wall time is)"
            ))?,
        }
        Ok(())
    }

    /// Runs one command of a tool cycle and fills a record with what it cost.
    /// A signal during it writes the record and stops the run.
    /// `how` says whether it is timed, whether the cache is dropped first,
    /// and when it is killed on purpose.
    pub(super) fn measured_step(
        &mut self,
        tc: &ToolCycle,
        how: &RunStep,
        argv: Vec<String>,
        cwd: PathBuf,
        env: &std::collections::BTreeMap<String, String>,
    ) -> Result<StepRecord, Halt> {
        self.ctx.check_stop()?;
        let step = how.name.clone();
        let timed = how.timed;
        self.tally.ev.emit(&Event::StepStarted {
            tool: tc.tool.name.clone(),
            cycle: tc.cycle,
            step: step.clone(),
        })?;
        // Nothing of the harness's may still use the disk when a timed step
        // starts, nor fill the cache again after it was dropped.
        if timed || how.drop_cache {
            self.svc.collect_versions(self.tally)?;
            self.svc.settle_background(self.tally)?;
        }
        let plan = self.ctx.plan;
        let cache_dropped = how.drop_cache && plan.drop_caches && self.drop_cache()?;
        // The blocks the step before freed go back to the disk now, not
        // during this step; then the lab's cool-down.
        let trim = (cache_dropped && plan.trim)
            .then(|| self.trim())
            .transpose()?;
        let cooldown_secs = plan.cooldown_secs.filter(|_| timed);
        if let Some(secs) = cooldown_secs {
            self.ctx.cool_down(Duration::from_secs(secs))?;
        }
        let logs = self
            .tally
            .ev
            .log_paths(&tc.tool.name, &format!("{}-{step}", log_prefix(tc)))?;
        let mut rec = self.tally.blank(tc, step.clone());
        rec.history = tc.history.clone();
        rec.timed = timed;
        rec.cache_dropped = cache_dropped;
        rec.trim = trim;
        rec.cooldown_secs = cooldown_secs;
        rec.stdout_path = Some(logs.stdout_rel.clone());
        rec.stderr_path = Some(logs.stderr_rel.clone());
        rec.started_unix_ms = unix_ms_now();
        let label = format!("{}-{step}", log_prefix(tc));
        let tree = timed.then(|| TreeSpec {
            cgroup: self
                .svc
                .cgroups
                .for_step(&format!("{}-{label}", tc.tool.name)),
            timeline: Some(logs.stdout.with_extension("timeline.jsonl")),
            timeline_rel: Some(format!(
                "{}.timeline.jsonl",
                logs.stdout_rel.trim_end_matches(".out")
            )),
        });
        // A planned kill is the watchdog set early; the step's own timeout
        // stays the limit when it comes first.
        rec.may_fail = how.may_fail;
        let planned = match self.kill_point(how) {
            Ok(p) => p,
            Err(why) => {
                rec.error = Some(why);
                return Ok(rec);
            }
        };
        let kill = planned
            .as_ref()
            .map(|p| Duration::from_secs_f64(p.after_secs))
            .filter(|k| self.ctx.timeout().is_none_or(|limit| *k < limit));
        let spec = CommandSpec {
            argv: &argv,
            cwd: &cwd,
            env,
            stdout: &logs.stdout,
            stderr: &logs.stderr,
            timeout: kill.or(self.ctx.timeout()),
            tree,
        };
        let result = self.ctx.executor.run(&spec, &self.ctx.interrupt);
        rec.argv = argv;
        self.ws.scrub(tc.tool, &[&logs.stdout, &logs.stderr])?;
        match result {
            Ok(m) if kill.is_some() && m.timed_out && m.interrupted_by.is_none() => {
                fill_measurement(&mut rec, &m, plan.step_timeout_secs, &logs.stderr_rel);
                // Killed where the protocol said: the step did its job.
                rec.ok = true;
                rec.error = None;
                rec.planned_kill = planned.map(|p| PlannedKill { killed: true, ..p });
            }
            Ok(m) => {
                fill_measurement(&mut rec, &m, plan.step_timeout_secs, &logs.stderr_rel);
                rec.planned_kill = planned;
                if let Some(signal) = m.interrupted_by {
                    return self.tally.interrupted(&mut rec, signal);
                }
            }
            Err(e) => rec.error = Some(e.to_string()),
        }
        Ok(rec)
    }

    /// Where the protocol kills this step, if it does: seconds, or a
    /// fraction of an earlier step's wall time in this tool cycle.
    fn kill_point(&self, how: &RunStep) -> Result<Option<PlannedKill>, String> {
        Ok(match &how.kill {
            None => None,
            Some(KillPoint::AfterSecs(secs)) => Some(PlannedKill {
                after_secs: *secs,
                killed: false,
                fraction_of: None,
            }),
            Some(KillPoint::FractionOf { fraction, step }) => {
                let Some(wall) = self.tally.wall_of(step) else {
                    return Err(format!(
                        "cannot place the kill at {fraction} of {step}'s time: {step} did not succeed in this tool cycle"
                    ));
                };
                Some(PlannedKill {
                    after_secs: (fraction * wall).max(0.001),
                    killed: false,
                    fraction_of: Some(KillFraction {
                        step: step.clone(),
                        fraction: *fraction,
                        step_wall_secs: wall,
                    }),
                })
            }
        })
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
                    self.tally.append(&rec)?;
                    return Err(Halt::Signal(signal));
                }
                Err(AuxHalt::Fatal(e)) => {
                    rec.ok = false;
                    rec.error = Some(e.to_string());
                    self.tally.append(&rec)?;
                    return Err(Halt::Fatal(e));
                }
            }
        }
        let ok = rec.ok;
        self.tally.append(&rec)?;
        Ok(ok)
    }

    /// A helper command (`snapshot_id`, `repo_size`): untimed, logged beside
    /// its step; gives its last non-empty stdout line.
    fn aux_command(
        &mut self,
        tc: &ToolCycle,
        step: &Step,
        name: &'static str,
        template: &CommandTemplate,
        vars: &Vars,
        env: &std::collections::BTreeMap<String, String>,
    ) -> Result<Result<String, String>, AuxHalt> {
        let (argv, cwd) = resolve(template, vars);
        let logs = self
            .tally
            .ev
            .log_paths(&tc.tool.name, &format!("{}-{step}.{name}", log_prefix(tc)))
            .map_err(AuxHalt::Fatal)?;
        let spec = CommandSpec {
            argv: &argv,
            cwd: &cwd,
            env,
            stdout: &logs.stdout,
            stderr: &logs.stderr,
            timeout: self.ctx.timeout(),
            // A cgroup, not for figures: what a helper starts (duplicity's
            // `collection-status` starts a gpg-agent) must not outlive it.
            tree: Some(TreeSpec {
                cgroup: self.svc.cgroups.for_step(&format!(
                    "{}-{}-{step}.{name}",
                    tc.tool.name,
                    log_prefix(tc)
                )),
                timeline: None,
                timeline_rel: None,
            }),
        };
        let result = self.ctx.executor.run(&spec, &self.ctx.interrupt);
        if let Ok(m) = &result
            && let Some(t) = m.tree.as_ref().filter(|t| !t.leftovers.is_empty())
        {
            let _ = self.tally.warn_once(format!(
                "{} `{name}` left processes running; they were killed: {}",
                tc.tool.name,
                t.leftovers.join(", ")
            ));
        }
        self.ws
            .scrub(tc.tool, &[&logs.stdout, &logs.stderr])
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
                describe_exit(&m, self.ctx.plan.step_timeout_secs),
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

    /// Cold cache before a timed step; warns (once per reason) when it
    /// could not be done. Returns whether it was.
    fn drop_cache(&mut self) -> Result<bool, Halt> {
        let outcome = drop_page_cache();
        if let CacheDrop::NotDropped(why) = &outcome {
            self.tally.warn_once(why.clone())?;
        }
        Ok(outcome.dropped())
    }

    /// `fstrim` of the file system the run works on, as the record keeps
    /// it; a failure is warned about once, never a reason to stop.
    fn trim(&mut self) -> Result<labrun_evidence::record::Trim, Halt> {
        use labrun_evidence::record::TrimOutcome;
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
        let mount = crate::run::settle::mount_of(&self.ws.root, &mounts);
        let trim = crate::run::settle::outcome(&mount, self.ctx.executor.fstrim(&mount));
        if let TrimOutcome::Failed { reason } | TrimOutcome::NotRun { reason } = &trim.outcome {
            self.tally.warn_once(format!(
                "the work file system {} was not trimmed before timed steps: {reason}",
                trim.mount
            ))?;
        }
        Ok(trim)
    }
}

pub(super) struct StepOutcome {
    pub ok: bool,
    /// The snapshot a backup made (its id from `snapshot_id`, or its label).
    pub snapshot: Option<String>,
    /// Killed where the protocol said (`kill_after_secs`): it made nothing.
    pub killed: bool,
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
    // Recorded even when the tool survived the kill of one of its helpers.
    rec.oom = m.oom.clone();
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
    if let Some(oom) = &m.oom {
        return format!(
            "killed by the kernel's OOM killer ({}): give the VM more memory or lower the scale",
            oom.describe()
        );
    }
    match (m.exit.code, m.exit.signal) {
        (Some(code), _) => format!("exited with code {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => "ended with an unknown status".to_string(),
    }
}

/// The id `pattern` finds in the step's own logs (stdout, then stderr):
/// no second run of the tool.
fn snapshot_id_from_output(
    pattern: &str,
    rec: &StepRecord,
    ev: &crate::run::evidence::Evidence,
) -> Result<String, String> {
    let re = labrun_evidence::snapshot_id::compile(pattern)
        .map_err(|why| format!("snapshot_id_pattern `{pattern}`: {why}"))?;
    let logs = [&rec.stdout_path, &rec.stderr_path];
    let texts: Vec<String> = logs
        .iter()
        .filter_map(|p| p.as_ref())
        .map(|rel| std::fs::read_to_string(ev.path_of(rel)).unwrap_or_default())
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    labrun_evidence::snapshot_id::find(&re, &refs)
        .map(str::to_string)
        .ok_or_else(|| {
            format!(
                "the backup's output has no snapshot id: snapshot_id_pattern `{pattern}` matched nothing in {}",
                logs.iter()
                    .filter_map(|p| p.as_deref())
                    .collect::<Vec<_>>()
                    .join(" or ")
            )
        })
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
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_size_output() {
        assert_eq!(parse_size("12345\t/w/repo"), Ok(12345));
        assert_eq!(parse_size(" 42 "), Ok(42));
        assert!(parse_size("12 KiB").is_ok());
        assert!(parse_size("about 12").unwrap_err().contains("about 12"));
    }
}
