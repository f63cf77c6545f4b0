//! Flat, self-describing samples, one per measured figure per record, in the
//! manner of PerfKitBenchmarker: a consumer needs no knowledge of the summary
//! layout to plot or compare them.

use labrun_evidence::{Step, StepRecord};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// A figure's name in [`crate::figures::FIGURES`] (`wall_time`,
    /// `peak_memory`, `disk_read`, ...).
    pub metric: String,
    pub value: f64,
    /// The figure's unit: `s`, `MiB`, `bytes`, `files`.
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
    crate::figures::FIGURES
        .iter()
        .filter_map(|f| Some((f.name, (f.read)(r)?, f.unit.symbol())))
        .map(|(metric, value, unit)| Sample {
            metric: metric.to_string(),
            value,
            unit: unit.to_string(),
            metadata: metadata.clone(),
        })
        .collect()
}
