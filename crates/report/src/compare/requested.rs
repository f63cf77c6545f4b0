//! The comparisons a lab asked for (`compare:` -> `raw/compare-plan.json`),
//! made from the run's own evidence as part of its summary.

use super::verdict::apply_holm;
use super::{Comparison, NoiseFloor, Settings, compare_paired};
use crate::evidence::RawRun;
use crate::warning::{Warning, WarningKind};
use labrun_evidence::compare::ComparePair;

/// One comparison per requested pair, and a warning for each that could
/// not be made (a pair of tools this run did not run, no cycle where both
/// succeeded), saying why.
pub fn requested(run: &RawRun) -> (Vec<Comparison>, Vec<Warning>) {
    let Some(plan) = &run.compare_plan else {
        return (Vec::new(), Vec::new());
    };
    let settings = lab_settings(run);
    let mut made = Vec::new();
    let mut warnings = Vec::new();
    for pair in &plan.pairs {
        match compare_paired(run, &pair.baseline, &pair.candidate, &settings) {
            Ok(mut c) => {
                c.added_pairs = run.added_pairs.clone();
                keep_asked(&mut c, pair);
                made.push(c)
            }
            Err(e) => warnings.push(Warning::new(
                WarningKind::ComparisonNotMade,
                format!(
                    "The comparison of {} (candidate) against {} (baseline) was not made: {e}",
                    pair.candidate, pair.baseline
                ),
            )),
        }
    }
    (made, warnings)
}

/// What the lab's comparisons and series are judged by: its margin, and the
/// sequential rule's looks when `bench` added pairs under it. Older runs (no
/// `added-pairs.json`, or one without `looks`) are judged as before.
pub fn lab_settings(run: &RawRun) -> Settings {
    let margin = run.compare_plan.as_ref().and_then(|p| p.margin);
    Settings {
        margin: margin.unwrap_or(Settings::default().margin),
        looks: run
            .added_pairs
            .as_ref()
            .and_then(|a| a.looks)
            .unwrap_or(super::sequential::FIXED),
        ..Settings::default()
    }
}

/// Only the rows `pair` asks about (all of them when it names no phase or
/// figure), their verdicts adjusted by Holm over those rows alone: a
/// question about one figure is not diluted by twenty nobody asked.
pub fn keep_asked(c: &mut Comparison, pair: &ComparePair) {
    if pair.phase.is_none() && pair.figure.is_none() {
        return;
    }
    c.rows.retain(|r| pair.asks(&r.phase, r.figure));
    apply_holm(&mut c.rows, c.settings.alpha);
}

/// The floor of a lab's `noise_floor:` pair among the comparisons `made`,
/// each other comparison's rows marked inside or beyond it. None without
/// one, or when its pair could not be made (a warning says why).
pub fn noise_floor(run: &RawRun, made: &mut [Comparison]) -> Option<NoiseFloor> {
    let pair = run.compare_plan.as_ref()?.noise_floor.as_ref()?;
    let aa = made
        .iter()
        .find(|c| c.baseline.tool == pair.baseline && c.candidate.tool == pair.candidate)?;
    let floor = super::floor::of(aa);
    for c in made.iter_mut().filter(|c| !floor.is(c)) {
        floor.mark(c);
    }
    Some(floor)
}
