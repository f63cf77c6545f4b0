//! `labrun compare` as a library call: load the run folders, refuse runs
//! measured on different machines or of different datasets or protocols,
//! compare, write `compare.md` and
//! `compare.json` into the candidate's run folder.

use super::build::{compare_paired, compare_unpaired};
use super::datasets;
use super::error::CompareError;
use super::machines;
use super::model::Comparison;
use super::render;
use super::settings::Settings;
use crate::evidence;
use std::path::{Path, PathBuf};

pub const MARKDOWN_FILE: &str = "compare.md";
pub const JSON_FILE: &str = "compare.json";
pub const HTML_FILE: &str = "compare.html";

/// What to compare: two tools of one run, or a tool of each of two runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    Paired {
        run: PathBuf,
        baseline: String,
        candidate: String,
    },
    Unpaired {
        baseline_run: PathBuf,
        candidate_run: PathBuf,
        baseline: String,
        candidate: String,
        /// Compare even when the runs' machines differ (named in warnings).
        force: bool,
    },
}

impl Request {
    /// The folder the reports are written into: the candidate's run.
    pub fn candidate_run(&self) -> &Path {
        match self {
            Request::Paired { run, .. } => run,
            Request::Unpaired { candidate_run, .. } => candidate_run,
        }
    }
}

/// Loads the evidence and compares it.
pub fn compare(request: &Request, settings: &Settings) -> Result<Comparison, CompareError> {
    settings.validate()?;
    match request {
        Request::Paired {
            run,
            baseline,
            candidate,
        } => compare_paired(&evidence::load(run)?, baseline, candidate, settings),
        Request::Unpaired {
            baseline_run,
            candidate_run,
            baseline,
            candidate,
            force,
        } => {
            let a = evidence::load(baseline_run)?;
            let b = evidence::load(candidate_run)?;
            let differences = machines::differences(a.environment.as_ref(), b.environment.as_ref());
            if !differences.is_empty() && !force {
                return Err(CompareError::DifferentMachines {
                    differences: differences.join("; "),
                });
            }
            let work = datasets::differences(
                baseline_run,
                a.plan.as_ref(),
                candidate_run,
                b.plan.as_ref(),
            );
            if !work.is_empty() && !force {
                return Err(CompareError::DifferentDatasets {
                    differences: work.join("; "),
                });
            }
            let mut comparison = compare_unpaired(&a, baseline, &b, candidate, settings)?;
            comparison.warnings.extend(
                differences
                    .into_iter()
                    .map(|d| format!("compared with --force although the machines differ: {d}"))
                    .chain(work.into_iter().map(|d| {
                        format!(
                            "compared with --force although the dataset or protocol differs: {d}"
                        )
                    })),
            );
            Ok(comparison)
        }
    }
}

/// Writes `compare.md`, `compare.json` and `compare.html` (the verdict
/// table and method on one self-contained page) into `dir`; returns their
/// paths.
pub fn write(comparison: &Comparison, dir: &Path) -> Result<Vec<PathBuf>, CompareError> {
    let json = to_json(comparison)?;
    let files = [
        (MARKDOWN_FILE, render::markdown(comparison)),
        (JSON_FILE, json),
        (HTML_FILE, crate::export::html::comparison_page(comparison)),
    ];
    let mut written = Vec::new();
    for (name, text) in files {
        let path = dir.join(name);
        write_atomically(&path, text.as_bytes())?;
        written.push(path);
    }
    Ok(written)
}

/// The comparison as pretty JSON, control characters in strings escaped.
pub fn to_json(comparison: &Comparison) -> Result<String, CompareError> {
    let json = serde_json::to_string_pretty(comparison)?;
    Ok(labrun_evidence::printable::printable_json(&json).into_owned() + "\n")
}

/// The report's one atomic writer (whole or absent), its error said as a
/// comparison's.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), CompareError> {
    crate::export::write_atomically(path, bytes).map_err(|e| match e {
        crate::ReportError::Write { path, source } => CompareError::Write { path, source },
        other => CompareError::Evidence(other),
    })
}
