//! The trees a tool cycle backs up: the run's generated dataset, each tool
//! cycle's pristine copy of it (a copy, or the previous tool cycle's tree
//! reset), and the seeded change. The agent's own work: untimed, recorded.

use super::context::Context;
use super::in_process::{LIBRARY_PANIC, dataset_failed, ended};
use super::real_tree::{self, RealTree};
use super::services::Services;
use super::tally::Tally;
use super::tool_step::Commands;
use super::workspace::{Workspace, remove_tree};
use super::{CHANGED, FIXTURE, GENERATED, Halt, ToolCycle, file_count, history, path_str};
use crate::run::dataset_store::DatasetStore;
use crate::run::env::{from_process, tool_env};
use crate::run::error::describe_io;
use crate::run::reset::reset_tree;
use labrun_evidence::{DatasetPlan, Plan, RunStep, Step, StepRecord};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What a resetting thread dying says.
const RESET_PANIC: &str = "resetting the source tree panicked (a bug in labrun: please report it with this run's evidence)";

/// The dataset, once per run. Without it nothing can run: failure is fatal.
pub(super) fn generate_pristine(
    ctx: &Context,
    ws: &mut Workspace,
    tally: &mut Tally,
    datasets: Option<&DatasetStore>,
) -> Result<(), Halt> {
    if let DatasetPlan::GitHistory { source } = &ctx.plan.dataset {
        return history::prepare_history(ctx, ws, tally, source);
    }
    if let DatasetPlan::Tree(tree) = &ctx.plan.dataset {
        return real_tree::prepare_real_tree(ctx, ws, tally, tree);
    }
    ctx.check_stop()?;
    let mut rec = tally.start_dataset_step()?;
    let started = Instant::now();
    if let Some(store) = datasets
        && take_kept_dataset(ws, tally, store, &mut rec, started)?
    {
        return Ok(());
    }
    let (out, params) = (ws.pristine.clone(), ws.params);
    // The manifest goes to the evidence as the tree is written: the
    // tiny-files tree's million entries are never held (issue 31).
    let manifest = tally.ev.manifest_path(GENERATED);
    let result = ctx.in_process(tally, Step::GENERATE, move |progress| {
        labrun_dataset::generate_to_file(&out, &params, &manifest, progress)
    });
    rec.wall_secs = started.elapsed().as_secs_f64();
    let pristine = &ws.pristine;
    let describe = |e: std::io::Error| format!("{} ({})", describe_io(&e), pristine.display());
    let Some(written) = ended(tally, &mut rec, result, describe, LIBRARY_PANIC)? else {
        tally.append(&rec)?;
        return Err(dataset_failed(&rec, "generation"));
    };
    rec.files = Some(written.files);
    rec.bytes = Some(written.file_bytes);
    rec.ok = true;
    tally.append(&rec)
}

/// An earlier round's dataset of the same parameters, moved in from the
/// store (an interleaved run: [`crate::run::dataset_store`]) and
/// recorded as this run's `generate` step, its argv saying where it came
/// from. False when there is none: it is generated then.
fn take_kept_dataset(
    ws: &Workspace,
    tally: &mut Tally,
    store: &DatasetStore,
    rec: &mut StepRecord,
    started: Instant,
) -> Result<bool, Halt> {
    let manifest_file = tally.ev.manifest_path(GENERATED);
    let Some(taken) = store.take(&ws.params, &ws.pristine, &manifest_file) else {
        return Ok(false);
    };
    let (files, bytes) = tally.ev.count_manifest(GENERATED)?;
    rec.argv = vec![
        "mv".to_string(),
        path_str(&taken.from),
        path_str(&ws.pristine),
    ];
    rec.wall_secs = started.elapsed().as_secs_f64();
    rec.files = Some(files);
    rec.bytes = Some(bytes);
    rec.ok = true;
    tally.append(rec)?;
    Ok(true)
}

/// After the run: its dataset moved into the store when its round says
/// a later round wants it. A failure only costs that round a new
/// generation: a warning.
pub(super) fn keep_dataset(
    ctx: &Context,
    ws: &Workspace,
    tally: &mut Tally,
    svc: &Services,
) -> Result<(), Halt> {
    let Some(store) = svc
        .datasets
        .as_ref()
        .filter(|_| svc.keeps_dataset(ctx.plan))
    else {
        return Ok(());
    };
    if !ws.pristine.is_dir() {
        return Ok(());
    }
    let manifest_file = tally.ev.manifest_path(GENERATED);
    if let Err(e) = store.keep(&ws.params, &ws.pristine, &manifest_file) {
        tally.warn_once(format!(
            "the dataset could not be kept for the next round ({e}): that round generates it again"
        ))?;
    }
    Ok(())
}

/// A pristine source tree for this tool cycle, recorded as an untimed
/// `generate` step of the tool and cycle: the previous tool cycle's,
/// reset, or else a copy of the generated one.
pub(super) fn prepare_source(
    ctx: &Context,
    ws: &mut Workspace,
    tally: &mut Tally,
    svc: &mut Services,
    tc: &ToolCycle,
) -> Result<bool, Halt> {
    let kept = ws.kept_source();
    if std::fs::symlink_metadata(&kept).is_ok() {
        if std::fs::rename(&kept, &tc.vars.source).is_ok() {
            return reset_source(ctx, ws, tally, tc);
        }
        // Not movable (it should always be): start from a copy instead.
        remove_tree(&kept, tally);
    }
    let argv = vec![
        "cp".to_string(),
        "-a".to_string(),
        "--reflink=auto".to_string(),
        path_str(&ws.pristine),
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
    let mut commands = Commands {
        ctx,
        ws: &*ws,
        tally: &mut *tally,
        svc,
    };
    let rec = commands.measured_step(tc, &how, argv, PathBuf::from(&tc.vars.work), &env)?;
    let ok = rec.ok;
    tally.append(&rec)?;
    ws.source_reusable = ok;
    Ok(ok)
}

/// The previous tool cycle's source tree, made pristine again in place.
fn reset_source(
    ctx: &Context,
    ws: &mut Workspace,
    tally: &mut Tally,
    tc: &ToolCycle,
) -> Result<bool, Halt> {
    ctx.check_stop()?;
    let (mut rec, started) = tally.start_step(tc, Step::GENERATE)?;
    let (pristine, source, params) = (
        ws.pristine.clone(),
        PathBuf::from(&tc.vars.source),
        ws.params,
    );
    // What every change round of the protocol touched goes back.
    let seeds: Vec<u64> = (1..=change_rounds(ctx.plan))
        .map(|round| ws.change_seed_of(round))
        .collect();
    let real = match ws.real_tree.as_ref().map(RealTree::touched).transpose() {
        Ok(real) => real,
        Err(e) => {
            rec.error = Some(format!(
                "cannot read the change's plan to reset the source tree: {}",
                describe_io(&e)
            ));
            ws.source_reusable = false;
            tally.append(&rec)?;
            return Ok(false);
        }
    };
    let result = ctx.in_process(tally, Step::GENERATE, move |_| {
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
    let describe = |e: std::io::Error| {
        format!(
            "cannot reset the source tree {} to the generated one: {}",
            tc.vars.source,
            describe_io(&e)
        )
    };
    if let Some(stats) = ended(tally, &mut rec, result, describe, RESET_PANIC)? {
        rec.ok = true;
        rec.files = Some(stats.entries_written);
        rec.bytes = Some(stats.bytes_written);
    }
    ws.source_reusable = rec.ok;
    let ok = rec.ok;
    tally.append(&rec)?;
    Ok(ok)
}

/// The protocol's change rounds (`change` steps) per tool cycle.
fn change_rounds(plan: &Plan) -> u64 {
    labrun_evidence::protocol::flat(&plan.protocol)
        .filter(|s| matches!(s, labrun_evidence::ProtocolStep::Change { .. }))
        .count() as u64
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
    ctx: &Context,
    ws: &mut Workspace,
    tally: &mut Tally,
    tc: &ToolCycle,
    name: &Step,
    round: u64,
) -> Result<bool, Halt> {
    ctx.check_stop()?;
    let (mut rec, started) = tally.start_step(tc, name.clone())?;
    let (dir, params, seed) = (
        PathBuf::from(&tc.vars.source),
        ws.params,
        ws.change_seed_of(round),
    );
    let manifest_name = changed_manifest(round);
    if ws.real_tree.is_some() {
        return real_tree::change_real_tree(ctx, ws, tally, tc, rec, started, round);
    }
    // The new manifest is written as the tree is rescanned, never held
    // (issue 31: a million files), and compared with the run's first
    // (`same_tree.rs`).
    let slot = ws.manifest_slot(&tally.ev, tc, &manifest_name)?;
    let written = slot.path.clone();
    let result = ctx.in_process(tally, name.clone(), move |progress| {
        labrun_dataset::apply_change_to_file(&dir, &params, seed, &written, progress)
    });
    rec.wall_secs = started.elapsed().as_secs_f64();
    let describe = |e: std::io::Error| format!("{} ({})", describe_io(&e), tc.vars.source);
    if let Some(manifest) = ended(tally, &mut rec, result, describe, LIBRARY_PANIC)? {
        rec.ok = true;
        ws.settle_manifest(
            slot,
            &manifest.sha256,
            &mut rec,
            "the changed tree",
            "the dataset change is not deterministic, a bug in labrun",
        )?;
    }
    let ok = rec.ok;
    tally.append(&rec)?;
    Ok(ok)
}

/// The metadata-fidelity fixture, written into `dir` (untimed, recorded
/// as `fixture`). Seeded like the dataset: the same tree in every tool
/// cycle, its manifest kept once as `manifests/fidelity.jsonl`.
pub(super) fn write_fixture(
    ctx: &Context,
    ws: &mut Workspace,
    tally: &mut Tally,
    tc: &ToolCycle,
    dir: &Path,
) -> Result<bool, Halt> {
    ctx.check_stop()?;
    let (mut rec, started) = tally.start_step(tc, Step::FIXTURE)?;
    let (out, seed) = (dir.to_path_buf(), ws.params.seed);
    let result = ctx.in_process(tally, Step::FIXTURE, move |_| {
        labrun_dataset::fidelity::write_fixture(&out, seed)
    });
    rec.wall_secs = started.elapsed().as_secs_f64();
    let describe = |e: std::io::Error| {
        format!(
            "cannot write the fidelity fixture in {}: {}",
            dir.display(),
            describe_io(&e)
        )
    };
    if let Some(manifest) = ended(tally, &mut rec, result, describe, LIBRARY_PANIC)? {
        rec.ok = true;
        rec.files = Some(file_count(&manifest));
        rec.bytes = Some(manifest.total_file_bytes());
        let slot = ws.manifest_slot(&tally.ev, tc, FIXTURE)?;
        let digest = tally.ev.write_manifest(&slot.path, &manifest)?;
        ws.settle_manifest(
            slot,
            &digest,
            &mut rec,
            "the fidelity fixture",
            "a bug in labrun, or a filesystem that changed under the run",
        )?;
    }
    let ok = rec.ok;
    tally.append(&rec)?;
    Ok(ok)
}
