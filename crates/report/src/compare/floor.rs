//! The noise floor a lab measured (`noise_floor:`): a tool against its A/A
//! copy, the same binary and settings under a second name, paired cycle by
//! cycle like any comparison. Its ratio's interval, per timed phase and
//! figure, is how far this machine moved two identical runs apart; every
//! other verdict of the run is then read against it.
//!
//! The rule: the floor of a row is the farthest end of the A/A ratio's
//! interval from 1, on the log scale (so ×1.12 and ÷1.12 are one floor,
//! `±12%`). An effect whose ratio lies within that spread of 1 cannot be
//! told from noise: two copies of one binary differed by as much in this
//! run. Such a verdict stands (its test already weighed its own pairs'
//! spread), but it says that it is inside the floor.

use super::figure::{CpuSource, Figure};
use super::method::percent;
use super::model::{Comparison, Row};
use crate::compare::FigureDef as _;
use labrun_evidence::Step;
use labrun_evidence::printable::printable;
use serde::{Deserialize, Serialize};

/// The floor of one run: per timed phase and figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoiseFloor {
    /// The tool measured against its copy.
    pub tool: String,
    /// The A/A copy (`borg@aa`).
    pub copy: String,
    /// The intervals' confidence (0.95).
    pub confidence: f64,
    /// One per timed row of the A/A comparison (sizes have no noise).
    pub rows: Vec<FloorRow>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FloorRow {
    pub phase: Step,
    pub figure: Figure,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_source: Option<CpuSource>,
    pub pairs: Option<usize>,
    /// Copy / tool: the A/A ratio (1 without noise).
    pub ratio: Option<f64>,
    /// Its paired interval (the one `labrun compare` gives).
    pub interval: Option<[f64; 2]>,
    /// The floor as a fraction (0.12 = ±12%); None below two pairs.
    pub floor: Option<f64>,
}

/// What the floor says of one row of another comparison.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FloorMark {
    /// The row's floor as a fraction (0.12 = ±12%).
    pub floor: f64,
    /// The row's ratio lies within the floor: not told apart from noise.
    pub inside: bool,
}

impl FloorMark {
    /// `inside the noise floor (±12%)`, for a verdict cell.
    pub fn words(&self) -> String {
        let place = if self.inside { "inside" } else { "beyond" };
        format!("{place} the noise floor (±{})", percent(round(self.floor)))
    }
}

/// The floor of `aa`, the A/A comparison (baseline: the tool, candidate:
/// its copy).
pub fn of(aa: &Comparison) -> NoiseFloor {
    NoiseFloor {
        tool: aa.baseline.tool.clone(),
        copy: aa.candidate.tool.clone(),
        confidence: aa.settings.confidence(),
        rows: aa
            .rows
            .iter()
            .filter(|r| !r.figure.is_exact())
            .map(|r| FloorRow {
                phase: r.phase.clone(),
                figure: r.figure,
                cpu_source: r.cpu_source,
                pairs: r.pairs,
                ratio: r.ratio,
                interval: r.interval,
                floor: r.interval.and_then(spread),
            })
            .collect(),
    }
}

/// The interval's farthest end from 1, as a fraction: `[0.95, 1.12]` is
/// ±12%. None for an interval that is not of positive ratios.
pub fn spread([lo, hi]: [f64; 2]) -> Option<f64> {
    if !(lo > 0.0 && hi > 0.0 && lo.is_finite() && hi.is_finite()) {
        return None;
    }
    Some(lo.ln().abs().max(hi.ln().abs()).exp_m1())
}

impl NoiseFloor {
    /// The floor of the row with this phase and figure, measured the same
    /// way (a CPU row's source must match).
    pub fn floor_of(&self, row: &Row) -> Option<f64> {
        self.rows
            .iter()
            .find(|f| {
                f.phase == row.phase && f.figure == row.figure && f.cpu_source == row.cpu_source
            })
            .and_then(|f| f.floor)
    }

    /// Marks each row of `c` that has a ratio and a floor.
    pub fn mark(&self, c: &mut Comparison) {
        for row in &mut c.rows {
            row.noise_floor = match (row.ratio, self.floor_of(row)) {
                (Some(ratio), Some(floor)) if ratio > 0.0 => Some(FloorMark {
                    floor,
                    inside: ratio.ln().abs() <= floor.ln_1p(),
                }),
                _ => None,
            };
        }
    }

    /// Whether `c` is the A/A comparison itself.
    pub fn is(&self, c: &Comparison) -> bool {
        c.baseline.tool == self.tool && c.candidate.tool == self.copy
    }

    /// The floor's table, its header first: phase, figure, A/A ratio, its
    /// interval, pairs, the floor.
    pub fn table(&self) -> Vec<Vec<String>> {
        let none = || "-".to_string();
        let mut out = vec![vec![
            "phase".to_string(),
            "figure".to_string(),
            "A/A ratio".to_string(),
            format!("{} interval", percent(self.confidence)),
            "pairs".to_string(),
            "noise floor".to_string(),
        ]];
        for r in &self.rows {
            out.push(vec![
                crate::export::cells::phase_title(&r.phase),
                super::render::row_figure_title(r.figure, r.cpu_source),
                r.ratio.map_or_else(none, |x| format!("{x:.3}")),
                r.interval
                    .map_or_else(none, |[lo, hi]| format!("{lo:.3}-{hi:.3}")),
                r.pairs.map_or_else(none, |p| p.to_string()),
                r.floor
                    .map_or_else(none, |f| format!("±{}", percent(round(f)))),
            ]);
        }
        out
    }

    /// What the floor is and how the verdicts use it, in a sentence.
    pub fn explanation(&self) -> String {
        format!(
            "{copy} is an A/A copy of {tool}: the same binary and settings under a second name, run interleaved with it in every cycle. The noise floor of a phase and figure is the farthest end of their ratio's paired {conf} interval from 1: two identical runs differed by that much on this machine. A verdict of another pair whose ratio lies within its row's floor says `inside the noise floor`: that effect cannot be told from noise.",
            copy = printable(&self.copy),
            tool = printable(&self.tool),
            conf = percent(self.confidence),
        )
    }
}

/// To a tenth of a percent, as the tables print rsd.
fn round(f: f64) -> f64 {
    (f * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_is_the_interval_s_farthest_end_from_one() {
        let f = spread([0.95, 1.12]).unwrap();
        assert!((f - 0.12).abs() < 1e-12, "{f}");
        // ÷1.25 is as far from 1 as ×1.25.
        let f = spread([0.8, 1.05]).unwrap();
        assert!((f - 0.25).abs() < 1e-12, "{f}");
        assert_eq!(spread([0.0, 1.1]), None);
        assert_eq!(spread([f64::NAN, 1.1]), None);
    }

    #[test]
    fn a_mark_says_inside_or_beyond() {
        let inside = FloorMark {
            floor: 0.12,
            inside: true,
        };
        assert_eq!(inside.words(), "inside the noise floor (±12%)");
        let beyond = FloorMark {
            floor: 0.0314159,
            inside: false,
        };
        assert_eq!(beyond.words(), "beyond the noise floor (±3.1%)");
    }
}
