//! Flat, self-describing samples, one per measured figure per record, in the
//! manner of PerfKitBenchmarker: a consumer needs no knowledge of the summary
//! layout to plot or compare them.

use labrun_evidence::{Step, StepRecord};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// `wall_time`, `user_cpu`, `system_cpu`, `peak_memory` (largest
    /// process), `tree_peak_memory`, `tree_charged_memory`, `tree_cpu`,
    /// `disk_read`, `disk_written`, `repo_size`,
    /// `bytes`, `files`.
    pub metric: String,
    pub value: f64,
    /// `s`, `MiB`, `bytes`, `files`.
    pub unit: String,
    pub metadata: SampleMetadata,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleMetadata {
    /// Empty for steps that belong to no tool (dataset generation).
    pub tool: String,
    pub cycle: u32,
    pub step: Step,
    pub run_id: String,
    /// Whether the step succeeded; failed steps' figures are kept here but
    /// left out of the summary's medians.
    pub ok: bool,
    pub timed: bool,
}

pub fn from_records(records: &[StepRecord]) -> Vec<Sample> {
    records.iter().flat_map(from_record).collect()
}

fn from_record(r: &StepRecord) -> Vec<Sample> {
    let metadata = SampleMetadata {
        tool: r.tool.clone(),
        cycle: r.cycle,
        step: r.step.clone(),
        run_id: r.run_id.clone(),
        ok: r.ok,
        timed: r.timed,
    };
    let mut figures = vec![("wall_time", r.wall_secs, "s")];
    // CPU times come from measuring a process (`exit` is set); steps the
    // agent does in-process (change, verify) have none, not zero.
    if r.exit.is_some() {
        figures.push(("user_cpu", r.user_secs, "s"));
        figures.push(("system_cpu", r.sys_secs, "s"));
    }
    // 0 KiB means "not measured" (the field defaults to it), not a figure.
    if r.max_rss_kib > 0 {
        figures.push(("peak_memory", r.max_rss_kib as f64 / 1024.0, "MiB"));
    }
    if let Some(t) = &r.tree {
        if let Some(b) = t.resident_peak_bytes {
            figures.push(("tree_peak_memory", b as f64 / 1048576.0, "MiB"));
        }
        if let Some(b) = t.charged_peak_bytes {
            figures.push(("tree_charged_memory", b as f64 / 1048576.0, "MiB"));
        }
        if let (Some(u), Some(y)) = (t.user_secs, t.sys_secs) {
            figures.push(("tree_cpu", u + y, "s"));
        }
        if let Some(b) = t.disk_read_bytes {
            figures.push(("disk_read", b as f64, "bytes"));
        }
        if let Some(b) = t.disk_write_bytes {
            figures.push(("disk_written", b as f64, "bytes"));
        }
    }
    if let Some(b) = r.repo_size_bytes {
        figures.push(("repo_size", b as f64, "bytes"));
    }
    if let Some(b) = r.bytes {
        figures.push(("bytes", b as f64, "bytes"));
    }
    if let Some(f) = r.files {
        figures.push(("files", f as f64, "files"));
    }
    figures
        .into_iter()
        .map(|(metric, value, unit)| Sample {
            metric: metric.to_string(),
            value,
            unit: unit.to_string(),
            metadata: metadata.clone(),
        })
        .collect()
}
