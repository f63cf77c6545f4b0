//! One tool cycle: the plan's protocol, step by step, as written. The
//! interpreter keeps what the steps tell one another: which tree the source
//! holds now, which snapshot was made of which tree (and its id), and what
//! the last restore put in `{target}`.

use super::{CHANGED, FIXTURE, GENERATED, Halt, Runner, ToolCycle, path_str};
use crate::run::error::RunError;
use labrun_evidence::{ProtocolStep, RunStep};
use std::collections::BTreeMap;
use std::path::PathBuf;

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
    /// Change rounds so far.
    changes: u64,
}

impl<'p> Runner<'p> {
    /// Runs the protocol for one tool; `Ok(false)` at the first step that
    /// failed (the rest would build on it).
    pub(super) fn tool_cycle_steps(&mut self, tc: &ToolCycle) -> Result<bool, Halt> {
        if let labrun_evidence::DatasetPlan::GitHistory { source } = &self.plan.dataset {
            return self.history_steps(tc, source);
        }
        let mut state = CycleState {
            source: GENERATED.to_string(),
            snapshots: BTreeMap::new(),
            restored: None,
            changes: 0,
        };
        let steps = &self.plan.protocol;
        // `fixture` points `{source}` elsewhere for the steps after it.
        let mut tc = tc.clone();
        for (i, step) in steps.iter().enumerate() {
            let tc = &mut tc;
            let ok = match step {
                ProtocolStep::Source => {
                    state.source = GENERATED.to_string();
                    self.prepare_source(tc)?
                }
                ProtocolStep::Change { name } => {
                    state.changes += 1;
                    state.source = Self::changed_manifest(state.changes);
                    self.change_source(tc, name, state.changes)?
                }
                ProtocolStep::Fixture => {
                    let dir = tc.base.join("fixture");
                    state.source = FIXTURE.to_string();
                    let ok = self.write_fixture(tc, &dir)?;
                    tc.vars.source = path_str(&dir);
                    ok
                }
                ProtocolStep::Verify { name } => {
                    self.check_stop()?;
                    let Some(manifest) = state.restored.take() else {
                        // The plan check refuses this order.
                        return Err(Halt::Fatal(RunError::Dataset {
                            phase: "verification",
                            message: format!("step {name} has no restore before it"),
                        }));
                    };
                    let done_with = self.done_with_after(tc, &steps[i + 1..]);
                    let differs = match manifest.as_str() {
                        GENERATED => "the restored tree differs from the generated source",
                        FIXTURE => "the restored fidelity fixture differs from the one written",
                        CHANGED => "the restored tree differs from the changed source",
                        _ => "the restored tree differs from the changed source of its snapshot",
                    };
                    self.verify_tree(tc, name, &manifest, differs, done_with)?
                }
                ProtocolStep::Run(r) => {
                    if r.optional && !tc.tool.commands.contains_key(&r.command) {
                        continue;
                    }
                    self.run_step(tc, r, &mut state)?
                }
            };
            if !ok {
                return Ok(false);
            }
        }
        Ok(true)
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
            self.empty_target(tc)?;
            state.restored = state.snapshots.get(label).map(|s| s.tree.clone());
        }
        let outcome = self.tool_step(tc, r, snapshot.as_deref())?;
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

    /// `{target}` empty before a restore (a second restore of the cycle
    /// finds the first one's tree there).
    fn empty_target(&mut self, tc: &ToolCycle) -> Result<(), Halt> {
        let target = PathBuf::from(&tc.vars.target);
        let nonempty = std::fs::read_dir(&target).map(|mut d| d.next().is_some());
        if matches!(nonempty, Ok(true)) {
            self.remove_tree(&target);
            std::fs::create_dir_all(&target)
                .map_err(|e| RunError::io("cannot empty the restore target", &target, e))?;
        }
        Ok(())
    }

    /// What a verify may remove while it hashes, given the steps after it:
    /// the repository and home when no tool step follows, and after the
    /// run's last tool cycle the source and pristine trees too.
    fn done_with_after(&self, tc: &ToolCycle, rest: &[ProtocolStep]) -> Vec<PathBuf> {
        let uses_trees = rest
            .iter()
            .any(|s| !matches!(s, ProtocolStep::Verify { .. }));
        if uses_trees {
            return Vec::new();
        }
        let mut done_with = vec![PathBuf::from(&tc.vars.repo), PathBuf::from(&tc.vars.work)];
        let last = tc.cycle == self.plan.cycles && tc.order as usize + 1 == self.plan.tools.len();
        if last {
            done_with.push(PathBuf::from(&tc.vars.source));
            done_with.push(self.pristine.clone());
        }
        done_with
    }
}
