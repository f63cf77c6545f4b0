//! Everything that stops a comparison, each with what to do about it.

use crate::error::ReportError;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error(transparent)]
    Evidence(#[from] ReportError),

    #[error("{what} {value} is out of range: use {expected}")]
    Setting {
        what: &'static str,
        value: String,
        expected: &'static str,
    },

    #[error(
        "no tool {tool:?} in run {run} (it has {present}); pass one of those names to --{role}"
    )]
    NoSuchTool {
        tool: String,
        run: String,
        present: String,
        role: &'static str,
    },

    #[error(
        "--baseline and --candidate both name {tool:?}: a comparison needs two different tools of the run (e.g. restic@0.14.0 and restic@0.19.1), or two runs"
    )]
    SameTool { tool: String },

    #[error(
        "{baseline} and {candidate} share no cycle in which both have an ok record of a timed step, so there is no pair to compare; check the failed steps in summary.md and run `labrun bench` with both tools again"
    )]
    NoPair { baseline: String, candidate: String },

    #[error(
        "the two runs were measured on different machines, so their times are not comparable: {differences}; compare runs of one machine, or pass --force to compare anyway (the report then names the difference)"
    )]
    DifferentMachines { differences: String },

    #[error(
        "the two runs measured different work, so their figures are not comparable: {differences}; compare runs of one dataset and protocol, or pass --force to compare anyway (every output then names the difference)"
    )]
    DifferentDatasets { differences: String },

    #[error(
        "cannot write {path}: {source}; check that the run folder is writable and the disk is not full"
    )]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("cannot render the comparison as JSON: {0}")]
    Json(#[from] serde_json::Error),
}
