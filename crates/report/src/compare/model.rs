//! The comparison as a value: what `labrun compare` prints and writes, and
//! what a caller (`bench --until-conclusive`) reads to decide whether more
//! pairs are needed.

use super::figure::{CpuSource, Figure};
use super::settings::Settings;
use crate::compare::FigureDef as _;
use labrun_evidence::Step;
use serde::{Deserialize, Serialize};

/// Version of the `compare.json` layout, bumped when a field changes meaning.
pub const COMPARISON_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub comparison_version: u32,
    pub design: Design,
    pub baseline: Side,
    pub candidate: Side,
    pub settings: Settings,
    /// The method in words, with this comparison's settings.
    pub method: String,
    /// Which steps are the first backup, the later one and the restore (the
    /// baseline run's plan); absent from JSON when they are the published
    /// cycle's.
    #[serde(default, skip_serializing_if = "crate::roles::Roles::is_published")]
    pub roles: crate::roles::Roles,
    /// Per timed phase (protocol order) and figure.
    pub rows: Vec<Row>,
    /// Differences a `--force` let through, and similar caveats.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The pairs `bench --until-conclusive` added after the lab's cycles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added_pairs: Option<labrun_evidence::compare::AddedPairs>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Design {
    /// Two tools of one run, interleaved cycle by cycle; pairs are cycles.
    Paired,
    /// Two runs: no pairs, Welch's interval.
    Unpaired,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Side {
    pub run_id: String,
    pub tool: String,
    /// The version the plan pinned, when it did.
    #[serde(default)]
    pub version: Option<String>,
}

impl Side {
    pub fn label(&self) -> String {
        match &self.version {
            Some(v) if !v.is_empty() && !self.tool.contains(v.as_str()) => {
                format!("{} {v}", self.tool)
            }
            _ => self.tool.clone(),
        }
    }
}

/// Worse and better mean slower/faster for times, larger/smaller for memory
/// and sizes ([`Figure::words`]); a larger figure is always the worse one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Worse,
    Better,
    NoChange,
    Inconclusive,
}

impl Verdict {
    pub fn word(self, figure: Figure) -> &'static str {
        match self {
            Verdict::Worse => figure.words().0,
            Verdict::Better => figure.words().1,
            Verdict::NoChange => "no change",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub phase: Step,
    pub figure: Figure,
    pub unit: String,
    /// For CPU rows: the tree's (cgroup) CPU or the tool process's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_source: Option<CpuSource>,
    pub baseline: SideFigure,
    pub candidate: SideFigure,
    /// Pairs used (paired design); None for an unpaired comparison, whose
    /// sides' counts are in `baseline.n` and `candidate.n`.
    pub pairs: Option<usize>,
    /// Candidate / baseline: the geometric-mean ratio (timed figures) or the
    /// ratio of the medians (sizes). None when it has no meaning (no data,
    /// a zero or negative baseline).
    pub ratio: Option<f64>,
    /// The ratio's two-sided interval at the settings' confidence (not
    /// adjusted for multiplicity); None for sizes and below two pairs.
    pub interval: Option<[f64; 2]>,
    /// The test behind the verdict; None for sizes and untestable rows.
    pub test: Option<TestResult>,
    pub verdict: Verdict,
    /// The verdict in this figure's words (`slower`, `larger`, ...).
    pub verdict_word: String,
    /// True when the verdict is not `inconclusive`: more pairs would not be
    /// needed for this row.
    pub conclusive: bool,
    /// Why a row is inconclusive without a test, or another caveat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Whether the ratio lies inside the run's measured noise floor
    /// ([`super::floor`]); absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_floor: Option<super::floor::FloorMark>,
}

/// One side's values of a row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideFigure {
    /// Values used.
    pub n: usize,
    /// Geometric mean (timed figures) or median (sizes) of those values.
    pub center: Option<f64>,
    /// Relative standard deviation of those values (a fraction); None below 2.
    pub rsd: Option<f64>,
    /// `rsd` above the noise threshold.
    pub noisy: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    /// The hypothesis tested: the region the estimate lies in (worse: ratio
    /// above 1+m; better: below 1/(1+m); no_change: within, by TOST).
    pub hypothesis: Verdict,
    pub p: f64,
    /// `p` after Holm's adjustment over every tested row of the comparison.
    pub p_holm: f64,
    pub df: f64,
}

impl Comparison {
    /// True when some row found the candidate worse beyond the margin: what
    /// a maintainer's CI gates on (exit status 1).
    pub fn any_worse(&self) -> bool {
        self.rows.iter().any(|r| r.verdict == Verdict::Worse)
    }

    /// Rows still inconclusive (what `--until-conclusive` adds pairs for).
    pub fn inconclusive(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| !r.conclusive)
    }

    pub fn row(&self, phase: &Step, figure: Figure) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.phase == *phase && r.figure == figure)
    }
}
