//! The trees a tool cycle backs up: the run's generated dataset, each tool
//! cycle's pristine copy of it (a copy, or the previous tool cycle's tree
//! reset), and the seeded change. The agent's own work: untimed, recorded.

use super::real_tree::RealTree;
use super::{
    CHANGED, FIXTURE, GENERATED, Halt, LIBRARY_PANIC, Runner, ToolCycle, file_count, path_str,
};
use crate::run::env::{from_process, tool_env};
use crate::run::error::{RunError, describe_io};
use crate::run::interrupt::InProcess;
use crate::run::reset::reset_tree;
use labrun_evidence::{DatasetPlan, RunStep, Step, StepRecord};
use std::path::{Path, PathBuf};
use std::time::Instant;

impl<'p> Runner<'p> {
    /// The dataset, once per run. Without it nothing can run: failure is fatal.
    pub(super) fn generate_pristine(&mut self) -> Result<(), Halt> {
        if let DatasetPlan::GitHistory { source } = &self.plan.dataset {
            return self.prepare_history(source);
        }
        if let DatasetPlan::Tree(tree) = &self.plan.dataset {
            return self.prepare_real_tree(tree);
        }
        let mut rec = self.start_dataset_step()?;
        let started = Instant::now();
        if self.take_kept_dataset(&mut rec, started)? {
            return Ok(());
        }
        let (out, params) = (self.pristine.clone(), self.params);
        // The manifest goes to the evidence as the tree is written: the
        // tiny-files tree's million entries are never held (issue 31).
        let manifest = self.ev.manifest_path(GENERATED);
        let result = self.in_process(Step::GENERATE, move |progress| {
            labrun_dataset::generate_to_file(&out, &params, &manifest, progress)
        });
        rec.wall_secs = started.elapsed().as_secs_f64();
        match result {
            InProcess::Done(Ok(written)) => {
                rec.files = Some(written.files);
                rec.bytes = Some(written.file_bytes);
                rec.ok = true;
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

    /// An earlier round's dataset of the same parameters, moved in from the
    /// store (an interleaved run: [`crate::run::dataset_store`]) and
    /// recorded as this run's `generate` step, its argv saying where it came
    /// from. False when there is none: it is generated then.
    fn take_kept_dataset(&mut self, rec: &mut StepRecord, started: Instant) -> Result<bool, Halt> {
        let Some(store) = &self.datasets else {
            return Ok(false);
        };
        let manifest_file = self.ev.manifest_path(GENERATED);
        let Some(taken) = store.take(&self.params, &self.pristine, &manifest_file) else {
            return Ok(false);
        };
        let (files, bytes) = self.ev.count_manifest(GENERATED)?;
        rec.argv = vec![
            "mv".to_string(),
            path_str(&taken.from),
            path_str(&self.pristine),
        ];
        rec.wall_secs = started.elapsed().as_secs_f64();
        rec.files = Some(files);
        rec.bytes = Some(bytes);
        rec.ok = true;
        self.append(rec)?;
        Ok(true)
    }

    /// After the run: its dataset moved into the store when its round says
    /// a later round wants it. A failure only costs that round a new
    /// generation: a warning.
    pub(super) fn keep_dataset(&mut self) -> Result<(), Halt> {
        let Some(store) = self.datasets.as_ref().filter(|_| self.keeps_dataset()) else {
            return Ok(());
        };
        if !self.pristine.is_dir() {
            return Ok(());
        }
        let manifest_file = self.ev.manifest_path(GENERATED);
        if let Err(e) = store.keep(&self.params, &self.pristine, &manifest_file) {
            self.warn_once(format!(
                "the dataset could not be kept for the next round ({e}): that round generates it again"
            ))?;
        }
        Ok(())
    }

    /// Whether this run's dataset goes into the store at its end.
    pub(super) fn keeps_dataset(&self) -> bool {
        self.datasets.is_some()
            && self.plan.round.as_ref().is_some_and(|r| r.keep_dataset)
            && matches!(self.plan.dataset, DatasetPlan::Synthetic { .. })
    }

    /// A pristine source tree for this tool cycle, recorded as an untimed
    /// `generate` step of the tool and cycle: the previous tool cycle's,
    /// reset, or else a copy of the generated one.
    pub(super) fn prepare_source(&mut self, tc: &ToolCycle) -> Result<bool, Halt> {
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
        // Measured as a command, as a tool step is; untimed, cache kept.
        let how = RunStep {
            timed: false,
            drop_cache: false,
            repo_size: false,
            ..RunStep::new(Step::GENERATE, "cp")
        };
        let rec = self.measured_step(tc, &how, argv, PathBuf::from(&tc.vars.work), &env)?;
        let ok = rec.ok;
        self.append(&rec)?;
        self.source_reusable = ok;
        Ok(ok)
    }

    /// The previous tool cycle's source tree, made pristine again in place.
    fn reset_source(&mut self, tc: &ToolCycle) -> Result<bool, Halt> {
        self.check_stop()?;
        let (mut rec, started) = self.start_step(tc, Step::GENERATE)?;
        let (pristine, source, params) = (
            self.pristine.clone(),
            PathBuf::from(&tc.vars.source),
            self.params,
        );
        // What every change round of the protocol touched goes back.
        let seeds: Vec<u64> = (1..=self.change_rounds())
            .map(|round| self.change_seed_of(round))
            .collect();
        let real = match self.real_tree.as_ref().map(RealTree::touched).transpose() {
            Ok(real) => real,
            Err(e) => {
                rec.error = Some(format!(
                    "cannot read the change's plan to reset the source tree: {}",
                    describe_io(&e)
                ));
                self.source_reusable = false;
                self.append(&rec)?;
                return Ok(false);
            }
        };
        let result = self.in_process(Step::GENERATE, move |_| {
            let mut total = crate::run::reset::ResetStats::default();
            if let Some(touched) = real {
                return reset_tree(&pristine, &source, &touched);
            }
            for seed in seeds {
                let touched = labrun_dataset::change_plan(&params, seed);
                let stats = reset_tree(&pristine, &source, &touched)?;
                total.entries_written += stats.entries_written;
                total.bytes_written += stats.bytes_written;
                total.entries_removed += stats.entries_removed;
            }
            Ok::<_, std::io::Error>(total)
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

    /// The protocol's change rounds (`change` steps) per tool cycle.
    fn change_rounds(&self) -> u64 {
        labrun_evidence::protocol::flat(&self.plan.protocol)
            .filter(|s| matches!(s, labrun_evidence::ProtocolStep::Change { .. }))
            .count() as u64
    }

    /// Round 1 is the published change (`change_seed`), round k uses
    /// `change_seed + k - 1`.
    fn change_seed_of(&self, round: u64) -> u64 {
        self.change_seed.wrapping_add(round.saturating_sub(1))
    }

    /// The manifest of the tree after change round `round`:
    /// `changed` (the published one), then `changed-2`, `changed-3`...
    pub(super) fn changed_manifest(round: u64) -> String {
        match round {
            1 => CHANGED.to_string(),
            k => format!("{CHANGED}-{k}"),
        }
    }

    /// A 5% change on this tool cycle's source tree (untimed), round
    /// `round` of the protocol. Its manifest must be the same in every tool
    /// cycle: the first is kept as `manifests/changed[-k].jsonl`, a
    /// different one beside it for inspection.
    pub(super) fn change_source(
        &mut self,
        tc: &ToolCycle,
        name: &Step,
        round: u64,
    ) -> Result<bool, Halt> {
        self.check_stop()?;
        let (mut rec, started) = self.start_step(tc, name.clone())?;
        let (dir, params, seed) = (
            PathBuf::from(&tc.vars.source),
            self.params,
            self.change_seed_of(round),
        );
        let manifest_name = Self::changed_manifest(round);
        if self.real_tree.is_some() {
            return self.change_real_tree(tc, rec, started, round);
        }
        // The new manifest is written as the tree is rescanned, never held
        // (issue 31: a million files), and compared with the run's first
        // (`same_tree.rs`).
        let slot = self.manifest_slot(tc, &manifest_name)?;
        let written = slot.path.clone();
        let result = self.in_process(name.clone(), move |progress| {
            labrun_dataset::apply_change_to_file(&dir, &params, seed, &written, progress)
        });
        rec.wall_secs = started.elapsed().as_secs_f64();
        match result {
            InProcess::Done(Ok(manifest)) => {
                rec.ok = true;
                self.settle_manifest(
                    slot,
                    &manifest.sha256,
                    &mut rec,
                    "the changed tree",
                    "the dataset change is not deterministic, a bug in labrun",
                )?;
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

    /// The metadata-fidelity fixture, written into `dir` (untimed, recorded
    /// as `fixture`). Seeded like the dataset: the same tree in every tool
    /// cycle, its manifest kept once as `manifests/fidelity.jsonl`.
    pub(super) fn write_fixture(&mut self, tc: &ToolCycle, dir: &Path) -> Result<bool, Halt> {
        self.check_stop()?;
        let (mut rec, started) = self.start_step(tc, Step::FIXTURE)?;
        let (out, seed) = (dir.to_path_buf(), self.params.seed);
        let result = self.in_process(Step::FIXTURE, move |_| {
            labrun_dataset::fidelity::write_fixture(&out, seed)
        });
        rec.wall_secs = started.elapsed().as_secs_f64();
        match result {
            InProcess::Done(Ok(manifest)) => {
                rec.ok = true;
                rec.files = Some(file_count(&manifest));
                rec.bytes = Some(manifest.total_file_bytes());
                let slot = self.manifest_slot(tc, FIXTURE)?;
                let digest = self.ev.write_manifest(&slot.path, &manifest)?;
                self.settle_manifest(
                    slot,
                    &digest,
                    &mut rec,
                    "the fidelity fixture",
                    "a bug in labrun, or a filesystem that changed under the run",
                )?;
            }
            InProcess::Done(Err(e)) => {
                rec.error = Some(format!(
                    "cannot write the fidelity fixture in {}: {}",
                    dir.display(),
                    describe_io(&e)
                ))
            }
            InProcess::Stopped(signal) => return self.interrupted(&mut rec, signal),
            InProcess::Died => rec.error = Some(LIBRARY_PANIC.into()),
        }
        let ok = rec.ok;
        self.append(&rec)?;
        Ok(ok)
    }
}
