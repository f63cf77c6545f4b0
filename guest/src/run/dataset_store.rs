//! Generated datasets kept between the rounds of interleaved runs (a lab's
//! variants sharing a machine, cycle by cycle: see
//! [`labrun_evidence::Round`]). Each round is an agent run of its own whose
//! work tree is removed at its end; without this store every round would
//! generate its dataset again (minutes at the published scale).
//!
//! Layout: `<store>/<group>/<key>/{pristine/, manifest.jsonl}`, the key
//! naming the dataset's parameters; the store is a folder every run on the
//! machine shares (`run --datasets`; the host gives one per machine). Only the current group's entries
//! live: a plan of another group (or none) removes the rest, so a run killed
//! between rounds leaves nothing behind for long.

use labrun_dataset::DatasetParams;
use std::path::{Path, PathBuf};

/// The store's folder in the work folder when the command names none.
pub const DATASETS_DIR: &str = "datasets";
const PRISTINE: &str = "pristine";
const MANIFEST: &str = "manifest.jsonl";

pub struct DatasetStore {
    /// `<store>/<group>`.
    dir: PathBuf,
}

/// A kept dataset taken out of the store for this round.
pub struct Taken {
    /// Where it was kept (said in the evidence).
    pub from: PathBuf,
}

impl DatasetStore {
    /// The store of `group` (a round's plan), or none; every other group's
    /// entries are removed. Returns what could not be removed, as warnings.
    pub fn open(root: &Path, group: Option<&str>) -> (Option<DatasetStore>, Vec<String>) {
        let mut warnings = Vec::new();
        if let Ok(entries) = std::fs::read_dir(root) {
            for entry in entries.flatten() {
                if group.is_some_and(|g| entry.file_name() == g) {
                    continue;
                }
                if let Err(e) = std::fs::remove_dir_all(entry.path()) {
                    warnings.push(format!(
                        "cannot remove a dataset kept by an earlier run at {} ({e}): it takes disk space; delete it by hand",
                        entry.path().display()
                    ));
                }
            }
        }
        let store = group.map(|g| DatasetStore { dir: root.join(g) });
        (store, warnings)
    }

    /// The dataset of `params` moved to `pristine` and its manifest file
    /// copied to `manifest`, when the store holds it; `None` when it does
    /// not (or the move fails: the caller generates it then).
    pub fn take(&self, params: &DatasetParams, pristine: &Path, manifest: &Path) -> Option<Taken> {
        let entry = self.dir.join(key(params));
        let kept = entry.join(PRISTINE);
        if !kept.is_dir() || std::fs::copy(entry.join(MANIFEST), manifest).is_err() {
            return None;
        }
        if std::fs::rename(&kept, pristine).is_err() {
            let _ = std::fs::remove_file(manifest);
            return None;
        }
        // What is left is its manifest: the round that keeps it writes both.
        let _ = std::fs::remove_dir_all(&entry);
        Some(Taken { from: entry })
    }

    /// Moves `pristine` (the dataset of `params`, described by the manifest
    /// file `manifest`) into the store for a later round.
    pub fn keep(
        &self,
        params: &DatasetParams,
        pristine: &Path,
        manifest: &Path,
    ) -> std::io::Result<()> {
        let entry = self.dir.join(key(params));
        if entry.exists() {
            std::fs::remove_dir_all(&entry)?;
        }
        std::fs::create_dir_all(&entry)?;
        std::fs::copy(manifest, entry.join(MANIFEST))?;
        std::fs::rename(pristine, entry.join(PRISTINE))
    }
}

/// A folder name for the dataset's parameters: the same name is the same
/// tree (generation is deterministic for one agent, and a group is one run
/// of one agent).
fn key(params: &DatasetParams) -> String {
    let profile = serde_json::to_string(&params.profile).unwrap_or_default();
    format!(
        "seed{}-scale{}-{}",
        params.seed,
        params.scale,
        profile.trim_matches('"')
    )
    .replace(
        |c: char| !(c.is_ascii_alphanumeric() || "._-".contains(c)),
        "_",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(seed: u64) -> DatasetParams {
        DatasetParams::published(seed, 0.001)
    }

    fn dataset(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
        let tree = dir.join(name);
        std::fs::create_dir_all(tree.join("a")).unwrap();
        std::fs::write(tree.join("a/f"), b"data").unwrap();
        let manifest = dir.join(format!("{name}.jsonl"));
        std::fs::write(&manifest, b"{}\n").unwrap();
        (tree, manifest)
    }

    #[test]
    fn a_kept_dataset_is_taken_by_the_next_round_of_its_group_only() {
        let work = tempfile::tempdir().unwrap();
        let (tree, manifest) = dataset(work.path(), "gen");
        let (store, warnings) = DatasetStore::open(&work.path().join(DATASETS_DIR), Some("run-1"));
        assert!(warnings.is_empty());
        let store = store.unwrap();
        store.keep(&params(1), &tree, &manifest).unwrap();
        assert!(!tree.exists(), "moved, not copied");

        // Another seed is another dataset.
        let out = work.path().join("round2");
        let copied = work.path().join("round2.jsonl");
        assert!(store.take(&params(2), &out, &copied).is_none());
        let taken = store.take(&params(1), &out, &copied).unwrap();
        assert_eq!(std::fs::read(out.join("a/f")).unwrap(), b"data");
        assert_eq!(std::fs::read(&copied).unwrap(), b"{}\n");
        assert!(taken.from.starts_with(work.path().join("datasets/run-1")));
        // Taken once: the next round of the group keeps it again if it wants.
        assert!(
            store
                .take(&params(1), &work.path().join("x"), &copied)
                .is_none()
        );
    }

    #[test]
    fn a_plan_of_another_group_or_none_removes_what_was_kept() {
        let work = tempfile::tempdir().unwrap();
        let (tree, manifest) = dataset(work.path(), "gen");
        let (store, _) = DatasetStore::open(&work.path().join(DATASETS_DIR), Some("old"));
        store.unwrap().keep(&params(1), &tree, &manifest).unwrap();
        let (store, warnings) = DatasetStore::open(&work.path().join(DATASETS_DIR), Some("new"));
        assert!(warnings.is_empty());
        assert!(!work.path().join("datasets/old").exists());
        let (tree, manifest) = dataset(work.path(), "gen2");
        store.unwrap().keep(&params(1), &tree, &manifest).unwrap();
        let (store, _) = DatasetStore::open(&work.path().join(DATASETS_DIR), None);
        assert!(store.is_none());
        assert!(!work.path().join("datasets/new").exists());
    }
}
