//! The run's trees and what is known of them: the work folder, the
//! pristine tree, a real tree's change plans, a private tree's names, the
//! dataset's parameters and the first manifest of each tree every tool
//! cycle must make alike (`same_tree.rs`).

use super::tally::Tally;
use super::{Halt, PLAIN_MANIFESTS, real_tree};
use crate::run::error::RunError;
use crate::run::private_paths::PathRedactor;
use crate::run::remove::remove_trees;
use crate::run::scrub::scrub_file;
use labrun_dataset::DatasetParams;
use labrun_evidence::ToolPlan;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub(super) struct Workspace {
    /// `DIR/<run_id>` under `--work DIR`.
    pub root: PathBuf,
    pub pristine: PathBuf,
    /// The run made the pristine tree and removes it at its end; false for
    /// a folder read in place (a user's: never written, never removed).
    pub pristine_is_ours: bool,
    /// A real tree's manifest and changes ([`real_tree`]).
    pub real_tree: Option<real_tree::RealTree>,
    /// The dataset's paths stay out of the evidence.
    pub private: bool,
    /// A private tree's paths, hashed in every tool log (empty otherwise).
    pub private_paths: PathRedactor,
    pub params: DatasetParams,
    pub change_seed: u64,
    /// Digests of the run's first manifests of its trees (each change
    /// round's, each commit's, the fidelity fixture's), by name, as this
    /// agent wrote or read them (`same_tree.rs`).
    pub(super) first_manifests: BTreeMap<String, String>,
    /// The current tool cycle's source tree was made pristine, so the next
    /// tool cycle may reset it rather than copy the dataset again.
    pub source_reusable: bool,
}

impl Workspace {
    /// Between tool cycles the source tree waits here.
    pub fn kept_source(&self) -> PathBuf {
        self.root.join("source")
    }

    /// Where a private tree's manifest `name` is kept with its paths: in
    /// the work folder (on the tree's own machine, removed with it at the
    /// end of the run), never in the evidence. A verify merges it with the
    /// sorted walk of a restore as it reads it, as it does a public tree's
    /// manifest, instead of holding both trees hashed and sorted by hash.
    pub fn plain_manifest_path(&self, name: &str) -> PathBuf {
        self.root
            .join(PLAIN_MANIFESTS)
            .join(format!("{name}.jsonl"))
    }

    /// Moves a private tree's names out of memory into the work folder for
    /// the rest of the run (see [`PathRedactor::park`]); should that fail,
    /// they stay in memory, where they work as well, and a warning says so.
    pub fn park_private_names(&mut self, tally: &mut Tally) {
        let path = self.root.join("private-names.u64");
        if let Err(e) = self.private_paths.park(&path) {
            let _ = tally.warn_once(format!(
                "cannot write {} ({e}): the private tree's names stay in the agent's memory (8 bytes a name) for the run",
                path.display()
            ));
        }
    }

    /// Secret values of `tool`, and a private tree's paths, out of the
    /// given logs.
    pub fn scrub(&self, tool: &ToolPlan, logs: &[&Path]) -> Result<(), Halt> {
        let secrets: Vec<&str> = tool
            .secret_env
            .iter()
            .filter_map(|k| tool.env.get(k))
            .map(String::as_str)
            .collect();
        for log in logs {
            match scrub_file(log, &secrets) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(RunError::io("cannot redact secrets in tool log", log, e).into());
                }
            }
            self.private_paths.redact_file(log).map_err(|e| {
                RunError::io("cannot hash the private tree's paths in tool log", log, e)
            })?;
        }
        Ok(())
    }

    /// Round 1 is the published change (`change_seed`), round k uses
    /// `change_seed + k - 1`.
    pub fn change_seed_of(&self, round: u64) -> u64 {
        self.change_seed.wrapping_add(round.saturating_sub(1))
    }
}

/// Removes a finished tree; a failure only costs disk space, so it is a
/// warning, not a stop.
pub(super) fn remove_tree(dir: &Path, tally: &mut Tally) {
    let failed = remove_trees(&[dir.to_path_buf()]);
    tally.warn_removal(&failed);
}
