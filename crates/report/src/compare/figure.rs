//! The figures a comparison judges: a choice among the report's table of
//! figures ([`crate::figures`]), which says how each is read and shown.

use crate::figures;
use labrun_evidence::StepRecord;
use serde::{Deserialize, Serialize};

pub use labrun_evidence::compare::Figure;

/// Where a row's CPU figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CpuSource {
    Tree,
    Process,
}

/// How the report reads and shows a [`Figure`].
pub trait FigureDef: Copy {
    /// Its entry in the report's table of figures (CPU: the process's;
    /// a row says when it judged the tree's instead).
    fn def(self) -> &'static figures::Figure;
    fn title(self) -> &'static str;
    /// Sizes do not vary with the machine's noise: compared exactly, with
    /// no interval and no test.
    fn is_exact(self) -> bool;
    /// The words for a worse and a better candidate: times are slower or
    /// faster, memory and sizes larger or smaller (larger is worse).
    fn words(self) -> (&'static str, &'static str);
    /// The figure of one record; None where it has none. Growth needs two
    /// records and is read by [`figures::growth`].
    fn value(self, r: &StepRecord, cpu: CpuSource) -> Option<f64>;
}

impl FigureDef for Figure {
    fn def(self) -> &'static figures::Figure {
        match self {
            Figure::WallTime => &figures::WALL_TIME,
            Figure::DurableTime => &figures::DURABLE_TIME,
            Figure::Cpu => &figures::PROCESS_CPU,
            Figure::PeakMemory => &figures::PEAK_MEMORY,
            Figure::TreeMemory => &figures::TREE_MEMORY,
            Figure::RepoSize => &figures::REPO_SIZE,
            Figure::Growth => &figures::GROWTH,
        }
    }

    fn title(self) -> &'static str {
        match self {
            // The table's title says which CPU; a comparison's CPU row may
            // be either, and its `cpu_source` says which.
            Figure::Cpu => "CPU (user+sys)",
            other => other.def().title,
        }
    }

    fn is_exact(self) -> bool {
        self.def().is_exact()
    }

    fn words(self) -> (&'static str, &'static str) {
        self.def().worse.words()
    }

    fn value(self, r: &StepRecord, cpu: CpuSource) -> Option<f64> {
        match (self, cpu) {
            (Figure::Cpu, CpuSource::Tree) => figures::TREE_CPU.of(r),
            _ => (self.def().read)(r),
        }
    }
}
