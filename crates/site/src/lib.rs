//! `labrun site OUT`: a static dashboard of the results store (issue 45,
//! items 3 and 5). An index of tools x datasets x machine classes; per
//! tool, a trend chart per measure across its runs, one line per dataset
//! and machine class, each point a link to that run's own `report.html`
//! (the report crate's exporter, from the run's kept pack), steps compare
//! found slower or faster flagged; per dataset, the tools side by side per
//! machine class and the best per step.
//!
//! Every page is the report page's document (its strict content policy,
//! its style, its few lines of sorting script); charts are inline SVG, so
//! the site opens from `file://` or any web server and loads nothing from
//! elsewhere. Strings from packs pass the report's one escaping rule.
//!
//! The store is read through `runs` and `pack` only; each run's lab,
//! tools, dataset and environment come from its kept pack, read as
//! `labrun report` reads it.

mod chain;
mod chart;
mod error;
mod lines;
mod load;
mod markup;
mod measure;
pub mod names;
mod out_dir;
mod page_dataset;
mod page_index;
mod page_tool;
mod trend_text;

pub use error::SiteError;
pub use load::Skipped;
pub use measure::{MEASURES, Measure};
pub use out_dir::MARKER;
pub use trend_text::trend;

use labrun_report::Exporter as _;
use labrun_report::compare::Settings;
use labrun_store::Store;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// What a build wrote.
#[derive(Debug)]
pub struct Built {
    pub out: PathBuf,
    /// Runs shown.
    pub runs: usize,
    /// Pages written, relative to `out` (`index.html` first).
    pub pages: Vec<String>,
    /// Runs of the store the site could not show, each with its reason.
    pub skipped: Vec<Skipped>,
}

/// Writes the site of every run in `store` to `out`, replacing an earlier
/// site there; any other existing folder is refused before any work.
pub fn build(store: &mut Store, out: &Path) -> Result<Built, SiteError> {
    let target = out_dir::Target::check(out)?;
    let settings = Settings::default();
    let (runs, skipped) = load::all(store)?;
    let lines = lines::of(&runs, &settings);
    let staging = target.staging()?;
    let root = staging.path();
    let mut pages = Vec::new();
    let mut write = |rel: String, bytes: &[u8]| -> Result<(), SiteError> {
        let path = root.join(&rel);
        let write_err = |source| SiteError::Write {
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(write_err)?;
        }
        std::fs::write(&path, bytes).map_err(write_err)?;
        pages.push(rel);
        Ok(())
    };
    write(
        names::INDEX.into(),
        page_index::render(&lines, &runs, &skipped).as_bytes(),
    )?;
    let tools: BTreeSet<&str> = lines.iter().map(|l| l.key.tool.as_str()).collect();
    for tool in tools {
        let of_tool: Vec<&lines::Line> = lines.iter().filter(|l| l.key.tool == tool).collect();
        write(
            names::tool_page(tool),
            page_tool::render(tool, &of_tool, &runs).as_bytes(),
        )?;
    }
    let datasets: BTreeSet<&str> = lines.iter().map(|l| l.key.dataset.as_str()).collect();
    for dataset in datasets {
        let of_dataset: Vec<&lines::Line> =
            lines.iter().filter(|l| l.key.dataset == dataset).collect();
        write(
            names::dataset_page(dataset),
            page_dataset::render(dataset, &of_dataset, &runs, &settings).as_bytes(),
        )?;
    }
    for run in &runs {
        let html = labrun_report::export::html::Html
            .serialize(&run.summary)
            .map_err(|e| SiteError::Report {
                run_id: run.run_id.clone(),
                digest: run.digest.clone(),
                detail: e.to_string(),
            })?;
        write(names::run_report(&run.digest), &html)?;
    }
    let out = target.replace_with(staging)?;
    Ok(Built {
        out,
        runs: runs.len(),
        pages,
        skipped,
    })
}
