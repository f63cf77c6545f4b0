//! The `verify` step: the restore target hashed and compared with the
//! manifest of the tree its snapshot was made of, while what the cycle no
//! longer needs is removed beside it (in the background: the next timed
//! step waits for it).

use super::{Halt, LIBRARY_PANIC, Runner, ToolCycle};
use crate::run::interrupt::InProcess;
use labrun_evidence::{Manifest, Step};
use std::path::PathBuf;

impl<'p> Runner<'p> {
    /// The verify step of a restore: hashes `{target}` and compares it with
    /// the manifest named `manifest`; `differs` opens the error of a
    /// mismatch; `over`: the restore went over an older tree, whose extra
    /// files the tool's mode may keep (reported, not failed). The trees in `done_with` are removed on another thread while
    /// it hashes and after (the caller has checked for a stop request).
    pub(super) fn verify_tree(
        &mut self,
        tc: &ToolCycle,
        name: &Step,
        manifest: &str,
        differs: &str,
        over: bool,
        done_with: Vec<PathBuf>,
    ) -> Result<bool, Halt> {
        // Beside the hashing, and on until the next timed step needs the disk.
        self.remove_in_background(done_with);
        let (mut rec, started) = self.start_step(tc, name.clone())?;
        let manifest_path = self.ev.manifest_path(manifest);
        let target = PathBuf::from(&tc.vars.target);
        let fidelity = manifest == super::FIXTURE;
        // A private tree's manifests in the evidence hold hashed paths, in
        // the order of the hashes, which no walk follows: its copy in the
        // work folder (with its paths) is what the restore is compared
        // with, and what the verify says is hashed as the evidence is.
        let private = self.tree_is_private() && !fidelity;
        let plain = self.plain_manifest_path(manifest);
        // The manifest is read on the worker and freed with it: the agent
        // holds no manifest while a tool runs. A tree's manifest is read as
        // it comes and merged with the sorted walk of the restore (issue 31:
        // millions of files); the fixture's is small: read whole, as is a
        // private manifest whose work copy is gone (every one is written
        // with it; a work folder cleared under the run would lose it: the
        // verify then still runs, holding the tree).
        let result = self.in_process(Step::VERIFY, move |_| {
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
        match result {
            InProcess::Done(Ok(mut outcome)) => {
                if over {
                    judge_older_files(&mut outcome);
                }
                rec.ok = outcome.passed;
                rec.files = Some(outcome.files_checked);
                rec.bytes = Some(outcome.bytes_checked);
                if !outcome.passed {
                    rec.error = Some(format!(
                        "{differs}: {} missing, {} extra, {} changed{}",
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
            InProcess::Done(Err(e)) => rec.error = Some(e),
            InProcess::Stopped(signal) => return self.interrupted(&mut rec, signal),
            InProcess::Died => rec.error = Some(LIBRARY_PANIC.into()),
        }
        let ok = rec.ok;
        self.append(&rec)?;
        Ok(ok)
    }
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
