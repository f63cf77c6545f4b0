//! A real tree as the run's dataset (issue 31): a folder read in place (the
//! host's pushed copy, or a user's folder on a `target:` machine) or an
//! archive unpacked into the run's folder, optionally cut to a seeded
//! sample. Recorded as the run's `generate` step, as the synthetic tree is.
//!
//! A folder read in place is never written: every tool cycle works on a
//! copy, and the end of the run removes the copies only
//! ([`Runner::pristine_is_ours`]).

use super::{GENERATED, Halt, LIBRARY_PANIC, Runner, file_count};
use crate::run::error::{RunError, describe_io};
use crate::run::interrupt::InProcess;
use labrun_dataset::tree_change::TreeChange;
use labrun_dataset::unpack::UnpackLimits;
use labrun_evidence::{ChangeSpec, Manifest, Sample, TreePlan, TreeSource};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// What the run keeps of its real tree once it is ready.
pub struct RealTree {
    /// The pristine tree's manifest: every change is planned from it.
    pub manifest: Arc<Manifest>,
    pub change: ChangeSpec,
    /// The change of each change round of the protocol, planned when the
    /// first tool cycle reaches it: round k is planned on the tree that
    /// round k-1 left, the same in every tool cycle.
    pub rounds: Vec<TreeChange>,
}

impl RealTree {
    /// The change round `round` (1-based) makes to a tree whose manifest is
    /// `before`, planned once.
    pub fn round(&mut self, round: u64, before: &Manifest) -> TreeChange {
        let k = round.saturating_sub(1) as usize;
        while self.rounds.len() <= k {
            let spec = ChangeSpec {
                seed: self.change.seed.wrapping_add(self.rounds.len() as u64),
                ..self.change
            };
            let base = if self.rounds.is_empty() {
                &self.manifest
            } else {
                before
            };
            self.rounds.push(TreeChange::plan(base, &spec));
        }
        self.rounds[k].clone()
    }

    /// What a reset must copy back: every round's rewritten files and
    /// regions that the pristine tree has (a file a round added is removed
    /// by the reset's walk).
    pub fn touched(&self) -> labrun_dataset::ChangePlan {
        let has = |p: &str| {
            self.manifest
                .entries
                .binary_search_by(|e| e.path.as_str().cmp(p))
                .is_ok()
        };
        let mut plan = labrun_dataset::ChangePlan {
            small_files: Vec::new(),
            regions: Vec::new(),
        };
        for r in &self.rounds {
            let t = r.touched();
            plan.small_files
                .extend(t.small_files.into_iter().filter(|p| has(p)));
            plan.regions
                .extend(t.regions.into_iter().filter(|r| has(&r.path)));
        }
        plan.small_files.sort();
        plan.small_files.dedup();
        plan
    }
}

impl<'p> Runner<'p> {
    /// Prepares the pristine tree of a real-tree dataset, once per run.
    /// Without it nothing can run: a failure is fatal.
    pub(super) fn prepare_real_tree(&mut self, tree: &TreePlan) -> Result<(), Halt> {
        let mut rec = self.start_dataset_step()?;
        let started = Instant::now();
        let (source, sample, into) = (tree.source.clone(), tree.sample, self.root.clone());
        let private = tree.private();
        let result = self.in_process(labrun_evidence::Step::GENERATE, move |progress| {
            ready_tree(&source, sample, private, &into, progress)
        });
        rec.wall_secs = started.elapsed().as_secs_f64();
        let message = match result {
            InProcess::Done(Ok(ready)) => {
                self.pristine = ready.dir;
                self.pristine_is_ours = ready.ours;
                rec.argv = ready.argv;
                rec.files = Some(file_count(&ready.manifest));
                rec.bytes = Some(ready.manifest.total_file_bytes());
                if tree.private() {
                    for e in &ready.manifest.entries {
                        self.private_paths.add(&e.path);
                    }
                    self.private_paths.finish();
                }
                self.write_tree_manifest(
                    GENERATED,
                    &content_only(&ready.manifest),
                    tree.private(),
                )?;
                let needed = labrun_dataset::Footprint {
                    rows: Vec::new(),
                    files: file_count(&ready.manifest),
                    bytes: ready.manifest.total_file_bytes(),
                    allocated_bytes: ready.manifest.total_file_bytes(),
                };
                // The pristine tree is there already; the copies, the
                // repository and the restore are not.
                crate::run::space::check_now(&self.root, &needed)?;
                crate::run::tree_memory::check(
                    needed.files,
                    crate::run::tree_memory::available_bytes(),
                )?;
                self.real_tree = Some(RealTree {
                    manifest: Arc::new(ready.manifest),
                    change: tree.change,
                    rounds: Vec::new(),
                });
                rec.ok = true;
                return self.append(&rec);
            }
            InProcess::Done(Err(why)) => why,
            InProcess::Stopped(signal) => return self.interrupted(&mut rec, signal),
            InProcess::Died => LIBRARY_PANIC.to_string(),
        };
        rec.error = Some(message.clone());
        self.append(&rec)?;
        Err(Halt::Fatal(RunError::Dataset {
            phase: "preparation of the tree",
            message,
        }))
    }
}

/// A tree's manifest with its hard-link groups (a change must never pick
/// one name of a group: it would change the others), read once.
fn scan_tree(dir: &Path, progress: &mut dyn FnMut(u64, u64)) -> std::io::Result<Manifest> {
    labrun_dataset::scan_metadata_with_progress(dir, progress)
}

/// The manifest as a content scan makes it (what restores are compared
/// with): paths, kinds, sizes, modes and digests, no metadata fields.
pub fn content_only(m: &Manifest) -> Manifest {
    Manifest {
        entries: m
            .entries
            .iter()
            .map(|e| labrun_evidence::ManifestEntry {
                mtime: None,
                link_group: None,
                xattrs: None,
                sparse: false,
                ..e.clone()
            })
            .collect(),
    }
}

/// What a failed scan of a tree says: for a private tree, the entry it
/// names is hashed (`folder/<hash>`), as the manifests name it.
pub(super) fn scan_error(e: std::io::Error, root: &Path, private: bool) -> String {
    use labrun_dataset::DatasetError;
    if !private || !e.get_ref().is_some_and(|i| i.is::<DatasetError>()) {
        return describe_io(&e);
    }
    match e.into_inner().map(|i| i.downcast::<DatasetError>()) {
        Some(Ok(d)) => d.with_hashed_path_under(root).to_string(),
        // Checked just above: not reached.
        _ => "an entry of the private tree could not be read".to_string(),
    }
}

/// Where an archive is unpacked, under the folder given to [`ready_tree`].
pub fn unpacked_dir(into: &Path) -> PathBuf {
    into.join("pristine")
}

/// Where tree `k` (1-based) of a series is made ready.
pub fn series_dir(root: &Path, k: usize) -> PathBuf {
    root.join(format!("tree-{k}"))
}

/// Where tree `k` of a series is read from once [`ready_tree`] made it
/// ready: its sample, else the folder itself or its unpacked copy.
pub fn series_tree(source: &TreeSource, sampled: bool, root: &Path, k: usize) -> PathBuf {
    match source {
        _ if sampled => sample_dir(&series_dir(root, k)),
        TreeSource::Folder { path, .. } => PathBuf::from(path),
        TreeSource::Archive { .. } => unpacked_dir(&series_dir(root, k)),
    }
}

/// Where a tree's sample is copied, under the folder given to [`ready_tree`].
fn sample_dir(into: &Path) -> PathBuf {
    into.join("pristine-sample")
}

/// A tree ready to be copied from.
pub struct ReadyTree {
    pub dir: PathBuf,
    /// The run made it (an unpacked archive, a sample) and removes it at
    /// its end; false for a folder read in place.
    pub ours: bool,
    pub manifest: Manifest,
    /// What was done, as a command would say it (no path of the tree's
    /// content: only where it came from).
    pub argv: Vec<String>,
}

/// Makes `source` a tree on this machine: a folder as it is (checked
/// against the host's manifest when the host pushed it), an archive
/// unpacked into `into`/pristine; then the sample, if any, copied out of
/// it into `into`/pristine-sample. An archive entry a `private` tree's
/// error names is hashed.
pub fn ready_tree(
    source: &TreeSource,
    sample: Option<Sample>,
    private: bool,
    into: &Path,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<ReadyTree, String> {
    let full = match source {
        TreeSource::Folder {
            path,
            manifest_sha256,
        } => {
            let dir = PathBuf::from(path);
            let manifest = scan_tree(&dir, progress).map_err(|e| {
                format!(
                    "cannot read the folder {path}: {}",
                    scan_error(e, &dir, private)
                )
            })?;
            if let Some(expected) = manifest_sha256 {
                let found =
                    crate::run::evidence::Evidence::manifest_digest(&content_only(&manifest));
                if &found != expected {
                    return Err(format!(
                        "the folder {path} is not the tree the host pushed (manifest {found}, expected {expected}): it changed while it was pushed or since; run again to push it anew"
                    ));
                }
            }
            ReadyTree {
                dir,
                ours: false,
                manifest,
                argv: vec!["read".into(), path.clone()],
            }
        }
        TreeSource::Archive {
            path,
            format,
            sha256,
            max_bytes,
        } => {
            let archive = PathBuf::from(path);
            let found = labrun_evidence::digest::sha256_file(&archive)
                .map_err(|e| format!("cannot read the archive {path}: {e}"))?;
            if &found != sha256 {
                return Err(format!(
                    "the archive {path} has SHA-256 {found}, the host sent {sha256}: it was changed or cut short in the guest; run again"
                ));
            }
            let dir = unpacked_dir(into);
            let limits = UnpackLimits {
                max_bytes: *max_bytes,
                max_entries: labrun_dataset::unpack::MAX_ENTRIES,
            };
            labrun_dataset::unpack::unpack_file(&archive, *format, &dir, limits, progress)
                .map_err(|e| match private {
                    true => e.with_hashed_entry().to_string(),
                    false => e.to_string(),
                })?;
            let manifest = scan_tree(&dir, progress).map_err(|e| {
                format!(
                    "cannot read the unpacked tree: {}",
                    scan_error(e, &dir, private)
                )
            })?;
            ReadyTree {
                dir,
                ours: true,
                manifest,
                argv: vec!["unpack".into(), path.clone(), format.to_string()],
            }
        }
    };
    let Some(sample) = sample else {
        return Ok(full);
    };
    let subset = labrun_dataset::sample::sample(&full.manifest, sample.fraction, sample.seed);
    let dir = sample_dir(into);
    labrun_dataset::sample::copy_sample(&full.dir, &dir, &subset, progress)
        .map_err(|e| format!("cannot copy the sample of the tree: {}", describe_io(&e)))?;
    let manifest = scan_tree(&dir, progress)
        .map_err(|e| format!("cannot read the sample of the tree: {}", describe_io(&e)))?;
    if full.ours {
        // Best effort: the sample is what the run uses from here on.
        let _ = std::fs::remove_dir_all(&full.dir);
    }
    let mut argv = full.argv;
    argv.extend([
        "sample".to_string(),
        sample.fraction.to_string(),
        sample.seed.to_string(),
    ]);
    Ok(ReadyTree {
        dir,
        ours: true,
        manifest,
        argv,
    })
}

impl<'p> Runner<'p> {
    /// Change round `round` of a real tree on this tool cycle's source
    /// (untimed): planned from the tree (the first tool cycle plans it, the
    /// others apply the same change), recorded with what it touched.
    pub(super) fn change_real_tree(
        &mut self,
        tc: &super::ToolCycle,
        mut rec: labrun_evidence::StepRecord,
        started: Instant,
        round: u64,
    ) -> Result<bool, Halt> {
        let dir = PathBuf::from(&tc.vars.source);
        let Some(tree) = self.real_tree.as_mut() else {
            return Ok(false);
        };
        // Round k > 1 is planned on the tree round k-1 left; read once.
        let before = if round > 1 && (tree.rounds.len() as u64) < round {
            match labrun_dataset::scan(&dir) {
                Ok(m) => Some(m),
                Err(e) => {
                    rec.error = Some(format!(
                        "cannot read {}: {}",
                        dir.display(),
                        describe_io(&e)
                    ));
                    self.append(&rec)?;
                    return Ok(false);
                }
            }
        } else {
            None
        };
        let manifest = Arc::clone(&tree.manifest);
        let change = tree.round(round, before.as_ref().unwrap_or(&manifest));
        let spec = ChangeSpec {
            seed: tree.change.seed.wrapping_add(round.saturating_sub(1)),
            ..tree.change
        };
        let summary = change.summary();
        let name = rec.step.clone();
        let result = self.in_process(name, move |progress| {
            labrun_dataset::tree_change::apply_tree_change(&dir, &change, &spec, progress)
        });
        rec.wall_secs = started.elapsed().as_secs_f64();
        let manifest_name = Self::changed_manifest(round);
        match result {
            InProcess::Done(Ok(after)) => {
                rec.ok = true;
                rec.files = Some(
                    summary.files_rewritten
                        + summary.regions
                        + summary.files_added
                        + summary.files_removed
                        + summary.files_renamed,
                );
                rec.bytes = Some(summary.bytes_written);
                self.write_change_summary(&manifest_name, &summary);
                if let Some(other) = self.keep_same_manifest(tc, &manifest_name, &after)? {
                    rec.ok = false;
                    rec.error = Some(format!(
                        "the change made a different tree than in the first tool cycle (manifests/{manifest_name}.jsonl vs manifests/{other}.jsonl): the tree change is not deterministic, a bug in labrun"
                    ));
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

    /// `manifests/<name>.change.json`: what the change touched, in counts
    /// and bytes (no paths), once per round.
    fn write_change_summary(
        &mut self,
        manifest_name: &str,
        summary: &labrun_dataset::tree_change::ChangeSummary,
    ) {
        let path = self
            .ev
            .manifest_path(manifest_name)
            .with_extension("change.json");
        if path.exists() {
            return;
        }
        if let Err(e) = serde_json::to_vec_pretty(summary)
            .map_err(std::io::Error::other)
            .and_then(|bytes| std::fs::write(&path, bytes))
        {
            let _ = self.warn_once(format!(
                "cannot write {} ({e}): the change's counts are in its record only",
                path.display()
            ));
        }
    }
}
