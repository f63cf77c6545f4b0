//! The figures a comparison judges: a choice among the report's table of
//! figures ([`crate::figures`]), which says how each is read and shown.

use crate::figures;
use labrun_evidence::StepRecord;
use serde::{Deserialize, Serialize};

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

    /// Its entry in the report's table of figures (CPU: the process's;
    /// a row says when it judged the tree's instead).
    pub fn def(self) -> &'static figures::Figure {
        match self {
            Figure::WallTime => &figures::WALL_TIME,
            Figure::Cpu => &figures::PROCESS_CPU,
            Figure::PeakMemory => &figures::PEAK_MEMORY,
            Figure::TreeMemory => &figures::TREE_MEMORY,
            Figure::RepoSize => &figures::REPO_SIZE,
            Figure::Growth => &figures::GROWTH,
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            // The table's title says which CPU; a comparison's CPU row may
            // be either, and its `cpu_source` says which.
            Figure::Cpu => "CPU (user+sys)",
            other => other.def().title,
        }
    }

    /// Sizes do not vary with the machine's noise: compared exactly, with
    /// no interval and no test.
    pub fn is_exact(self) -> bool {
        self.def().is_exact()
    }

    /// The words for a worse and a better candidate: times are slower or
    /// faster, memory and sizes larger or smaller (larger is worse).
    pub fn words(self) -> (&'static str, &'static str) {
        self.def().worse.words()
    }

    /// The figure of one record; None where it has none. Growth needs two
    /// records and is read by [`figures::growth`].
    pub fn value(self, r: &StepRecord, cpu: CpuSource) -> Option<f64> {
        match (self, cpu) {
            (Figure::Cpu, CpuSource::Tree) => figures::TREE_CPU.of(r),
            _ => (self.def().read)(r),
        }
    }
}
