//! The figures a comparison judges, and how each is read from a record.

use labrun_evidence::StepRecord;
use serde::{Deserialize, Serialize};

const BYTES_PER_MIB: f64 = 1024.0 * 1024.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Figure {
    WallTime,
    /// User + system CPU: the whole tree's (cgroup) where every record of
    /// the row has it, else the tool process's own.
    Cpu,
    /// Peak resident memory of the largest single process.
    PeakMemory,
    /// Peak resident memory of the step's whole process tree.
    TreeMemory,
    /// Repository size after the step.
    RepoSize,
    /// Repository size after the incremental backup minus after the full.
    Growth,
}

/// Where a row's CPU figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CpuSource {
    Tree,
    Process,
}

impl Figure {
    /// Timed figures, then the deterministic sizes.
    pub const ALL: [Figure; 6] = [
        Figure::WallTime,
        Figure::Cpu,
        Figure::PeakMemory,
        Figure::TreeMemory,
        Figure::RepoSize,
        Figure::Growth,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Figure::WallTime => "wall time",
            Figure::Cpu => "CPU (user+sys)",
            Figure::PeakMemory => "peak memory (largest process)",
            Figure::TreeMemory => "peak memory (tree)",
            Figure::RepoSize => "repository size",
            Figure::Growth => "growth",
        }
    }

    pub fn unit(self) -> &'static str {
        match self {
            Figure::WallTime | Figure::Cpu => "s",
            Figure::PeakMemory | Figure::TreeMemory => "MiB",
            Figure::RepoSize | Figure::Growth => "bytes",
        }
    }

    /// Sizes do not vary with the machine's noise: compared exactly, with
    /// no interval and no test.
    pub fn is_exact(self) -> bool {
        matches!(self, Figure::RepoSize | Figure::Growth)
    }

    /// The words for a worse and a better candidate: times are slower or
    /// faster, memory and sizes larger or smaller (larger is worse).
    pub fn words(self) -> (&'static str, &'static str) {
        match self {
            Figure::WallTime | Figure::Cpu => ("slower", "faster"),
            _ => ("larger", "smaller"),
        }
    }

    /// The figure of one record; None where it has none (0 KiB of memory
    /// means "not measured"; CPU needs a measured process). Growth needs two
    /// records and is read by [`growth`].
    pub fn value(self, r: &StepRecord, cpu: CpuSource) -> Option<f64> {
        match self {
            Figure::WallTime => Some(r.wall_secs),
            Figure::Cpu => match cpu {
                CpuSource::Tree => tree_cpu(r),
                CpuSource::Process => r.exit.is_some().then_some(r.user_secs + r.sys_secs),
            },
            Figure::PeakMemory => (r.max_rss_kib > 0).then(|| r.max_rss_kib as f64 / 1024.0),
            Figure::TreeMemory => r
                .tree
                .as_ref()?
                .resident_peak_bytes
                .map(|b| b as f64 / BYTES_PER_MIB),
            Figure::RepoSize => r.repo_size_bytes.map(|b| b as f64),
            Figure::Growth => None,
        }
    }
}

pub fn tree_cpu(r: &StepRecord) -> Option<f64> {
    let t = r.tree.as_ref()?;
    Some(t.user_secs? + t.sys_secs?)
}

/// Size after the incremental backup minus size after the full one, for
/// records of one tool cycle.
pub fn growth(full: &StepRecord, incremental: &StepRecord) -> Option<f64> {
    Some(incremental.repo_size_bytes? as f64 - full.repo_size_bytes? as f64)
}
