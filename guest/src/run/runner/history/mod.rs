//! The second study (SPEC 6): per tool, `init`; then for each commit of the
//! series, the work tree moved to it (untimed, its manifest kept) and a
//! timed backup; then for each snapshot in order, a timed restore into an
//! emptied folder, verified against that commit's manifest.
//!
//! A child module of the runner: it uses the runner's steps as they are
//! (measurement, cold cache, evidence, placeholders, helper commands), and
//! adds only what the series needs. Records of a series carry
//! [`HistoryPoint`] (snapshot index and commit); its tool logs are named
//! `c<cycle>-s<index>-<step>`.
//!
//! Snapshot `k` is labelled `s<k>` (`{snapshot}` in the backup command); a
//! tool with a `snapshot_id` command gets its own id back into `{snapshot}`
//! of the restore. A backup that fails ends the tool cycle (later snapshots
//! would build on it); a restore or verification that fails does not stop
//! the restores of the other snapshots.

mod git;
mod series;

use super::{Halt, LIBRARY_PANIC, Runner, ToolCycle, file_count};
use crate::run::error::{RunError, describe_io};
use crate::run::evidence::{Evidence, blank_record};
use crate::run::interrupt::InProcess;
use labrun_evidence::{HistoryPoint, HistorySource, Manifest, RunStep, Step};
use series::Series;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `manifests/commit-<k>.jsonl`: the tree of commit `k`.
pub fn manifest_name(k: u32) -> String {
    format!("commit-{k:04}")
}

/// The label of snapshot `k`, as the first study labels `s1`, `s2`.
pub fn snapshot_label(k: u32) -> String {
    format!("s{k}")
}

impl<'p> Runner<'p> {
    /// Once per run, before any tool: the clone of a real repository (a
    /// synthetic history needs nothing). Without it nothing can run: a
    /// failure is fatal, as the synthetic dataset's generation is.
    pub(super) fn prepare_history(&mut self, source: &HistorySource) -> Result<(), Halt> {
        let HistorySource::Repository { path, commits } = source else {
            return Ok(());
        };
        let mut rec = self.start_dataset_step()?;
        let clone = self.root.join(git::CLONE_DIR);
        rec.argv = git::clone_argv(path, &clone);
        let started = Instant::now();
        let (path, selection) = (path.clone(), commits.clone());
        let result = self.in_process(Step::GENERATE, move |_| {
            git::clone(&path, &clone)?;
            git::resolve(&clone, &selection)
        });
        rec.wall_secs = started.elapsed().as_secs_f64();
        let message = match result {
            InProcess::Done(Ok(ids)) => {
                rec.ok = true;
                rec.files = Some(ids.len() as u64);
                return self.append(&rec);
            }
            InProcess::Done(Err(why)) => why,
            InProcess::Stopped(signal) => return self.interrupted(&mut rec, signal),
            InProcess::Died => LIBRARY_PANIC.to_string(),
        };
        rec.error = Some(message.clone());
        self.append(&rec)?;
        Err(Halt::Fatal(RunError::Dataset {
            phase: "git-history preparation",
            message,
        }))
    }

    /// One tool's cycle over the whole series; `Ok(false)` when a step failed.
    pub(super) fn history_steps(
        &mut self,
        tc: &ToolCycle,
        source: &HistorySource,
    ) -> Result<bool, Halt> {
        let mut series = match Series::open(source, &self.root, Path::new(&tc.vars.work)) {
            Ok(s) => s,
            Err(why) => {
                let mut rec =
                    blank_record(&self.plan.run_id, &tc.tool.name, tc.cycle, Step::GENERATE);
                rec.order = tc.order;
                rec.error = Some(why);
                self.append(&rec)?;
                return Ok(false);
            }
        };
        if !self
            .tool_step(tc, &RunStep::new(Step::INIT, "init"), None)?
            .ok
        {
            return Ok(false);
        }
        let mut snapshots = Vec::new();
        for k in 1..=series.len() {
            let at = at_point(tc, k, series.commit(k));
            match self.move_tree(&at, series, k)? {
                (true, Some(back)) => series = back,
                _ => return Ok(false),
            }
            let step = if k == 1 {
                Step::BACKUP_FULL
            } else {
                Step::BACKUP_INCREMENTAL
            };
            let backup = RunStep {
                makes: Some(snapshot_label(k)),
                ..RunStep::new(step, "backup")
            };
            let made = self.tool_step(&at, &backup, Some(&snapshot_label(k)))?;
            if !made.ok {
                return Ok(false);
            }
            snapshots.push((at, made.snapshot.unwrap_or_else(|| snapshot_label(k))));
        }
        let mut all_ok = true;
        for (k, (at, snapshot)) in (1..).zip(&snapshots) {
            empty_folder(Path::new(&at.vars.target))?;
            let restore = RunStep {
                restores: Some(snapshot_label(k)),
                repo_size: false,
                ..RunStep::new(Step::RESTORE, "restore")
            };
            let restored = self.tool_step(at, &restore, Some(snapshot))?;
            all_ok &= restored.ok && self.verify_snapshot(at, k)?;
        }
        Ok(all_ok)
    }

    /// Moves the tool cycle's source to commit `k` (untimed: `generate` for
    /// the first commit, `change` for the next ones) and keeps its manifest:
    /// the first tool cycle writes `manifests/commit-<k>.jsonl`, every later
    /// one must find the same tree. Gives the series back unless its thread
    /// died.
    fn move_tree(
        &mut self,
        tc: &ToolCycle,
        mut series: Series,
        k: u32,
    ) -> Result<(bool, Option<Series>), Halt> {
        self.check_stop()?;
        let step = if k == 1 { Step::GENERATE } else { Step::CHANGE };
        let (mut rec, started) = self.start_step(tc, step.clone())?;
        let dir = PathBuf::from(&tc.vars.source);
        let result = self.in_process(step, move |progress| {
            let tree = series.move_to(k, &dir).and_then(|()| {
                labrun_dataset::scan_with_progress(&dir, progress)
                    .map_err(|e| format!("{} ({})", describe_io(&e), dir.display()))
            });
            (series, tree)
        });
        rec.wall_secs = started.elapsed().as_secs_f64();
        let series = match result {
            InProcess::Done((series, Ok(manifest))) => {
                rec.files = Some(file_count(&manifest));
                rec.bytes = Some(manifest.total_file_bytes());
                rec.ok = true;
                self.keep_manifest(&mut rec, tc, k, &manifest)?;
                Some(series)
            }
            InProcess::Done((series, Err(why))) => {
                rec.error = Some(why);
                Some(series)
            }
            InProcess::Stopped(signal) => return self.interrupted(&mut rec, signal),
            InProcess::Died => {
                rec.error = Some(LIBRARY_PANIC.into());
                None
            }
        };
        let ok = rec.ok;
        self.append(&rec)?;
        Ok((ok, series))
    }

    fn keep_manifest(
        &mut self,
        rec: &mut labrun_evidence::StepRecord,
        tc: &ToolCycle,
        k: u32,
        manifest: &Manifest,
    ) -> Result<(), Halt> {
        let name = manifest_name(k);
        let path = self.ev.manifest_path(&name);
        let first = match std::fs::read(&path) {
            Ok(bytes) => labrun_evidence::digest::sha256_hex(&bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.ev.write_manifest(&name, manifest)?;
                return Ok(());
            }
            Err(e) => return Err(RunError::io("cannot read manifest", &path, e).into()),
        };
        if first != Evidence::manifest_digest(manifest) {
            let other = format!("{name}-c{}-{}", tc.cycle, tc.tool.name);
            self.ev.write_manifest(&other, manifest)?;
            rec.ok = false;
            rec.error = Some(format!(
                "commit {k} made a different tree than in the first tool cycle (manifests/{name}.jsonl vs manifests/{other}.jsonl): the work tree was not moved as git would, a bug in labrun"
            ));
        }
        Ok(())
    }

    /// Hashes the restored tree and compares it with commit `k`'s manifest.
    fn verify_snapshot(&mut self, tc: &ToolCycle, k: u32) -> Result<bool, Halt> {
        self.check_stop()?;
        self.verify_tree(
            tc,
            &Step::VERIFY,
            &manifest_name(k),
            &format!("the restore of snapshot {k} differs from commit {k}"),
            Vec::new(),
        )
    }
}

/// The tool cycle, at point `k` of the series.
fn at_point<'p>(tc: &ToolCycle<'p>, k: u32, commit: String) -> ToolCycle<'p> {
    ToolCycle {
        tool: tc.tool,
        cycle: tc.cycle,
        order: tc.order,
        base: tc.base.clone(),
        vars: tc.vars.clone(),
        history: Some(HistoryPoint { index: k, commit }),
    }
}

/// The restore target, emptied before each restore (the study restores
/// into an empty folder every time: full restores, not incremental ones).
fn empty_folder(dir: &Path) -> Result<(), Halt> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(RunError::io("cannot empty the restore folder", dir, e).into()),
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| Halt::Fatal(RunError::io("cannot create the restore folder", dir, e)))
}
