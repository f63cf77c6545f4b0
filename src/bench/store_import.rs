//! `bench` imports the runs it wrote into the results store when it ends.
//! The run folders written during this `bench` are the ones absent before
//! it began. An import that fails is a warning, never a lost run: the
//! folder stays where it is, and the warning says how to import it later.

use labrun_store::Location;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The run folders in `results` now (none when it does not exist yet).
pub fn run_folders(results: &Path) -> BTreeSet<PathBuf> {
    let Ok(entries) = std::fs::read_dir(results) else {
        return BTreeSet::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|p| p.join(labrun_report::RAW_DIR).is_dir())
        .collect()
}

/// What became of each new run folder.
#[derive(Debug, Default)]
pub struct Outcome {
    /// One line per run imported.
    pub imported: Vec<String>,
    /// One line per run that could not be imported, with how to do it later.
    pub warnings: Vec<String>,
}

/// Imports each folder in `results` that `before` did not hold.
pub fn import_new(store: &Location, results: &Path, before: &BTreeSet<PathBuf>) -> Outcome {
    let new: Vec<PathBuf> = run_folders(results)
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    let mut outcome = Outcome::default();
    if new.is_empty() {
        return outcome;
    }
    let later = |dir: &Path| {
        format!(
            "the run stays in {}; import it later with `labrun import '{}' --db '{store}'`",
            dir.display(),
            dir.display(),
        )
    };
    let mut opened = match labrun_store::Store::connect(store) {
        Ok(s) => s,
        Err(e) => {
            outcome.warnings = new
                .iter()
                .map(|d| format!("not imported: {e}; {}", later(d)))
                .collect();
            return outcome;
        }
    };
    for d in &new {
        for (label, result) in opened.import_all(d, None) {
            match result {
                Ok(i) => outcome.imported.push(format!(
                    "run {label} imported into the results store {store} as sha256:{}",
                    &i.digest()[..12]
                )),
                Err(e) => outcome
                    .warnings
                    .push(format!("not imported: {e}; {}", later(d))),
            }
        }
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_folder(results: &Path, name: &str) -> PathBuf {
        let dir = results.join(name);
        std::fs::create_dir_all(dir.join("raw")).unwrap();
        dir
    }

    #[test]
    fn only_folders_written_since_are_imported_and_a_failure_keeps_the_run() {
        let tmp = tempfile::tempdir().unwrap();
        let results = tmp.path().join("results");
        run_folder(&results, "old");
        let before = run_folders(&results);
        // An empty raw/ is no run the store takes: the import fails, and
        // the warning names the folder it stays in and how to import it.
        let new = run_folder(&results, "new");
        let db = Location::Sqlite(tmp.path().join("store/runs.sqlite"));
        let warnings = import_new(&db, &results, &before).warnings;
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("labrun import"), "{warnings:?}");
        assert!(
            warnings[0].contains(&new.display().to_string()),
            "{warnings:?}"
        );
        assert!(!warnings[0].contains("/old"), "{warnings:?}");
        assert!(new.join("raw").is_dir());
    }

    #[test]
    fn a_new_pack_run_folder_is_imported() {
        let tmp = tempfile::tempdir().unwrap();
        let results = tmp.path().join("results");
        std::fs::create_dir_all(&results).unwrap();
        let before = run_folders(&results);
        let pack = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("docs/fidelity/default-20261201T144749Z-2ab023.tar.gz");
        let opened = labrun_report::pack::open(&pack).unwrap();
        let status = std::process::Command::new("cp")
            .arg("-r")
            .arg(opened.dir())
            .arg(results.join("run"))
            .status()
            .unwrap();
        assert!(status.success());
        let db = Location::Sqlite(tmp.path().join("runs.sqlite"));
        let outcome = import_new(&db, &results, &before);
        assert!(outcome.warnings.is_empty(), "{:?}", outcome.warnings);
        assert_eq!(outcome.imported.len(), 1);
        let mut store = labrun_store::Store::connect(&db).unwrap();
        assert_eq!(store.runs(&Default::default()).unwrap().len(), 1);
    }
}
