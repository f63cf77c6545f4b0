//! The `verify` step: the restore target hashed and compared with the
//! manifest of the tree its snapshot was made of, while what the cycle no
//! longer needs is removed beside it (in the background: the next timed
//! step waits for it).

use super::context::Context;
use super::in_process::{LIBRARY_PANIC, ended};
use super::tally::Tally;
use super::workspace::Workspace;
use super::{CHANGED, FIXTURE, GENERATED, Halt, ToolCycle};
use labrun_evidence::{Manifest, Step};
use std::path::PathBuf;

/// The verify step of a restore: hashes `{target}` and compares it with
/// the manifest named `manifest`; `over`: the restore went over an older
/// tree, whose extra files the tool's mode may keep (reported, not
/// failed). The caller has checked for a stop request, and set what the
/// cycle is done with to be removed beside it.
pub(super) fn verify_tree(
    ctx: &Context,
    ws: &Workspace,
    tally: &mut Tally,
    tc: &ToolCycle,
    name: &Step,
    manifest: &str,
    over: bool,
) -> Result<bool, Halt> {
    let (mut rec, started) = tally.start_step(tc, name.clone())?;
    let manifest_path = tally.ev.manifest_path(manifest);
    let target = PathBuf::from(&tc.vars.target);
    let fidelity = manifest == FIXTURE;
    // A private tree's manifests in the evidence hold hashed paths, in
    // the order of the hashes, which no walk follows: its copy in the
    // work folder (with its paths) is what the restore is compared
    // with, and what the verify says is hashed as the evidence is.
    let private = ws.private && !fidelity;
    let plain = ws.plain_manifest_path(manifest);
    // The manifest is read on the worker and freed with it: the agent
    // holds no manifest while a tool runs. A tree's manifest is read as
    // it comes and merged with the sorted walk of the restore (issue 31:
    // millions of files); the fixture's is small: read whole, as is a
    // private manifest whose work copy is gone (every one is written
    // with it; a work folder cleared under the run would lose it: the
    // verify then still runs, holding the tree).
    let result = ctx.in_process(tally, Step::VERIFY, move |_| {
        if !fidelity && !private {
            return labrun_dataset::verify_against_file(&target, &manifest_path)
                .map_err(|e| format!("{e} ({})", target.display()));
        }
        if private && plain.exists() {
            return labrun_dataset::verify_against_file(&target, &plain)
                .map(hash_named_paths)
                .map_err(|e| {
                    format!(
                        "{} ({})",
                        super::real_tree::scan_error(e, &target, true),
                        target.display()
                    )
                });
        }
        let manifest = std::fs::File::open(&manifest_path)
            .and_then(|f| Manifest::read_from(std::io::BufReader::new(f)))
            .map_err(|e| format!("cannot read {}: {e}", manifest_path.display()))?;
        // The fixture's manifest records metadata: compare it too.
        if fidelity {
            labrun_dataset::verify_fidelity(&target, &manifest)
        } else {
            labrun_dataset::scan(&target)
                .map(|found| labrun_dataset::compare(&manifest, &found.with_hashed_paths()))
        }
        .map_err(|e| format!("{e} ({})", target.display()))
    });
    rec.wall_secs = started.elapsed().as_secs_f64();
    let checked = ended(tally, &mut rec, result, |e| e, LIBRARY_PANIC)?;
    if let Some(mut outcome) = checked {
        if over {
            judge_older_files(&mut outcome);
        }
        rec.ok = outcome.passed;
        rec.files = Some(outcome.files_checked);
        rec.bytes = Some(outcome.bytes_checked);
        if !outcome.passed {
            rec.error = Some(format!(
                "{}: {} missing, {} extra, {} changed{}",
                differs(manifest),
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
    let ok = rec.ok;
    tally.append(&rec)?;
    Ok(ok)
}

/// A restore over an older tree: every file of the snapshot present and
/// right passes, and whether the older tree's extra files are still there
/// is said (`older_files`) rather than failed: a tool's documented mode
/// decides it (borg's `extract` never deletes). A missing or changed file
/// still fails.
fn judge_older_files(outcome: &mut labrun_evidence::VerifyOutcome) {
    if outcome.missing > 0 || outcome.changed > 0 {
        return;
    }
    outcome.older_files = Some(match outcome.extra {
        0 => labrun_evidence::OlderFiles::Removed,
        _ => labrun_evidence::OlderFiles::Kept,
    });
    outcome.passed = true;
}

/// A private tree's verify outcome as the evidence may hold it: each
/// difference (`changed: PATH`) named by its path's hash, as the manifests
/// name it.
fn hash_named_paths(mut outcome: labrun_evidence::VerifyOutcome) -> labrun_evidence::VerifyOutcome {
    for d in &mut outcome.first_differences {
        *d = match d.split_once(": ") {
            Some((what, path)) => {
                format!("{what}: {}", labrun_evidence::manifest::hashed_path(path))
            }
            None => labrun_evidence::manifest::hashed_path(d),
        };
    }
    outcome
}

/// What a failed verify says, by the tree it compared with.
fn differs(manifest: &str) -> String {
    match manifest {
        GENERATED => "the restored tree differs from the generated source".into(),
        FIXTURE => "the restored fidelity fixture differs from the one written".into(),
        CHANGED => "the restored tree differs from the changed source".into(),
        m => match super::history::commit_of_manifest(m) {
            Some(k) => format!("the restore of snapshot {k} differs from commit {k}"),
            None => "the restored tree differs from the changed source of its snapshot".into(),
        },
    }
}
