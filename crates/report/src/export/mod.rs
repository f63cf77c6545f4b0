//! Writers of the summary files, each behind one small trait in the manner
//! of hyperfine's exporters: a writer turns a [`Summary`] into bytes and
//! names its file; [`write_all`] puts every file in place.

pub(crate) mod cells;
pub mod chart;
pub mod csv;
pub mod escape;
pub mod fidelity;
pub mod history;
pub mod html;
pub mod html_markup;
mod html_sections;
pub mod json;
pub mod markdown;
pub mod terminal;
pub mod timeline_chart;
pub mod trend;

use crate::error::{ReportError, Result};
use crate::summary::Summary;
use std::io::Write;
use std::path::{Path, PathBuf};

pub trait Exporter {
    /// The file written inside the run folder, e.g. `summary.md`.
    fn file_name(&self) -> &'static str;
    /// The file's whole content. Pure: the same summary gives the same bytes.
    fn serialize(&self, summary: &Summary) -> Result<Vec<u8>>;
    /// Whether this file belongs to this summary (the history chart only
    /// to git-history runs).
    fn applies(&self, _summary: &Summary) -> bool {
        true
    }
}

/// Every writer, in the order their files are listed to the user.
pub fn exporters() -> Vec<Box<dyn Exporter>> {
    vec![
        Box::new(markdown::Markdown),
        Box::new(json::Json),
        Box::new(csv::Csv),
        Box::new(chart::TimeChart),
        Box::new(chart::RepoSizeChart),
        Box::new(chart::MemoryChart),
        Box::new(history::HistoryChart),
        Box::new(timeline_chart::TimelineChart),
        Box::new(trend::TrendChart),
        Box::new(html::Html),
    ]
}

/// Writes every summary file into `dir` and returns their paths. Each file
/// is written beside its final name and renamed into place, so a reader
/// never sees half a file. Everything is rendered before anything is written.
pub fn write_all(summary: &Summary, dir: &Path) -> Result<Vec<PathBuf>> {
    let rendered = exporters()
        .iter()
        .filter(|e| e.applies(summary))
        .map(|e| Ok((e.file_name(), e.serialize(summary)?)))
        .collect::<Result<Vec<_>>>()?;
    rendered
        .into_iter()
        .map(|(name, bytes)| {
            let path = dir.join(name);
            write_atomically(&path, &bytes)?;
            Ok(path)
        })
        .collect()
}

pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let write_err = |source: std::io::Error| ReportError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(write_err)?;
    tmp.write_all(bytes).map_err(write_err)?;
    tmp.flush().map_err(write_err)?;
    tmp.persist(path).map_err(|e| write_err(e.error))?;
    Ok(())
}
