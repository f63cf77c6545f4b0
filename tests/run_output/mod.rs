//! Reading what `labrun bench` left under `--results`, for the end-to-end
//! tests (with or without a VM).

use std::path::{Path, PathBuf};

/// The one run folder under `results` (a test's results folder is fresh).
pub fn only_run_dir(results: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(results)
        .expect("results dir")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(dirs.len(), 1, "one run folder expected: {dirs:?}");
    dirs[0].clone()
}

/// The run's evidence records, one JSON value per step (none yet: empty).
pub fn records(run: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run.join("raw/records.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("record is JSON"))
        .collect()
}
