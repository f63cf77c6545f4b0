//! A git-history dataset (SPEC 6): its series of commits, which `commit`
//! steps of the protocol walk ([`labrun_evidence::protocol::history`] is
//! the study: a backup per commit, then a restore of each snapshot, each
//! verified against its commit). This module clones a real repository once
//! per run, opens the series per tool cycle, and moves the work tree from
//! one commit to the next, keeping each commit's manifest.
//!
//! Records of a series carry [`labrun_evidence::HistoryPoint`] (commit
//! number and id); its tool logs are named `c<cycle>-s<index>-<step>`.

mod git;
mod series;

use super::context::Context;
use super::in_process::{LIBRARY_PANIC, dataset_failed, ended};
use super::tally::Tally;
use super::tree_manifests::{TreeManifestWriter, each_entry};
use super::workspace::Workspace;
use super::{Halt, ToolCycle};
use crate::run::error::{RunError, describe_io};
use labrun_evidence::{DatasetPlan, HistorySource, Step};
pub use series::Series;
use std::path::{Path, PathBuf};
use std::time::Instant;

const COMMIT_MANIFEST: &str = "commit-";

/// `manifests/commit-<k>.jsonl`: the tree of commit `k`.
pub fn commit_manifest(k: u32) -> String {
    format!("{COMMIT_MANIFEST}{k:04}")
}

/// `k` of [`commit_manifest`]`(k)`.
pub fn commit_of_manifest(name: &str) -> Option<u32> {
    name.strip_prefix(COMMIT_MANIFEST)?.parse().ok()
}

/// Once per run, before any tool: the clone of a real repository (a
/// synthetic history needs nothing). Without it nothing can run: a
/// failure is fatal, as the synthetic dataset's generation is.
pub(super) fn prepare_history(
    ctx: &Context,
    ws: &mut Workspace,
    tally: &mut Tally,
    source: &HistorySource,
) -> Result<(), Halt> {
    if let HistorySource::Trees {
        trees,
        public,
        sample,
    } = source
    {
        return prepare_series_trees(ctx, ws, tally, trees, *sample, !public);
    }
    let HistorySource::Repository { path, commits } = source else {
        return Ok(());
    };
    ctx.check_stop()?;
    let mut rec = tally.start_dataset_step()?;
    let clone = ws.root.join(git::CLONE_DIR);
    rec.argv = git::clone_argv(path, &clone);
    let started = Instant::now();
    let (path, selection) = (path.clone(), commits.clone());
    let result = ctx.in_process(tally, Step::GENERATE, move |_| {
        git::clone(&path, &clone)?;
        git::resolve(&clone, &selection)
    });
    rec.wall_secs = started.elapsed().as_secs_f64();
    let Some(ids) = ended(tally, &mut rec, result, |why| why, LIBRARY_PANIC)? else {
        tally.append(&rec)?;
        return Err(dataset_failed(&rec, "git-history preparation"));
    };
    rec.ok = true;
    rec.files = Some(ids.len() as u64);
    tally.append(&rec)
}

/// The series of this tool cycle, at its start (an empty tree); `None`
/// when the dataset is no git history or the series cannot be opened
/// (then a failed record says why). `root` is the run's work folder.
pub(super) fn open_series(
    ctx: &Context,
    root: &Path,
    tally: &mut Tally,
    tc: &ToolCycle,
) -> Result<Option<Series>, Halt> {
    let DatasetPlan::GitHistory { source } = &ctx.plan.dataset else {
        return Ok(None);
    };
    match Series::open(source, root, Path::new(&tc.vars.work)) {
        Ok(s) => Ok(Some(s)),
        Err(why) => {
            let mut rec = tally.blank(tc, Step::GENERATE);
            rec.error = Some(why);
            tally.append(&rec)?;
            Ok(None)
        }
    }
}

/// Moves the tool cycle's source to commit `k` (untimed: `generate` for
/// the first commit, `change` for the next ones) and keeps its manifest:
/// the first tool cycle writes `manifests/commit-<k>.jsonl`, every later
/// one must find the same tree. Gives the series back unless its thread
/// died.
pub(super) fn move_tree(
    ctx: &Context,
    ws: &mut Workspace,
    tally: &mut Tally,
    tc: &ToolCycle,
    mut series: Series,
    k: u32,
) -> Result<(bool, Option<Series>), Halt> {
    ctx.check_stop()?;
    let step = if k == 1 { Step::GENERATE } else { Step::CHANGE };
    let (mut rec, started) = tally.start_step(tc, step.clone())?;
    let dir = PathBuf::from(&tc.vars.source);
    // The work tree's manifest, written as the tree is read (a tree of
    // millions of files is never held): a work file, checked against
    // the series' own, then kept in the evidence.
    let scanned = ws.root.join("moved-tree.jsonl");
    let out = scanned.clone();
    let result = ctx.in_process(tally, step, move |progress| {
        let tree = series
            .move_to(k, &dir)
            .and_then(|()| {
                labrun_dataset::scan_to_file_with_progress(&dir, &out, progress)
                    .map_err(|e| format!("{} ({})", describe_io(&e), dir.display()))
            })
            .and_then(|written| series.check_moved(k, &out, &written).map(|()| written));
        // The series comes back either way (unless the thread dies).
        match tree {
            Ok(written) => Ok((series, written)),
            Err(why) => Err((series, why)),
        }
    });
    rec.wall_secs = started.elapsed().as_secs_f64();
    let mut back = None;
    let moved = ended(
        tally,
        &mut rec,
        result,
        |(series, why)| {
            back = Some(series);
            why
        },
        LIBRARY_PANIC,
    )?;
    if let Some((series, written)) = moved {
        rec.files = Some(written.files);
        rec.bytes = Some(written.file_bytes);
        rec.ok = true;
        let kept = keep_manifest(ws, tally, &mut rec, tc, k, &scanned);
        let _ = std::fs::remove_file(&scanned);
        kept?;
        back = Some(series);
    }
    let ok = rec.ok;
    tally.append(&rec)?;
    Ok((ok, back))
}

/// Once per run: every tree of a series made ready (folders checked
/// against the host's manifests, archives unpacked, then the sample of
/// each cut out, if any), in order.
fn prepare_series_trees(
    ctx: &Context,
    ws: &mut Workspace,
    tally: &mut Tally,
    trees: &[labrun_evidence::TreeSource],
    sample: Option<labrun_evidence::Sample>,
    private: bool,
) -> Result<(), Halt> {
    ctx.check_stop()?;
    let mut rec = tally.start_dataset_step()?;
    let started = Instant::now();
    let (sources, root) = (trees.to_vec(), ws.root.clone());
    let result = ctx.in_process(tally, Step::GENERATE, move |progress| {
        let (mut files, mut largest) = (0, 0);
        for (i, t) in sources.iter().enumerate() {
            let into = super::real_tree::series_dir(&root, i + 1);
            let ready = super::real_tree::ready_tree(t, sample, private, &into, progress)
                .map_err(|e| format!("tree {}: {e}", i + 1))?;
            debug_assert_eq!(
                ready.dir,
                super::real_tree::series_tree(t, sample.is_some(), &root, i + 1)
            );
            // Its content manifest, what moving the work tree to this
            // tree must rewrite, is `series::manifest_of(root, k)`.
            debug_assert_eq!(ready.content_path, series::manifest_of(&root, i + 1));
            files += ready.content.files;
            largest = largest.max(ready.content.files);
        }
        Ok::<(u64, u64), String>((files, largest))
    });
    rec.wall_secs = started.elapsed().as_secs_f64();
    let Some((files, largest)) = ended(tally, &mut rec, result, |why| why, LIBRARY_PANIC)? else {
        tally.append(&rec)?;
        return Err(dataset_failed(&rec, "preparation of the trees"));
    };
    // A series reads one tree's manifests at a time: its largest tree is
    // what must fit.
    crate::run::tree_memory::check(largest, crate::run::tree_memory::available_bytes())?;
    rec.ok = true;
    rec.files = Some(files);
    if private {
        learn_private_paths(ws, tally, trees.len())?;
    }
    tally.append(&rec)
}

/// Every name in the paths of the series' `n` trees, to be hashed in
/// tool logs.
fn learn_private_paths(ws: &mut Workspace, tally: &mut Tally, n: usize) -> Result<(), Halt> {
    let manifests: Vec<PathBuf> = (1..=n).map(|k| series::manifest_of(&ws.root, k)).collect();
    ws.private_paths
        .add_trees(&manifests)
        .map_err(|e| RunError::io("cannot read the manifests of the trees", &ws.root, e))?;
    ws.park_private_names(tally);
    Ok(())
}

/// Keeps the manifest of commit `k`'s tree (the work file `scanned`)
/// in the evidence as `manifests/commit-<k>` (`same_tree.rs`), hashed
/// for a private series, whose work copy with paths is kept for the
/// verifies.
fn keep_manifest(
    ws: &mut Workspace,
    tally: &mut Tally,
    rec: &mut labrun_evidence::StepRecord,
    tc: &ToolCycle,
    k: u32,
    scanned: &Path,
) -> Result<(), Halt> {
    let name = commit_manifest(k);
    let slot = ws.manifest_slot(&tally.ev, tc, &name)?;
    // A private series keeps no path of its trees (as real_tree.rs).
    let private = ws.private;
    let plain = (private && slot.writes_plain).then(|| ws.plain_manifest_path(&name));
    let out = slot.path.clone();
    let write = || -> Result<labrun_dataset::WrittenManifest, labrun_dataset::DatasetError> {
        let mut w = TreeManifestWriter::create(&out, private, plain.as_deref())?;
        each_entry(scanned, &mut |e| w.push(&e))?;
        w.finish()
    };
    let written =
        write().map_err(|e| RunError::io("cannot write evidence file", &out, e.into()))?;
    ws.settle_manifest(
        slot,
        &written.sha256,
        rec,
        &format!("commit {k}'s tree"),
        "the work tree was not moved as git would, a bug in labrun",
    )
}
