//! `labrun trend TOOL`: the site's lines of one tool, as text. One block per
//! dataset and machine class (never mixed), one row per measure: each run's
//! median in version order, each step with compare's verdict and ratio, and
//! the first slower and first faster step named.

use crate::lines::{self, Line};
use crate::load::{self, SiteRun};
use labrun_report::compare::{Settings, Verdict};
use labrun_store::Store;
use std::fmt::Write as _;

/// The trend of `tool` over every run of the store; `None` when no run of
/// the store measured it.
pub fn trend(store: &mut Store, tool: &str) -> Result<Option<String>, crate::SiteError> {
    // Only the tool's runs are read: the store selects them.
    let filter = labrun_store::RunFilter {
        tool: Some(tool.to_string()),
        ..Default::default()
    };
    let (runs, skipped) = load::matching(store, &filter)?;
    let lines: Vec<Line> = lines::of(&runs, &Settings::default())
        .into_iter()
        .filter(|l| l.key.tool == tool)
        .collect();
    if lines.is_empty() {
        return Ok(None);
    }
    let mut out = String::new();
    for line in &lines {
        write_line(&mut out, line, &runs);
    }
    for s in &skipped {
        let _ = writeln!(out, "left out: run sha256:{} ({})", s.digest, s.reason);
    }
    Ok(Some(out))
}

fn write_line(out: &mut String, line: &Line, runs: &[SiteRun]) {
    let key = &line.key;
    let _ = writeln!(out, "{} on {} ({})", key.tool, key.dataset, key.class);
    let names: Vec<String> = line
        .runs
        .iter()
        .map(|&i| {
            let run = &runs[i];
            run.version_of(&key.tool)
                .map_or_else(|| run.date(), str::to_string)
        })
        .collect();
    let _ = writeln!(out, "  runs: {}", names.join(" -> "));
    for series in &line.series {
        let unit = series.measure.unit();
        let mut row = String::new();
        for (k, point) in series.points.iter().enumerate() {
            if k > 0 {
                match series.changes.get(k - 1).and_then(Option::as_ref) {
                    Some(c) => {
                        let _ = write!(row, " -[{} {}]-> ", c.word, c.ratio_text());
                    }
                    None => row.push_str(" -> "),
                }
            }
            row.push_str(&point.as_ref().map_or("-".into(), |s| unit.value(s.median)));
        }
        // As the report's trend names them: the first step of each verdict.
        let first = |verdict: Verdict| {
            series
                .changes
                .iter()
                .position(|c| c.as_ref().is_some_and(|c| c.verdict == verdict))
                .and_then(|k| {
                    let c = series.changes[k].as_ref()?;
                    Some(format!(
                        "{} -> {} ({} {})",
                        names[k],
                        names[k + 1],
                        c.word,
                        c.ratio_text()
                    ))
                })
                .unwrap_or_else(|| "none".into())
        };
        let _ = writeln!(out, "  {}: {row}", series.measure.title);
        let _ = writeln!(
            out,
            "    first worse step: {}; first better step: {}",
            first(Verdict::Worse),
            first(Verdict::Better)
        );
    }
}
