//! The once-a-second samples of each timed step's process tree
//! (`raw/logs/<tool>/<step>.timeline.jsonl`, named by the step's record),
//! read back for the timeline chart. Not part of `summary.json`: they are
//! raw evidence already, and long.

use crate::warning::{Warning, WarningKind};
use labrun_evidence::{Step, StepRecord, TimelineRow};
use std::path::Path;

/// A timeline longer than this is not drawn (a day of rows is ~10 MB).
const MAX_TIMELINE_BYTES: u64 = 32 << 20;

#[derive(Debug, Clone, PartialEq)]
pub struct StepTimeline {
    pub tool: String,
    pub cycle: u32,
    pub step: Step,
    pub rows: Vec<TimelineRow>,
}

/// The timelines the records name, relative to `raw`; one warning for all
/// that could not be read.
pub fn load(
    root: crate::evidence_file::Root,
    raw: &Path,
    records: &[StepRecord],
) -> (Vec<StepTimeline>, Vec<Warning>) {
    let mut out = Vec::new();
    let mut unreadable = Vec::new();
    for r in records {
        let Some(rel) = r.tree.as_ref().and_then(|t| t.timeline_path.as_deref()) else {
            continue;
        };
        match read(root, &raw.join(rel)) {
            Ok(rows) => out.push(StepTimeline {
                tool: r.tool.clone(),
                cycle: r.cycle,
                step: r.step.clone(),
                rows,
            }),
            Err(why) => unreadable.push(format!("{rel} ({why})")),
        }
    }
    let warnings = if unreadable.is_empty() {
        Vec::new()
    } else {
        vec![Warning::new(
            WarningKind::UnreadableTimeline,
            format!(
                "{} timeline file{} could not be read and {} not drawn: {}",
                unreadable.len(),
                if unreadable.len() == 1 { "" } else { "s" },
                if unreadable.len() == 1 { "is" } else { "are" },
                unreadable.join(", ")
            ),
        )]
    };
    (out, warnings)
}

fn read(root: crate::evidence_file::Root, path: &Path) -> Result<Vec<TimelineRow>, String> {
    let text = root
        .read_to_string(path, MAX_TIMELINE_BYTES)
        .map_err(|refused| format!("refused: {}", refused.reason))?
        // The words the OS gives for a missing file, as the summary said
        // before reads were bounded: a re-made summary stays byte for byte.
        .ok_or_else(|| std::io::Error::from_raw_os_error(libc::ENOENT).to_string())?;
    // A row cut short by a killed agent is the last one: keep the others.
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}
