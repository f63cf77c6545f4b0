//! One tool cycle: the plan's protocol, step by step, as written. The
//! interpreter keeps what the steps tell one another: which tree the source
//! holds now, which snapshot was made of which tree (and its id), what the
//! last restore put in `{target}`, and where a git history's series is.

use super::history::{self, Series, commit_manifest};
use super::services::Services;
use super::source_tree::{self, changed_manifest};
use super::tally::Tally;
use super::tool_step::Commands;
use super::workspace::remove_tree;
use super::{FIXTURE, GENERATED, Halt, Runner, ToolCycle, path_str};
use super::{restore_over, verify_step};
use crate::run::error::RunError;
use labrun_evidence::{EachCommit, ProtocolStep, RunStep};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A snapshot a step made.
struct Snapshot {
    /// What `{snapshot}` stands for in later steps: the id `snapshot_id`
    /// printed, else the label.
    id: String,
    /// The manifest of the tree it was made of.
    tree: String,
}

/// What the steps of one tool cycle so far have left.
struct CycleState {
    /// The manifest the source tree matches now.
    source: String,
    snapshots: BTreeMap<String, Snapshot>,
    /// The manifest of what the last restore put in `{target}`.
    restored: Option<String>,
    /// The last restore went over an older snapshot's tree (`over:`).
    restored_over: bool,
    /// Change rounds so far.
    changes: u64,
    /// A git history's series (opened at the first `commit`) and the commit
    /// its tree is at (0: none yet). `None` after its thread died.
    series: Option<Series>,
    at_commit: u32,
}

/// Whether steps that use the trees follow: what a `verify` may remove.
#[derive(Clone, Copy)]
struct Later(bool);

impl<'p> Runner<'p> {
    /// Runs the protocol for one tool; `Ok(false)` when a step failed.
    pub(super) fn tool_cycle_steps(&mut self, tc: &ToolCycle) -> Result<bool, Halt> {
        let mut state = CycleState {
            source: GENERATED.to_string(),
            snapshots: BTreeMap::new(),
            restored: None,
            restored_over: false,
            changes: 0,
            series: None,
            at_commit: 0,
        };
        self.tally.start_cycle();
        let steps = &self.ctx.plan.protocol;
        // `fixture` points `{source}` elsewhere for the steps after it.
        let mut tc = tc.clone();
        for (i, step) in steps.iter().enumerate() {
            let later = Later(uses_trees(&steps[i + 1..]));
            let ok = match step {
                ProtocolStep::EachCommit(block) => {
                    self.each_commit(&mut tc, block, &mut state, later)?
                }
                _ => {
                    tc.history = state.series.as_ref().and_then(|s| s.point(state.at_commit));
                    self.one_step(&mut tc, step, &mut state, later)?
                }
            };
            if !ok {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// A block, once per commit from its `from` to the series' last. A
    /// failed step ends the tool cycle, except in a block that makes
    /// nothing later rounds build on (no `commit`, no `makes:`, e.g. the
    /// restores of every snapshot): there it ends its round only.
    fn each_commit(
        &mut self,
        tc: &mut ToolCycle,
        block: &EachCommit,
        state: &mut CycleState,
        later: Later,
    ) -> Result<bool, Halt> {
        let Some(last) = self.series_len(tc, state)? else {
            return Ok(false);
        };
        let builds_on = block
            .steps
            .iter()
            .any(|s| *s == ProtocolStep::Commit || s.as_run().is_some_and(|r| r.makes.is_some()));
        let mut all_ok = true;
        for k in block.from..=last {
            tc.history = state.series.as_ref().and_then(|s| s.point(k));
            for (j, step) in block.steps.iter().enumerate() {
                let later = Later(later.0 || k < last || uses_trees(&block.steps[j + 1..]));
                let ok = match step {
                    ProtocolStep::Run(r) => {
                        self.one_step(tc, &ProtocolStep::Run(r.at_commit(k)), state, later)?
                    }
                    _ => self.one_step(tc, step, state, later)?,
                };
                if !ok && builds_on {
                    return Ok(false);
                }
                if !ok {
                    all_ok = false;
                    break;
                }
            }
        }
        Ok(all_ok)
    }

    fn one_step(
        &mut self,
        tc: &mut ToolCycle,
        step: &ProtocolStep,
        state: &mut CycleState,
        later: Later,
    ) -> Result<bool, Halt> {
        Ok(match step {
            ProtocolStep::Source => {
                state.source = GENERATED.to_string();
                source_tree::prepare_source(
                    &self.ctx,
                    &mut self.ws,
                    &mut self.tally,
                    &mut self.svc,
                    tc,
                )?
            }
            ProtocolStep::Change { name } => {
                state.changes += 1;
                state.source = changed_manifest(state.changes);
                source_tree::change_source(
                    &self.ctx,
                    &mut self.ws,
                    &mut self.tally,
                    tc,
                    name,
                    state.changes,
                )?
            }
            ProtocolStep::Fixture => {
                let dir = tc.base.join("fixture");
                state.source = FIXTURE.to_string();
                let ok =
                    source_tree::write_fixture(&self.ctx, &mut self.ws, &mut self.tally, tc, &dir)?;
                tc.vars.source = path_str(&dir);
                ok
            }
            ProtocolStep::Commit => self.next_commit(tc, state)?,
            ProtocolStep::Verify { name } => {
                self.ctx.check_stop()?;
                let Some(manifest) = state.restored.take() else {
                    // The plan check refuses this order.
                    return Err(Halt::Fatal(RunError::Dataset {
                        phase: "verification",
                        message: format!("step {name} has no restore before it"),
                    }));
                };
                let done_with = if later.0 {
                    Vec::new()
                } else {
                    self.done_with(tc)
                };
                if done_with.contains(&PathBuf::from(&tc.vars.source)) {
                    // It is being removed: the tool cycle's end must not
                    // keep it for a next one.
                    self.ws.source_reusable = false;
                }
                let over = std::mem::take(&mut state.restored_over);
                // Beside the hashing, and on until the next timed step
                // needs the disk.
                self.svc.remove_in_background(done_with, &mut self.tally);
                verify_step::verify_tree(
                    &self.ctx,
                    &self.ws,
                    &mut self.tally,
                    tc,
                    name,
                    &manifest,
                    over,
                )?
            }
            ProtocolStep::Run(r) => {
                if r.optional && !tc.tool.commands.contains_key(&r.command) {
                    return Ok(true);
                }
                // A failure it may have is recorded, and ends nothing.
                self.run_step(tc, r, state)? || r.may_fail
            }
            // The plan check refuses a block in a block.
            ProtocolStep::EachCommit(_) => {
                return Err(Halt::Fatal(RunError::Dataset {
                    phase: "protocol",
                    message: "`each_commit:` blocks do not nest".into(),
                }));
            }
        })
    }

    /// The steps that run a tool's command, with the parts they use.
    fn commands(&mut self) -> Commands<'_, 'p> {
        Commands {
            ctx: &self.ctx,
            ws: &self.ws,
            tally: &mut self.tally,
            svc: &mut self.svc,
        }
    }

    fn run_step(
        &mut self,
        tc: &ToolCycle,
        r: &RunStep,
        state: &mut CycleState,
    ) -> Result<bool, Halt> {
        let snapshot = match (&r.makes, r.restores.as_ref().or(r.snapshot.as_ref())) {
            (Some(label), _) => Some(label.clone()),
            (None, Some(label)) => Some(
                state
                    .snapshots
                    .get(label)
                    .map_or_else(|| label.clone(), |s| s.id.clone()),
            ),
            (None, None) => None,
        };
        if let Some(label) = &r.restores {
            empty_target(Path::new(&tc.vars.target), &mut self.svc, &mut self.tally)?;
            state.restored = state.snapshots.get(label).map(|s| s.tree.clone());
            state.restored_over = r.over.is_some();
            if let Some(older) = &r.over {
                let tree = state.snapshots.get(older).map(|s| s.tree.clone());
                if !restore_over::fill_target_over(
                    &mut self.commands(),
                    tc,
                    r,
                    older,
                    tree.as_deref(),
                )? {
                    return Ok(false);
                }
            }
        }
        let outcome = self.commands().tool_step(tc, r, snapshot.as_deref())?;
        if let (true, false, Some(label)) = (outcome.ok, outcome.killed, &r.makes) {
            let id = outcome.snapshot.unwrap_or_else(|| label.clone());
            state.snapshots.insert(
                label.clone(),
                Snapshot {
                    id,
                    tree: state.source.clone(),
                },
            );
        }
        Ok(outcome.ok)
    }

    /// `commit`: the tree moved to the series' next commit.
    fn next_commit(&mut self, tc: &ToolCycle, state: &mut CycleState) -> Result<bool, Halt> {
        if self.series_len(tc, state)?.is_none() {
            return Ok(false);
        }
        let Some(series) = state.series.take() else {
            return Ok(false);
        };
        let k = state.at_commit + 1;
        let at = ToolCycle {
            history: series.point(k),
            ..tc.clone()
        };
        let (ok, back) =
            history::move_tree(&self.ctx, &mut self.ws, &mut self.tally, &at, series, k)?;
        state.series = back;
        if ok {
            state.at_commit = k;
            state.source = commit_manifest(k);
        }
        Ok(ok)
    }

    /// The number of commits of the series, opening it at first use;
    /// `None` when it cannot be opened (the record says why).
    fn series_len(&mut self, tc: &ToolCycle, state: &mut CycleState) -> Result<Option<u32>, Halt> {
        if state.series.is_none() && state.at_commit == 0 {
            state.series = history::open_series(&self.ctx, &self.ws.root, &mut self.tally, tc)?;
        }
        Ok(state.series.as_ref().map(Series::len))
    }

    /// What the last verify of a tool cycle may remove while it hashes: the
    /// repository and home, and after the plan's last tool cycle the source
    /// and pristine trees too (the pristine one unless a later round keeps
    /// it).
    fn done_with(&self, tc: &ToolCycle) -> Vec<PathBuf> {
        let mut done_with = vec![
            PathBuf::from(&tc.vars.location.path),
            PathBuf::from(&tc.vars.work),
        ];
        let plan = self.ctx.plan;
        let last =
            tc.cycle == *plan.cycle_numbers().end() && tc.order as usize + 1 == plan.tools.len();
        if last {
            done_with.push(PathBuf::from(&tc.vars.source));
            if !self.svc.keeps_dataset(plan) && self.ws.pristine_is_ours {
                done_with.push(self.ws.pristine.clone());
            }
        }
        done_with
    }
}

/// `{target}` empty before a restore (a second restore of the cycle
/// finds the first one's tree there). The old tree is moved aside and
/// removed in the background: removing a whole restore took 6-15 s of
/// an emulated guest's time at scale 0.1, between the published cycle
/// and the fixture's restore. A timed restore still waits for it before
/// its cache drop.
fn empty_target(target: &Path, svc: &mut Services, tally: &mut Tally) -> Result<(), Halt> {
    let nonempty = std::fs::read_dir(target).map(|mut d| d.next().is_some());
    if matches!(nonempty, Ok(true)) {
        let aside = target.with_file_name(format!(
            "{}.emptied-{}",
            target
                .file_name()
                .map_or_else(|| "target".into(), |n| n.to_string_lossy()),
            crate::run::evidence::unix_ms_now()
        ));
        match std::fs::rename(target, &aside) {
            Ok(()) => svc.remove_in_background(vec![aside], tally),
            // Elsewhere than beside it (a mount point, say): here and now.
            Err(_) => remove_tree(target, tally),
        }
        std::fs::create_dir_all(target)
            .map_err(|e| RunError::io("cannot empty the restore target", target, e))?;
    }
    Ok(())
}

/// Whether any of `rest` uses the trees (anything but a `verify`).
fn uses_trees(rest: &[ProtocolStep]) -> bool {
    rest.iter()
        .any(|s| !matches!(s, ProtocolStep::Verify { .. }))
}
