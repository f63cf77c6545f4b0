//! What a lab asks to compare (`compare:`): pairs of tools of one run, a
//! baseline and a candidate (a release and the next, a default and a tuned
//! setting), and the margin that matters. `bench` writes it beside the
//! evidence (`raw/compare-plan.json`), so the report's verdicts are made
//! from the raw folder alone, like every other figure.

use serde::{Deserialize, Serialize};

/// `raw/compare-plan.json`.
pub const COMPARE_PLAN: &str = "compare-plan.json";

/// `raw/added-pairs.json`: the cycles `bench --until-conclusive N` added.
pub const ADDED_PAIRS: &str = "added-pairs.json";

/// What `--until-conclusive` added to a run, so every verdict says how many
/// of its pairs came after the lab's own cycles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AddedPairs {
    /// The declared maximum of added cycles (never exceeded).
    pub max: u32,
    /// Cycles added, each one more pair of every comparison still open.
    pub added: u32,
    pub rounds: Vec<AddedRound>,
    /// The looks of the sequential rule (the lab's own cycles, then one per
    /// pair up to `max`): written by `bench` from the sequential rule on, so
    /// the verdicts are judged by it. Absent in older runs, which are
    /// judged as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub looks: Option<u32>,
    /// The pairs the host's noise needs to decide at the margin, estimated
    /// from the spread of the lab's own pairs (what `bench` printed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needed: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AddedRound {
    pub cycle: u32,
    /// The tools run in it: both sides of every comparison still open.
    pub tools: Vec<String>,
    /// Inconclusive rows before it, over every open comparison.
    pub inconclusive_rows: usize,
}

/// One comparison a lab asks for. Without `phase` and `figure` every timed
/// phase and figure of the two tools is judged; with them, only the rows
/// asked about: only they are shown, Holm's correction runs over them
/// alone, and only they keep `bench --until-conclusive` adding pairs (a
/// question about restore time pays for nothing else).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComparePair {
    pub baseline: String,
    pub candidate: String,
    /// Only this timed phase (`backup_full`, `restore`, a lab's own step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<crate::Step>,
    /// Only this figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figure: Option<Figure>,
}

impl ComparePair {
    /// Every phase and figure of `baseline` against `candidate`.
    pub fn of(baseline: impl Into<String>, candidate: impl Into<String>) -> ComparePair {
        ComparePair {
            baseline: baseline.into(),
            candidate: candidate.into(),
            phase: None,
            figure: None,
        }
    }

    /// True when the pair asks about this phase and figure.
    pub fn asks(&self, phase: &crate::Step, figure: Figure) -> bool {
        self.phase.as_ref().is_none_or(|p| p == phase) && self.figure.is_none_or(|f| f == figure)
    }
}

/// A figure a comparison judges. The report's table of figures says how
/// each is read and shown; the name is here so a lab's `compare:` pair and
/// the report mean the same figure by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Figure {
    WallTime,
    /// Wall time plus the flush of what the step left unwritten: the time
    /// until its data was on disk (runs with flush records only).
    DurableTime,
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

impl Figure {
    /// Timed figures, then the deterministic sizes.
    pub const ALL: [Figure; 7] = [
        Figure::WallTime,
        Figure::DurableTime,
        Figure::Cpu,
        Figure::PeakMemory,
        Figure::TreeMemory,
        Figure::RepoSize,
        Figure::Growth,
    ];
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparePlan {
    pub pairs: Vec<ComparePair>,
    /// As a fraction (0.05 = 5%); None: the method's default.
    #[serde(default)]
    pub margin: Option<f64>,
    /// The A/A pair of a lab's `noise_floor:` (also one of `pairs`): a tool
    /// against its copy, whose interval is the machine's noise floor that
    /// every other verdict is read against. Absent for a lab without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_floor: Option<ComparePair>,
    /// A lab's release series (`versions:`), for the report's trend.
    /// Absent for a lab without one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<SeriesPlan>,
}

/// One release series: its members' tool names oldest first, and the
/// anchor every ratio is taken against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeriesPlan {
    /// The tool as the lab writes it (`restic`).
    pub tool: String,
    /// `restic@0.16.4`, ... in version order.
    pub members: Vec<String>,
    /// The member every run includes (`restic@0.19.1`).
    pub anchor: String,
}

/// `5%` or `0.05` as the fraction 0.05. A bare number must be a fraction
/// (below 1), so that `5` is never silently read as 500%.
pub fn parse_fraction(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let (number, percent) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), true),
        None => (t, false),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a number: write e.g. 5% or 0.05"))?;
    if !value.is_finite() || value < 0.0 {
        return Err(format!(
            "{text:?}: write a positive number, e.g. 5% or 0.05"
        ));
    }
    if percent {
        Ok(value / 100.0)
    } else if value < 1.0 {
        Ok(value)
    } else {
        Err(format!(
            "{text:?} is ambiguous: write {value}% for a percentage or a fraction below 1"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_and_percentages() {
        assert_eq!(parse_fraction("5%"), Ok(0.05));
        assert_eq!(parse_fraction(" 3.5 % "), Ok(0.035));
        assert_eq!(parse_fraction("0.05"), Ok(0.05));
        assert!(parse_fraction("5").unwrap_err().contains("5%"));
        assert!(parse_fraction("five").is_err());
        assert!(parse_fraction("-1%").is_err());
    }
}
