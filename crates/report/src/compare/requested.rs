//! The comparisons a lab asked for (`compare:` -> `raw/compare-plan.json`),
//! made from the run's own evidence as part of its summary.

use super::{Comparison, Settings, compare_paired};
use crate::evidence::RawRun;
use crate::warning::{Warning, WarningKind};

/// One comparison per requested pair, and a warning for each that could
/// not be made (a pair of tools this run did not run, no cycle where both
/// succeeded), saying why.
pub fn requested(run: &RawRun) -> (Vec<Comparison>, Vec<Warning>) {
    let Some(plan) = &run.compare_plan else {
        return (Vec::new(), Vec::new());
    };
    let settings = Settings {
        margin: plan.margin.unwrap_or(Settings::default().margin),
        ..Settings::default()
    };
    let mut made = Vec::new();
    let mut warnings = Vec::new();
    for pair in &plan.pairs {
        match compare_paired(run, &pair.baseline, &pair.candidate, &settings) {
            Ok(mut c) => {
                c.added_pairs = run.added_pairs.clone();
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
