//! A series or a tracked branch across the store's runs, chained through
//! its anchor. Every run of a series (`versions:`, or the runs `labrun
//! track` makes: the anchor and one commit each) measured each member
//! paired with the anchor in the same run, so each member's ratio to the
//! anchor is compare's paired ratio and verdict, and ratios from runs made
//! on other days line up through the anchor, never through absolute
//! seconds. One chain per anchor, dataset and machine class (never mixed).
//! A member measured by several runs is shown from its newest run.
//!
//! Members are in version order when every one reads as a version; else
//! (commits) in the order they were first measured, which is a tracked
//! branch's order (`track` measures it oldest first). A bisection's probes
//! are paired with the step's good end, not the anchor, so they form a
//! chain of their own.

use crate::lines::version_key;
use crate::load::SiteRun;
use crate::measure::{MEASURES, Measure};
use labrun_report::MachineClass;
use labrun_report::compare::{Verdict, compare_paired, lab_settings};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ChainKey {
    /// The member every ratio is to (`restic@0.19.1`).
    pub anchor: String,
    pub dataset: String,
    pub class: MachineClass,
}

/// A member's ratio to the anchor on one measure, as compare judged it.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub ratio: Option<f64>,
    pub interval: Option<[f64; 2]>,
    pub pairs: Option<usize>,
    pub verdict: Verdict,
    /// The verdict in the figure's words (`slower`, `no change`, ...).
    pub word: String,
}

pub struct Member {
    /// The member's version (`0.18.1`, a commit).
    pub version: String,
    /// The run it is shown from (index into the runs), and how many runs
    /// measured it.
    pub run: usize,
    pub runs: usize,
    /// When it was first measured (the earliest of its runs).
    pub first_ms: Option<u64>,
    /// One per [`MEASURES`] entry, in its order.
    pub points: Vec<Option<Point>>,
}

pub struct Chain {
    pub key: ChainKey,
    /// In order (see the module's comment), the anchor not among them.
    pub members: Vec<Member>,
}

/// One run's measure of a member: the run's index and its points.
type Measured = (usize, Vec<Option<Point>>);

/// The chains of `tool`'s series over `runs`.
pub fn of(runs: &[SiteRun], tool: &str) -> Vec<Chain> {
    let mut seen: BTreeMap<ChainKey, BTreeMap<String, Vec<Measured>>> = BTreeMap::new();
    for (i, run) in runs.iter().enumerate() {
        let Some(plan) = &run.raw.compare_plan else {
            continue;
        };
        let settings = lab_settings(&run.raw);
        for series in plan.series.iter().filter(|s| s.tool == tool) {
            let key = ChainKey {
                anchor: series.anchor.clone(),
                dataset: run.dataset.clone(),
                class: run.class.clone(),
            };
            for member in series.members.iter().filter(|m| **m != series.anchor) {
                let Ok(c) = compare_paired(&run.raw, &series.anchor, member, &settings) else {
                    continue;
                };
                let points = MEASURES
                    .iter()
                    .map(|m| point(&c, m, run))
                    .collect::<Vec<_>>();
                seen.entry(key.clone())
                    .or_default()
                    .entry(version_of(tool, member))
                    .or_default()
                    .push((i, points));
            }
        }
    }
    seen.into_iter()
        .map(|(key, by_member)| {
            let mut members: Vec<Member> = by_member
                .into_iter()
                .filter_map(|(version, measured)| {
                    let runs_count = measured.len();
                    let first_ms = measured
                        .iter()
                        .filter_map(|(i, _)| runs[*i].started_unix_ms)
                        .min();
                    // The newest run that measured it.
                    let (run, points) = measured
                        .into_iter()
                        .max_by_key(|(i, _)| (runs[*i].started_unix_ms, *i))?;
                    Some(Member {
                        version,
                        run,
                        runs: runs_count,
                        first_ms,
                        points,
                    })
                })
                .collect();
            order(&mut members);
            Chain { key, members }
        })
        .collect()
}

/// `restic@0.18.1` -> `0.18.1`, as the report's trend names members.
pub fn version_of(tool: &str, member: &str) -> String {
    labrun_report::trend::member_version(tool, member).to_string()
}

fn point(
    c: &labrun_report::compare::Comparison,
    measure: &Measure,
    run: &SiteRun,
) -> Option<Point> {
    let row = c.row(measure.step(run)?, measure.figure)?;
    Some(Point {
        ratio: row.ratio,
        interval: row.interval,
        pairs: row.pairs,
        verdict: row.verdict,
        word: row.verdict_word.clone(),
    })
}

/// By version when every member reads as one, else by when each was first
/// measured (then by name, so the order is total).
fn order(members: &mut [Member]) {
    let by_version = members.iter().all(|m| version_key(&m.version).is_some());
    members.sort_by(|a, b| {
        if by_version {
            version_key(&a.version).cmp(&version_key(&b.version))
        } else {
            a.first_ms.cmp(&b.first_ms)
        }
        .then_with(|| a.version.cmp(&b.version))
    });
}
