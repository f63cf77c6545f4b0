//! `labrun trend TOOL`: the site's lines of one tool, as text. One block per
//! dataset and machine class (never mixed), one row per measure: each run's
//! median in version order, each step with compare's verdict and ratio, and
//! the first slower and first faster step named. Then the tool's series
//! and tracked branches, chained through their anchors ([`crate::chain`]).

use crate::chain;
use crate::lines::{self, Line};
use crate::load::{self, SiteRun};
use labrun_report::compare::{Settings, Verdict};
use labrun_store::Store;
use std::fmt::Write as _;

/// The trend of `tool` over every run of the store: the runs that measured
/// it under its own name as lines, and its series (releases or tracked
/// commits, `TOOL@...`) chained through their anchors; `None` when no run
/// of the store measured it.
pub fn trend(store: &mut Store, tool: &str) -> Result<Option<String>, crate::SiteError> {
    // Only the runs of the tool or of its series are read.
    let member = format!("{tool}@");
    let stored: Vec<_> = store
        .runs(&labrun_store::RunFilter::default())?
        .into_iter()
        .filter(|r| {
            r.tools
                .iter()
                .any(|t| t.name == tool || t.name.starts_with(&member))
        })
        .collect();
    let (runs, skipped) = load::read(store, stored);
    let lines: Vec<Line> = lines::of(&runs, &Settings::default())
        .into_iter()
        .filter(|l| l.key.tool == tool)
        .collect();
    let chains = chain::of(&runs, tool);
    if lines.is_empty() && chains.is_empty() {
        return Ok(None);
    }
    let mut out = String::new();
    for line in &lines {
        write_line(&mut out, line, &runs);
    }
    for c in &chains {
        write_chain(&mut out, tool, c, &runs);
    }
    for s in &skipped {
        let _ = writeln!(out, "left out: run sha256:{} ({})", s.digest, s.reason);
    }
    Ok(Some(out))
}

/// A series chained through its anchor: each member's ratio to it, with
/// compare's paired interval and verdict from the run that measured both,
/// and the first member worse and the first better than the anchor.
fn write_chain(out: &mut String, tool: &str, c: &chain::Chain, runs: &[SiteRun]) {
    let key = &c.key;
    let anchor = chain::version_of(tool, &key.anchor);
    let _ = writeln!(
        out,
        "{tool} series on {} ({}), every ratio to the anchor {anchor}",
        key.dataset, key.class
    );
    let names: Vec<String> = c
        .members
        .iter()
        .map(|m| {
            let also = if m.runs > 1 {
                format!(", newest of {} runs", m.runs)
            } else {
                String::new()
            };
            format!("{} (run {}{also})", m.version, runs[m.run].run_id)
        })
        .collect();
    let _ = writeln!(out, "  members: {}", names.join(", "));
    for (k, measure) in crate::measure::MEASURES.iter().enumerate() {
        let mut cells = Vec::new();
        let first = |verdict: Verdict| -> Option<String> {
            c.members.iter().find_map(|m| {
                let p = m.points.get(k)?.as_ref()?;
                (p.verdict == verdict).then(|| format!("{} ({} than {anchor})", m.version, p.word))
            })
        };
        let (worse, better) = (first(Verdict::Worse), first(Verdict::Better));
        for m in &c.members {
            let cell = match m.points.get(k).and_then(Option::as_ref) {
                Some(p) => match (p.ratio, p.interval) {
                    (Some(r), Some([lo, hi])) => {
                        format!("{} {r:.3}x [{lo:.3}, {hi:.3}] {}", m.version, p.word)
                    }
                    (Some(r), None) => format!("{} {r:.3}x {}", m.version, p.word),
                    (None, _) => format!("{} -", m.version),
                },
                None => format!("{} -", m.version),
            };
            cells.push(cell);
        }
        let _ = writeln!(out, "  {}: {}", measure.title, cells.join("; "));
        let _ = writeln!(
            out,
            "    first worse than the anchor: {}; first better: {}",
            worse.unwrap_or_else(|| "none".into()),
            better.unwrap_or_else(|| "none".into())
        );
    }
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
