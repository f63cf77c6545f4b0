//! Every tool cycle must make the same tree at each point of the protocol
//! (each change round, each commit of a series, the fidelity fixture): the
//! run's first manifest of it is kept in the evidence as
//! `manifests/<name>.jsonl`; a later cycle's is written beside it, compared
//! by digest, removed when it is the same and kept, the step failed, when it
//! is not. "First" is the evidence's: a plan that continues a run (an
//! interleaved round, `--until-conclusive`) is compared with the cycles an
//! earlier agent ran, not taken for the first.

use super::workspace::Workspace;
use super::{Halt, ToolCycle};
use crate::run::error::RunError;
use crate::run::evidence::Evidence;
use labrun_evidence::StepRecord;
use std::path::PathBuf;

/// Where one tool cycle's manifest of a tree goes, and what it must match.
pub(super) struct ManifestSlot {
    name: String,
    /// `name`, or `name-c<cycle>-<tool>` when the run already has one.
    kept_as: String,
    first: Option<String>,
    /// No earlier cycle of this agent wrote the work folder's copy with
    /// paths (a private tree's, which the verifies read): this one does.
    pub writes_plain: bool,
    /// In the evidence: where this cycle's manifest is written.
    pub path: PathBuf,
}

impl Workspace {
    /// The slot for tool cycle `tc`'s manifest `name` in the evidence `ev`.
    pub(super) fn manifest_slot(
        &mut self,
        ev: &Evidence,
        tc: &ToolCycle,
        name: &str,
    ) -> Result<ManifestSlot, Halt> {
        let writes_plain = !self.first_manifests.contains_key(name);
        let first = match self.first_manifests.get(name) {
            Some(digest) => Some(digest.clone()),
            None => {
                let path = ev.manifest_path(name);
                match labrun_evidence::digest::sha256_file(&path) {
                    Ok(digest) => {
                        self.first_manifests
                            .insert(name.to_string(), digest.clone());
                        Some(digest)
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                    Err(e) => return Err(RunError::io("cannot read manifest", &path, e).into()),
                }
            }
        };
        let kept_as = match first {
            None => name.to_string(),
            Some(_) => format!("{name}-c{}-{}", tc.cycle, tc.tool.name),
        };
        Ok(ManifestSlot {
            path: ev.manifest_path(&kept_as),
            name: name.to_string(),
            kept_as,
            first,
            writes_plain,
        })
    }

    /// Settles the slot once its manifest is written with `digest`: the
    /// first is remembered, the same is removed, and one that differs fails
    /// `rec` with `what` (the tree, for the message) and `why` (the likely
    /// cause).
    pub(super) fn settle_manifest(
        &mut self,
        slot: ManifestSlot,
        digest: &str,
        rec: &mut StepRecord,
        what: &str,
        why: &str,
    ) -> Result<(), Halt> {
        let ManifestSlot {
            name,
            kept_as,
            first,
            path,
            ..
        } = slot;
        match first {
            None => {
                self.first_manifests.insert(name, digest.to_string());
            }
            Some(first) if first == digest => {
                std::fs::remove_file(&path)
                    .map_err(|e| RunError::io("cannot remove evidence file", &path, e))?;
            }
            Some(_) => {
                rec.ok = false;
                rec.error = Some(format!(
                    "{what} differs from the first tool cycle's (manifests/{name}.jsonl vs manifests/{kept_as}.jsonl): {why}"
                ));
            }
        }
        Ok(())
    }
}
