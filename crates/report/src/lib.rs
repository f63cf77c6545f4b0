//! Summaries of a run, made from its raw evidence alone.
//!
//! `results/<run-id>/raw/` holds what the agent and `bench` recorded; this
//! crate reads it ([`evidence::load`]), computes per tool and phase the
//! median with min-max range over cycles ([`summarize`]), and writes
//! `summary.md`, `summary.json`, `summary.csv` and SVG charts beside `raw/`
//! ([`export::write_all`]). Nothing but `raw/` is read, so a summary can be
//! re-made, and checked, by anyone who has the evidence. [`compare`] judges
//! two tools of a run, or two runs, against each other. [`pack`] makes a
//! run one file with a SHA-256 manifest and opens one as a folder.
//!
//! ```no_run
//! let run = std::path::Path::new("results/default-20261129T1851Z-3fa2c1");
//! let (summary, written) = labrun_report::make_report(run)?;
//! print!("{}", labrun_report::render_terminal(&summary));
//! # Ok::<(), labrun_report::ReportError>(())
//! ```

mod checks;
pub mod compare;
pub mod environment;
pub mod error;
pub mod evidence;
pub mod evidence_file;
pub mod export;
pub mod fidelity;
pub mod figures;
pub mod format;
pub mod history;
mod host_noise;
pub mod machine_class;
pub mod meter_cost;
pub mod pack;
pub mod phase_figures;
pub mod questions;
pub mod roles;
pub mod runs;
pub mod sample;
pub mod stats;
pub mod summary;
pub mod timeline;
pub mod trend;
pub mod variants;
pub mod warning;

pub use environment::{ENVIRONMENT_FILE, Environment, Machine};
pub use error::{ReportError, Result};
pub use evidence::{RAW_DIR, TOOL_SOURCES_FILE, ToolSource};
pub use export::terminal::render_terminal;
pub use export::{Exporter, exporters, write_all};
pub use machine_class::MachineClass;
pub use sample::{Sample, SampleMetadata};
pub use stats::Stat;
pub use summary::{
    CheckOutcome, FailedStep, PhaseSummary, RestoreCheck, SUMMARY_VERSION, Summary, ToolSummary,
    summarize, summarize_raw,
};
pub use warning::{Warning, WarningKind};

use std::path::{Path, PathBuf};

/// Summarizes `run_dir/raw` and writes every summary file into `run_dir`.
/// Returns the summary and the paths written.
pub fn make_report(run_dir: &Path) -> Result<(Summary, Vec<PathBuf>)> {
    let summary = summarize(run_dir)?;
    let written = write_all(&summary, run_dir)?;
    Ok((summary, written))
}
