//! A real tree as the run's dataset (issue 31): a folder read in place (the
//! host's pushed copy, or a user's folder on a `target:` machine) or an
//! archive unpacked into the run's folder, optionally cut to a seeded
//! sample. Recorded as the run's `generate` step, as the synthetic tree is.
//!
//! A folder read in place is never written: every tool cycle works on a
//! copy, and the end of the run removes the copies only
//! ([`Workspace::pristine_is_ours`]).

use super::context::Context;
use super::in_process::{LIBRARY_PANIC, dataset_failed, ended};
use super::tally::Tally;
use super::tree_manifests::{TreeManifestWriter, each_entry};
use super::workspace::{Workspace, remove_tree};
use super::{GENERATED, Halt, ToolCycle};
use crate::run::error::{RunError, describe_io};
use labrun_dataset::WrittenManifest;
use labrun_dataset::tree_change::ManifestFile;
use labrun_dataset::tree_change::TreeChange;
use labrun_dataset::unpack::UnpackLimits;
use labrun_evidence::{ChangeSpec, Sample, TreePlan, TreeSource};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What the run keeps of its real tree once it is ready: files, not
/// manifests or plans (issue 31: a tree of millions of files is never
/// held, and a change's lists, 7% of its paths, only while it is applied).
pub struct RealTree {
    /// The pristine tree's manifest with its metadata (hard links: a change
    /// never picks one name of a group), in the work folder: the first
    /// change round is planned from it.
    pub meta: PathBuf,
    pub change: ChangeSpec,
    /// The plan of each change round of the protocol, in the work folder,
    /// planned when the first tool cycle reaches it: round k is planned on
    /// the tree that round k-1 left, the same in every tool cycle.
    pub rounds: Vec<PathBuf>,
}

impl RealTree {
    /// The change round `round` (1-based) makes, planned once: round 1 from
    /// the pristine tree, a later one from `before`, the metadata manifest
    /// of the tree the round before it left (read only when that round is
    /// planned here). Plans are kept as files beside the pristine
    /// manifest.
    pub fn round(&mut self, round: u64, before: Option<&Path>) -> std::io::Result<TreeChange> {
        let k = round.saturating_sub(1) as usize;
        while self.rounds.len() <= k {
            let spec = ChangeSpec {
                seed: self.change.seed.wrapping_add(self.rounds.len() as u64),
                ..self.change
            };
            let base = match (self.rounds.is_empty(), before) {
                (true, _) => self.meta.as_path(),
                (false, Some(before)) => before,
                (false, None) => {
                    return Err(std::io::Error::other(format!(
                        "change round {} is planned on the tree round {} left, which was not read: a bug in labrun",
                        self.rounds.len() + 1,
                        self.rounds.len()
                    )));
                }
            };
            let planned = TreeChange::plan_from(&ManifestFile(base.to_path_buf()), &spec)?;
            let path = self
                .meta
                .with_file_name(format!("change-round-{}.json", self.rounds.len() + 1));
            // Written and read through buffers: the plan's text is the
            // size of its lists again.
            let mut out = std::io::BufWriter::new(std::fs::File::create(&path)?);
            serde_json::to_writer(&mut out, &planned).map_err(std::io::Error::other)?;
            std::io::Write::flush(&mut out)?;
            self.rounds.push(path);
            if self.rounds.len() > k {
                return Ok(planned);
            }
        }
        read_plan(&self.rounds[k])
    }

    /// What a reset must copy back: every round's rewritten files and
    /// regions that the pristine tree has. A later round may pick a file an
    /// earlier one added or moved, which the pristine tree lacks: the
    /// reset's walk removes those.
    pub fn touched(&self) -> std::io::Result<labrun_dataset::ChangePlan> {
        let mut plan = labrun_dataset::ChangePlan {
            small_files: Vec::new(),
            regions: Vec::new(),
        };
        let mut new_paths: HashSet<String> = HashSet::new();
        for path in &self.rounds {
            let r = read_plan(path)?;
            plan.small_files.extend(
                r.rewritten
                    .into_iter()
                    .filter(|p| !new_paths.contains(p.as_str())),
            );
            plan.regions.extend(
                r.regions
                    .into_iter()
                    .filter(|x| !new_paths.contains(x.path.as_str())),
            );
            new_paths.extend(r.added.into_iter().map(|(p, _)| p));
            new_paths.extend(r.renamed.into_iter().map(|(_, to)| to));
        }
        plan.small_files.sort();
        plan.small_files.dedup();
        Ok(plan)
    }
}

/// A change round's plan as [`RealTree::round`] kept it.
fn read_plan(path: &Path) -> std::io::Result<TreeChange> {
    let file = std::io::BufReader::new(std::fs::File::open(path)?);
    serde_json::from_reader(file).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{}: {e}: the work folder's plan of a change was changed",
                path.display()
            ),
        )
    })
}

/// Prepares the pristine tree of a real-tree dataset, once per run.
/// Without it nothing can run: a failure is fatal.
pub(super) fn prepare_real_tree(
    ctx: &Context,
    ws: &mut Workspace,
    tally: &mut Tally,
    tree: &TreePlan,
) -> Result<(), Halt> {
    ctx.check_stop()?;
    let mut rec = tally.start_dataset_step()?;
    let started = Instant::now();
    let (source, sample, into) = (tree.source.clone(), tree.sample, ws.root.clone());
    let private = tree.private();
    let result = ctx.in_process(tally, labrun_evidence::Step::GENERATE, move |progress| {
        ready_tree(&source, sample, private, &into, progress)
    });
    rec.wall_secs = started.elapsed().as_secs_f64();
    let Some(ready) = ended(tally, &mut rec, result, |why| why, LIBRARY_PANIC)? else {
        tally.append(&rec)?;
        remove_unready_tree(&ws.root, tally, &tree.source);
        return Err(dataset_failed(&rec, "preparation of the tree"));
    };
    ws.pristine = ready.dir;
    ws.pristine_is_ours = ready.ours;
    rec.argv = ready.argv;
    rec.files = Some(ready.content.files);
    rec.bytes = Some(ready.content.file_bytes);
    write_pristine_manifest(ws, tally, &ready.content_path, tree.private())?;
    let needed = labrun_dataset::Footprint {
        rows: Vec::new(),
        files: ready.content.files,
        bytes: ready.content.file_bytes,
        allocated_bytes: ready.content.file_bytes,
    };
    // The pristine tree is there already; the copies, the
    // repository and the restore are not.
    crate::run::space::check_now(&ws.root, &needed)?;
    crate::run::tree_memory::check(needed.files, crate::run::tree_memory::available_bytes())?;
    ws.real_tree = Some(RealTree {
        meta: ready.meta,
        change: tree.change,
        rounds: Vec::new(),
    });
    rec.ok = true;
    tally.append(&rec)
}

/// Removes what a failed [`ready_tree`] made in the run's folder `root`
/// (an unpacked archive, a sample's copy; never a folder read in place):
/// the run stops, and the tree is of no use, nor is it for the user to
/// delete (an archive's 0000 folders, unpacked by an ordinary user, only
/// root could).
fn remove_unready_tree(root: &Path, tally: &mut Tally, source: &TreeSource) {
    if let TreeSource::Archive { .. } = source {
        remove_tree(&unpacked_dir(root), tally);
    }
    remove_tree(&sample_dir(root), tally);
}

/// `manifests/generated.jsonl` from the content manifest file of the
/// pristine tree, read as it comes; for a private tree, the paths are
/// learnt for the logs' redaction and kept in the work folder.
fn write_pristine_manifest(
    ws: &mut Workspace,
    tally: &mut Tally,
    content: &Path,
    private: bool,
) -> Result<(), Halt> {
    let evidence = tally.ev.manifest_path(GENERATED);
    let plain = private.then(|| ws.plain_manifest_path(GENERATED));
    let write = || -> Result<(), labrun_dataset::DatasetError> {
        let mut out = TreeManifestWriter::create(&evidence, private, plain.as_deref())?;
        each_entry(content, &mut |e| out.push(&e))?;
        out.finish().map(|_| ())
    };
    write().map_err(|e| RunError::io("cannot write the tree's manifest", &evidence, e.into()))?;
    if private {
        ws.private_paths
            .add_trees(&[content.to_path_buf()])
            .map_err(|e| RunError::io("cannot read the tree's manifest", content, e))?;
        ws.park_private_names(tally);
    }
    Ok(())
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

/// A tree ready to be copied from, and its manifests in `into` (the
/// folder given to [`ready_tree`]), files that are read as they are
/// needed, never held.
pub struct ReadyTree {
    pub dir: PathBuf,
    /// The run made it (an unpacked archive, a sample) and removes it at
    /// its end; false for a folder read in place.
    pub ours: bool,
    /// Its manifest with metadata (hard links), what changes are planned
    /// from: [`meta_manifest`].
    pub meta: PathBuf,
    /// Its content manifest (what restores are compared with):
    /// [`content_manifest`].
    pub content_path: PathBuf,
    pub content: WrittenManifest,
    /// What was done, as a command would say it (no path of the tree's
    /// content: only where it came from).
    pub argv: Vec<String>,
}

/// Where [`ready_tree`] writes the tree's manifest with metadata.
pub fn meta_manifest(into: &Path) -> PathBuf {
    into.join("manifest.meta.jsonl")
}

/// Where [`ready_tree`] writes the tree's content manifest.
pub fn content_manifest(into: &Path) -> PathBuf {
    into.join("manifest.jsonl")
}

/// Makes `source` a tree on this machine: a folder as it is (checked
/// against the host's manifest when the host pushed it), an archive
/// unpacked into `into`/pristine; then the sample, if any, copied out of
/// it into `into`/pristine-sample. Its manifests are written into `into`
/// as the tree is read. An entry a `private` tree's error names is hashed.
pub fn ready_tree(
    source: &TreeSource,
    sample: Option<Sample>,
    private: bool,
    into: &Path,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<ReadyTree, String> {
    std::fs::create_dir_all(into)
        .map_err(|e| format!("cannot create {}: {}", into.display(), describe_io(&e)))?;
    let (meta, content_path) = (meta_manifest(into), content_manifest(into));
    let (dir, ours, mut argv) = match source {
        TreeSource::Folder { path, .. } => (
            PathBuf::from(path),
            false,
            vec!["read".into(), path.clone()],
        ),
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
            (
                dir,
                true,
                vec!["unpack".into(), path.clone(), format.to_string()],
            )
        }
    };
    labrun_dataset::scan_metadata_to_file(&dir, &meta, progress).map_err(|e| match source {
        TreeSource::Folder { path, .. } => {
            format!(
                "cannot read the folder {path}: {}",
                scan_error(e, &dir, private)
            )
        }
        TreeSource::Archive { .. } => format!(
            "cannot read the unpacked tree: {}",
            scan_error(e, &dir, private)
        ),
    })?;
    let content = write_content_manifest(&meta, &content_path)?;
    if let TreeSource::Folder {
        path,
        manifest_sha256: Some(expected),
    } = source
        && &content.sha256 != expected
    {
        return Err(format!(
            "the folder {path} is not the tree the host pushed (manifest {}, expected {expected}): it changed while it was pushed or since; run again to push it anew",
            content.sha256
        ));
    }
    let Some(sample) = sample else {
        return Ok(ReadyTree {
            dir,
            ours,
            meta,
            content_path,
            content,
            argv,
        });
    };
    let subset = into.join("sample.meta.jsonl");
    let to = sample_dir(into);
    // The copy's manifest (with metadata, as the subset's) replaces the
    // whole tree's: the sample is the run's tree from here on.
    let mut copy = || -> std::io::Result<WrittenManifest> {
        labrun_dataset::sample_to_file(&meta, sample.fraction, sample.seed, &subset)?;
        labrun_dataset::copy_sample_from_file(&dir, &to, &subset, &meta, progress)
    };
    let copied = copy();
    let _ = std::fs::remove_file(&subset);
    copied.map_err(|e| format!("cannot copy the sample of the tree: {}", describe_io(&e)))?;
    let content = write_content_manifest(&meta, &content_path)?;
    if ours {
        // Best effort: the sample is what the run uses from here on.
        let _ = std::fs::remove_dir_all(&dir);
    }
    argv.extend([
        "sample".to_string(),
        sample.fraction.to_string(),
        sample.seed.to_string(),
    ]);
    Ok(ReadyTree {
        dir: to,
        ours: true,
        meta,
        content_path,
        content,
        argv,
    })
}

/// The content manifest (what a content scan makes, what restores are
/// compared with: paths, kinds, sizes, modes and digests) of the metadata
/// manifest `meta`, written to `out` as it is read.
fn write_content_manifest(meta: &Path, out: &Path) -> Result<WrittenManifest, String> {
    let write = || -> Result<WrittenManifest, labrun_dataset::DatasetError> {
        let mut w = labrun_dataset::ManifestFileWriter::create(out)?;
        each_entry(meta, &mut |e| w.push(&content_only(e)))?;
        w.finish()
    };
    write().map_err(|e| format!("cannot write the tree's manifest: {e}"))
}

/// An entry as a content scan records it: no metadata fields.
pub fn content_only(e: labrun_evidence::ManifestEntry) -> labrun_evidence::ManifestEntry {
    labrun_evidence::ManifestEntry {
        mtime: None,
        link_group: None,
        xattrs: None,
        sparse: false,
        ..e
    }
}

/// Change round `round` of a real tree on this tool cycle's source
/// (untimed): planned from the tree (the first tool cycle plans it, the
/// others apply the same change), recorded with what it touched. The
/// tree's manifest after it is written as the tree is read: the first
/// tool cycle's is kept as `manifests/changed[-k].jsonl`, a later one's
/// beside it, removed when it is the same.
pub(super) fn change_real_tree(
    ctx: &Context,
    ws: &mut Workspace,
    tally: &mut Tally,
    tc: &ToolCycle,
    mut rec: labrun_evidence::StepRecord,
    started: Instant,
    round: u64,
) -> Result<bool, Halt> {
    let dir = PathBuf::from(&tc.vars.source);
    let before = ws.root.join("before-change.meta.jsonl");
    let Some(tree) = ws.real_tree.as_mut() else {
        return Ok(false);
    };
    // Round k > 1 is planned on the tree round k-1 left; read once.
    let read_before = round > 1 && (tree.rounds.len() as u64) < round;
    if read_before
        && let Err(e) = labrun_dataset::scan_metadata_to_file(&dir, &before, &mut |_, _| {})
    {
        rec.error = Some(format!(
            "cannot read {}: {}",
            dir.display(),
            describe_io(&e)
        ));
        tally.append(&rec)?;
        return Ok(false);
    }
    let planned = tree.round(round, read_before.then_some(before.as_path()));
    if read_before {
        let _ = std::fs::remove_file(&before);
    }
    let change = match planned {
        Ok(change) => change,
        Err(e) => {
            rec.error = Some(format!("cannot plan the change: {}", describe_io(&e)));
            tally.append(&rec)?;
            return Ok(false);
        }
    };
    let spec = ChangeSpec {
        seed: tree.change.seed.wrapping_add(round.saturating_sub(1)),
        ..tree.change
    };
    let summary = change.summary();
    let manifest_name = super::source_tree::changed_manifest(round);
    // The work folder's copy with paths is written once by an agent:
    // every cycle's verify compares with it.
    let slot = ws.manifest_slot(&tally.ev, tc, &manifest_name)?;
    let private = ws.private;
    let plain = (private && slot.writes_plain).then(|| ws.plain_manifest_path(&manifest_name));
    let written = slot.path.clone();
    let name = rec.step.clone();
    let result = ctx.in_process(tally, name, move |progress| {
        let mut w = TreeManifestWriter::create(&written, private, plain.as_deref())?;
        labrun_dataset::apply_tree_change_each(
            &dir,
            &change,
            &spec,
            &mut |e| w.push(&e),
            progress,
        )?;
        Ok::<_, std::io::Error>(w.finish()?)
    });
    rec.wall_secs = started.elapsed().as_secs_f64();
    let describe = |e: std::io::Error| format!("{} ({})", describe_io(&e), tc.vars.source);
    if let Some(written) = ended(tally, &mut rec, result, describe, LIBRARY_PANIC)? {
        rec.ok = true;
        rec.files = Some(
            summary.files_rewritten
                + summary.regions
                + summary.files_added
                + summary.files_removed
                + summary.files_renamed,
        );
        rec.bytes = Some(summary.bytes_written);
        write_change_summary(tally, &manifest_name, &summary);
        ws.settle_manifest(
            slot,
            &written.sha256,
            &mut rec,
            "the changed tree",
            "the tree change is not deterministic, a bug in labrun",
        )?;
    }
    let ok = rec.ok;
    tally.append(&rec)?;
    Ok(ok)
}

/// `manifests/<name>.change.json`: what the change touched, in counts
/// and bytes (no paths), once per round.
fn write_change_summary(
    tally: &mut Tally,
    manifest_name: &str,
    summary: &labrun_dataset::tree_change::ChangeSummary,
) {
    let path = tally
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
        let _ = tally.warn_once(format!(
            "cannot write {} ({e}): the change's counts are in its record only",
            path.display()
        ));
    }
}
