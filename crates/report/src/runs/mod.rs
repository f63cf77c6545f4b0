//! `labrun runs`: what the runs in a folder are, from their evidence alone:
//! one [`Listed`] per run folder or pack, newest first, with the groups of
//! runs that `labrun compare` would take as comparable (the same dataset and
//! protocol, the same machine, by the compare module's own rules).

mod entry;
mod groups;
mod status;

pub use entry::{RunEntry, ToolVersion};
pub use status::{ESTIMATE_FILE, RunStatus, SESSION_FILE, status};

use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// One item of a folder: a run, or something there that is not one.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Listed {
    Run(Box<RunEntry>),
    /// A folder or pack that could not be read as a run, and why.
    Unreadable {
        path: PathBuf,
        unreadable: String,
    },
}

/// Every run folder and pack (`*.tar.gz`) directly in `dir`, newest first
/// (unreadable ones last), with comparable runs sharing a group letter.
/// Errors only when `dir` itself cannot be read.
pub fn list(dir: &Path, now: SystemTime) -> std::io::Result<Vec<Listed>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| is_candidate(p))
        .collect();
    paths.sort();
    let mut opened = Vec::new();
    let mut unreadable = Vec::new();
    for path in paths {
        match entry::read(&path, now) {
            Ok(run) => opened.push(run),
            Err(why) => unreadable.push(Listed::Unreadable {
                path,
                unreadable: why,
            }),
        }
    }
    // Newest first: run ids start with the lab's name, so by start time.
    opened.sort_by(|a, b| {
        b.entry
            .started_sort_key()
            .cmp(a.entry.started_sort_key())
            .then_with(|| a.entry.id.cmp(&b.entry.id))
    });
    groups::assign(&mut opened);
    let mut out: Vec<Listed> = opened
        .into_iter()
        .map(|o| Listed::Run(Box::new(o.entry)))
        .collect();
    out.extend(unreadable);
    Ok(out)
}

/// A folder (not hidden), or a pack; a folder that only holds the report of
/// a pack beside it (`report X.tar.gz` writes `X/`) is that pack's, not a run.
fn is_candidate(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return true;
    };
    if name.starts_with('.') {
        return false;
    }
    if path.is_dir() {
        let report_of_pack = path.with_file_name(format!("{name}.tar.gz")).is_file()
            && !path.join(crate::RAW_DIR).exists()
            && !path.join(labrun_evidence::variant::VARIANTS_INDEX).exists();
        return !report_of_pack;
    }
    name.ends_with(".tar.gz")
}
