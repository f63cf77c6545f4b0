//! The trend of a release series (a lab's `versions:`): per timed phase and
//! figure, each version's ratio to the anchor with its paired interval, and
//! a verdict for each adjacent step (older -> newer), Holm's correction
//! across the chain, and the first worse and the first better step named. The statistics are compare's own
//! ([`crate::compare::compare_paired`]): a ratio is a paired comparison of
//! two tools of this run, cycle by cycle.
//!
//! Only ratios are kept, never seconds: a run of the same series on another
//! day or host is joined to this one through the anchor (every run has it),
//! as Go's benchmarks are read against a fixed baseline release measured in
//! the same session.

use crate::compare::stats::holm;
use crate::compare::{Comparison, CpuSource, Figure, Row, Settings, Verdict, compare_paired};
use crate::evidence::RawRun;
use crate::warning::{Warning, WarningKind};
use labrun_evidence::Step;
use serde::{Deserialize, Serialize};

/// One series' trend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trend {
    /// The tool as the lab writes it (`restic`).
    pub tool: String,
    /// The member every ratio is to (`restic@0.19.1`).
    pub anchor: String,
    /// The members in version order (oldest first).
    pub members: Vec<String>,
    /// The interval's confidence and the margin, as compare uses them.
    pub confidence: f64,
    pub margin: f64,
    pub alpha: f64,
    /// Per timed phase (protocol order) and figure.
    pub rows: Vec<TrendRow>,
}

/// One phase and figure along the series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrendRow {
    pub phase: Step,
    pub figure: Figure,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_source: Option<CpuSource>,
    /// One per member, in version order; the anchor's is 1.
    pub points: Vec<TrendPoint>,
    /// One per adjacent pair of members, in version order.
    pub steps: Vec<TrendStep>,
    /// The index in `steps` of the first step whose verdict is worse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_worse: Option<usize>,
    /// The index in `steps` of the first step whose verdict is better: an
    /// optimisation that landed is named as a regression is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_better: Option<usize>,
}

/// A member's ratio to the anchor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrendPoint {
    pub tool: String,
    /// Member / anchor; None without pairs (a member that failed).
    pub ratio: Option<f64>,
    /// The ratio's paired interval; None for sizes (exact) and the anchor.
    pub interval: Option<[f64; 2]>,
    pub pairs: Option<usize>,
}

/// An adjacent step, older -> newer: newer / older.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrendStep {
    pub from: String,
    pub to: String,
    pub ratio: Option<f64>,
    pub interval: Option<[f64; 2]>,
    /// The step's own p-value, and after Holm's adjustment over the chain's
    /// tested steps of this row; None for sizes (compared exactly).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_holm: Option<f64>,
    pub verdict: Verdict,
    pub verdict_word: String,
    /// The region the step's estimate lies in, which its p-value tests
    /// (compare's hypothesis, before any adjustment).
    #[serde(skip)]
    hypothesis: Option<Verdict>,
}

type Key = (Step, Figure, Option<CpuSource>);

/// A series member's version: `restic@0.18.1` -> `0.18.1` (the member
/// itself when it is not `TOOL@...`).
pub fn member_version<'a>(tool: &str, member: &'a str) -> &'a str {
    member
        .strip_prefix(tool)
        .and_then(|v| v.strip_prefix('@'))
        .unwrap_or(member)
}

fn key(r: &Row) -> Key {
    (r.phase.clone(), r.figure, r.cpu_source)
}

/// The trend of every series the run's lab declared, and a warning for each
/// comparison of it that could not be made.
pub fn of_run(run: &RawRun) -> (Vec<Trend>, Vec<Warning>) {
    let Some(plan) = &run.compare_plan else {
        return (Vec::new(), Vec::new());
    };
    // The series' steps are judged like the lab's other comparisons: by
    // the sequential rule when pairs were added under it.
    let settings = crate::compare::lab_settings(run);
    let mut warnings = Vec::new();
    let trends = plan
        .series
        .iter()
        .map(|s| build(run, s, &settings, &mut warnings))
        .collect();
    (trends, warnings)
}

fn build(
    run: &RawRun,
    series: &labrun_evidence::compare::SeriesPlan,
    settings: &Settings,
    warnings: &mut Vec<Warning>,
) -> Trend {
    let mut compare = |baseline: &str, candidate: &str| -> Option<Comparison> {
        match compare_paired(run, baseline, candidate, settings) {
            Ok(c) => Some(c),
            Err(e) => {
                warnings.push(Warning::new(
                    WarningKind::ComparisonNotMade,
                    format!(
                        "The trend of {}: {candidate} against {baseline} was not made: {e}",
                        series.tool
                    ),
                ));
                None
            }
        }
    };
    let to_anchor: Vec<Option<Comparison>> = series
        .members
        .iter()
        .map(|m| {
            (*m != series.anchor)
                .then(|| compare(&series.anchor, m))
                .flatten()
        })
        .collect();
    let adjacent: Vec<(String, String, Option<Comparison>)> = series
        .members
        .windows(2)
        .map(|w| (w[0].clone(), w[1].clone(), compare(&w[0], &w[1])))
        .collect();
    // Rows in the comparisons' own order (protocol order, then figure).
    let mut keys: Vec<Key> = Vec::new();
    for c in to_anchor
        .iter()
        .flatten()
        .chain(adjacent.iter().filter_map(|a| a.2.as_ref()))
    {
        for r in &c.rows {
            if !keys.contains(&key(r)) {
                keys.push(key(r));
            }
        }
    }
    let row_of = |c: &Option<Comparison>, k: &Key| -> Option<Row> {
        c.as_ref()?.rows.iter().find(|r| key(r) == *k).cloned()
    };
    let rows = keys
        .iter()
        .map(|k| {
            let points = series
                .members
                .iter()
                .zip(&to_anchor)
                .map(|(m, c)| {
                    if *m == series.anchor {
                        return TrendPoint {
                            tool: m.clone(),
                            ratio: Some(1.0),
                            interval: None,
                            pairs: None,
                        };
                    }
                    let r = row_of(c, k);
                    TrendPoint {
                        tool: m.clone(),
                        ratio: r.as_ref().and_then(|r| r.ratio),
                        interval: r.as_ref().and_then(|r| r.interval),
                        pairs: r.as_ref().and_then(|r| r.pairs),
                    }
                })
                .collect();
            let mut steps: Vec<TrendStep> = adjacent
                .iter()
                .map(|(from, to, c)| step(from, to, row_of(c, k), k.1))
                .collect();
            holm_across_chain(&mut steps, k.1, settings.alpha);
            let first_worse = steps.iter().position(|s| s.verdict == Verdict::Worse);
            let first_better = steps.iter().position(|s| s.verdict == Verdict::Better);
            TrendRow {
                phase: k.0.clone(),
                figure: k.1,
                cpu_source: k.2,
                points,
                steps,
                first_worse,
                first_better,
            }
        })
        .collect();
    Trend {
        tool: series.tool.clone(),
        anchor: series.anchor.clone(),
        members: series.members.clone(),
        confidence: settings.confidence(),
        margin: settings.margin,
        alpha: settings.alpha,
        rows,
    }
}

fn step(from: &str, to: &str, row: Option<Row>, figure: Figure) -> TrendStep {
    let verdict = row.as_ref().map_or(Verdict::Inconclusive, |r| r.verdict);
    TrendStep {
        from: from.to_string(),
        to: to.to_string(),
        ratio: row.as_ref().and_then(|r| r.ratio),
        interval: row.as_ref().and_then(|r| r.interval),
        p: row.as_ref().and_then(|r| r.test.as_ref()).map(|t| t.p),
        p_holm: None,
        hypothesis: row
            .as_ref()
            .and_then(|r| r.test.as_ref())
            .map(|t| t.hypothesis),
        verdict,
        verdict_word: verdict.word(figure).to_string(),
    }
}

/// Holm over the chain's tested steps of one row: a step's hypothesis
/// (the region its estimate lies in, as compare tests it) stands when its
/// adjusted p-value is at most `alpha`, else it is inconclusive. Exact
/// steps (sizes) keep compare's verdict.
fn holm_across_chain(steps: &mut [TrendStep], figure: Figure, alpha: f64) {
    let tested: Vec<usize> = (0..steps.len()).filter(|&i| steps[i].p.is_some()).collect();
    let p: Vec<f64> = tested.iter().filter_map(|&i| steps[i].p).collect();
    for (&i, adjusted) in tested.iter().zip(holm(&p)) {
        let s = &mut steps[i];
        s.p_holm = Some(adjusted);
        let verdict = match s.hypothesis {
            Some(h) if adjusted <= alpha => h,
            _ => Verdict::Inconclusive,
        };
        s.verdict = verdict;
        s.verdict_word = verdict.word(figure).to_string();
    }
}

impl TrendRow {
    /// `restore wall time`, as the trend's lines name a row.
    pub fn title(&self) -> String {
        format!(
            "{} {}",
            crate::export::cells::phase_title(&self.phase).to_lowercase(),
            crate::compare::render::row_figure_title(self.figure, self.cpu_source).to_lowercase()
        )
    }
}
