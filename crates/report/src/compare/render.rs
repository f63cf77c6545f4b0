//! The verdict table for the terminal and `compare.md`. Tool names and run
//! ids come from evidence: pages are escaped whole (newlines kept), cells
//! one line each.

use super::figure::{CpuSource, Figure};
use super::method::percent;
use super::model::{Comparison, Design, Row, SideFigure, Verdict};
use crate::compare::FigureDef as _;
use labrun_evidence::printable::{printable, printable_text};
use std::fmt::Write;

const NONE: &str = "-";

pub fn terminal(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}\n", headline(c));
    for w in &c.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    let table = table(c);
    let widths: Vec<usize> = (0..table[0].len())
        .map(|i| {
            table
                .iter()
                .map(|r| r[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for (n, row) in table.iter().enumerate() {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
        if n == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            let _ = writeln!(out, "{}", rule.join("  "));
        }
    }
    let _ = writeln!(out, "\n{}", tally(c));
    printable_text(&out).into_owned()
}

pub fn markdown(c: &Comparison) -> String {
    let out = format!("# labrun compare\n\n{}", markdown_body(c, "##"));
    crate::export::escape::markdown_page(&out)
}

/// A comparison as a section of a run's own summary (its verdicts after
/// its results), under a heading of its own.
pub fn summary_section(c: &Comparison) -> String {
    format!(
        "## Verdict: {} against {}\n\n{}",
        printable(&c.candidate.tool),
        printable(&c.baseline.tool),
        markdown_body(c, "###")
    )
}

/// The lab's noise floor as a section of the run's summary: what it is,
/// its table, then the A/A pair's (`aa`) own verdicts.
pub fn floor_section(f: &super::NoiseFloor, aa: &Comparison) -> String {
    let mut out = format!(
        "## Noise floor: {} against {} (A/A)\n\n{}\n\n",
        printable(&f.copy),
        printable(&f.tool),
        f.explanation()
    );
    markdown_table(&mut out, &f.table());
    let _ = writeln!(out, "\n### The A/A pair's verdicts\n");
    out.push_str(&markdown_body(aa, "####"));
    out
}

fn markdown_table(out: &mut String, table: &[Vec<String>]) {
    for (n, row) in table.iter().enumerate() {
        let cells: Vec<String> = row.iter().map(|s| s.replace('|', "\\|")).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
        if n == 0 {
            let _ = writeln!(out, "|{}", "---|".repeat(row.len()));
        }
    }
}

/// Everything below the title; `sub` is the heading level of its parts.
fn markdown_body(c: &Comparison, sub: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}\n", headline(c));
    if !c.warnings.is_empty() {
        let _ = writeln!(out, "{sub} Warnings\n");
        for w in &c.warnings {
            let _ = writeln!(out, "- {w}");
        }
        out.push('\n');
    }
    markdown_table(&mut out, &table(c));
    let _ = writeln!(out, "\n{}\n", tally(c));
    let notes: Vec<String> = c
        .rows
        .iter()
        .filter_map(|r| {
            let n = r.note.as_ref()?;
            Some(format!(
                "- {}, {}: {n}",
                crate::export::cells::phase_title(&r.phase),
                r.figure.title()
            ))
        })
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(out, "{sub} Notes\n\n{}\n", notes.join("\n"));
    }
    let _ = writeln!(out, "{sub} Method\n\n{}", c.method);
    out
}

pub fn headline(c: &Comparison) -> String {
    let design = match c.design {
        Design::Paired => format!("paired, in run {}", c.candidate.run_id),
        Design::Unpaired => format!(
            "unpaired: two runs, {} and {} (Welch's interval, wider than a paired one)",
            c.baseline.run_id, c.candidate.run_id
        ),
    };
    let added = match &c.added_pairs {
        Some(a) => format!(
            " `--until-conclusive {}` added {} cycle(s) after the lab's own (cycles {}), each one more pair of the comparisons still open.",
            a.max,
            a.added,
            a.rounds
                .iter()
                .map(|r| r.cycle.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => String::new(),
    };
    format!(
        "Candidate {} against baseline {}, {design}; margin {}, alpha {}, noise threshold {}.{added}",
        printable(&c.candidate.label()),
        printable(&c.baseline.label()),
        percent(c.settings.margin),
        c.settings.alpha,
        percent(c.settings.noise),
    )
}

pub fn tally(c: &Comparison) -> String {
    let count = |v: Verdict| c.rows.iter().filter(|r| r.verdict == v).count();
    let worse = count(Verdict::Worse);
    let gate = if worse > 0 {
        "worse beyond the margin: exit status 1"
    } else {
        "nothing worse beyond the margin: exit status 0"
    };
    format!(
        "{} rows: {worse} worse (slower/larger), {} better, {} no change, {} inconclusive; {gate}. `~`: a side's relative standard deviation is above {}.",
        c.rows.len(),
        count(Verdict::Better),
        count(Verdict::NoChange),
        count(Verdict::Inconclusive),
        percent(c.settings.noise),
    )
}

/// The verdict table, its header first: one source for every format.
pub fn table(c: &Comparison) -> Vec<Vec<String>> {
    let n_title = match c.design {
        Design::Paired => "pairs",
        Design::Unpaired => "n (base/cand)",
    };
    let interval_title = format!("{} interval", percent(c.settings.confidence()));
    let mut rows = vec![
        [
            "phase",
            "figure",
            "baseline",
            "candidate",
            "ratio",
            &interval_title,
            n_title,
            "p (Holm)",
            "verdict",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for r in &c.rows {
        rows.push(vec![
            crate::export::cells::phase_title(&r.phase),
            figure_title(r),
            side(r.figure, &r.baseline),
            side(r.figure, &r.candidate),
            r.ratio.map_or(NONE.into(), |x| format!("{x:.3}")),
            r.interval
                .map_or(NONE.into(), |[lo, hi]| format!("{lo:.3}-{hi:.3}")),
            match r.pairs {
                Some(p) => p.to_string(),
                None => format!("{}/{}", r.baseline.n, r.candidate.n),
            },
            r.test.as_ref().map_or(NONE.into(), |t| p_value(t.p_holm)),
            match &r.noise_floor {
                Some(mark) => format!("{}, {}", r.verdict_word, mark.words()),
                None => r.verdict_word.clone(),
            },
        ]);
    }
    rows.iter()
        .map(|r| r.iter().map(|s| printable(s).into_owned()).collect())
        .collect()
}

fn figure_title(r: &Row) -> String {
    row_figure_title(r.figure, r.cpu_source)
}

/// A row's figure, a CPU row's source named.
pub fn row_figure_title(figure: Figure, cpu: Option<CpuSource>) -> String {
    match cpu {
        Some(CpuSource::Tree) => "CPU (tree, user+sys)".into(),
        Some(CpuSource::Process) => "CPU (process, user+sys)".into(),
        None => figure.title().into(),
    }
}

fn side(figure: Figure, s: &SideFigure) -> String {
    let Some(center) = s.center else {
        return NONE.into();
    };
    let value = figure.def().unit.value(center);
    match s.rsd {
        Some(rsd) => format!(
            "{value} ±{}{}",
            percent((rsd * 1000.0).round() / 1000.0),
            if s.noisy { " ~" } else { "" }
        ),
        None => value,
    }
}

/// Three decimals, or scientific notation below 0.001 (a p-value of
/// 3.7e-6 is not "0.000").
fn p_value(p: f64) -> String {
    if p >= 0.001 {
        format!("{p:.3}")
    } else {
        format!("{p:.1e}")
    }
}
