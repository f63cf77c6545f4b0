//! The text of each table cell, shared by the Markdown and terminal tables
//! so both always say the same thing.

use crate::figures::{self, Figure, Unit};
use crate::format;
use crate::roles::Roles;
use crate::summary::{CheckOutcome, PhaseSummary, Summary, ToolSummary};
use labrun_evidence::Step;

/// Shown where there is no figure.
pub const NONE: &str = "-";

/// The columns of the results table, in every format.
pub const RESULT_COLUMNS: [&str; 10] = [
    "Tool",
    "Full backup",
    "Incremental",
    "Restore",
    "Repo size after full",
    "Growth after incremental",
    "Peak memory (MiB), largest process: full / incr / restore",
    "Peak memory (MiB), whole tree: full / incr / restore",
    "CPU user/sys (s) full, incr, restore",
    "Restore check",
];

/// The columns of a phase's table, in every format: the tool, every
/// per-phase figure of the table, the cycles that succeeded.
pub fn phase_columns(summary: &Summary) -> Vec<&'static str> {
    let mut columns = vec!["Tool"];
    columns.extend(summary.phase_figures().into_iter().map(|(_, c)| c.column));
    columns.push("Cycles ok");
    columns
}

/// A phase's title: the published steps in words, a lab's own by its name.
/// Roles pick the Results table's columns, never a heading: a step the lab
/// named (`backup_interrupted`, killed half-way) keeps the name that says
/// what it is, and the heading names the step as `labrun check` does.
pub fn phase_title(step: &Step) -> String {
    match step.as_str() {
        "init" => "Init".into(),
        "backup_full" => "Full backup".into(),
        "backup_incremental" => "Incremental backup".into(),
        "restore" => "Restore".into(),
        other => other.into(),
    }
}

pub fn tool_label(t: &ToolSummary) -> String {
    // The floor's copy is no tool of its own: say what its row measures.
    if let Some(of) = &t.noise_floor_of {
        return format!("{} (noise floor: A/A copy of {of})", t.tool);
    }
    match &t.version {
        // `restic@0.14.0` names its version already.
        Some(v) if labrun_evidence::variant::tool_variant(&t.tool) == Some(v.as_str()) => {
            t.tool.clone()
        }
        Some(v) if !v.is_empty() => format!("{} {v}", t.tool),
        _ => t.tool.clone(),
    }
}

/// How many cycles a phase's figure should have been made from.
fn expected(summary: &Summary, p: &PhaseSummary) -> usize {
    summary.cycles_planned.map_or(p.recorded as usize, |c| {
        (c as usize).max(p.recorded as usize)
    })
}

/// "140 s, range 122-168", with "(2 of 3)" when some cycles are missing or failed.
fn counted(summary: &Summary, p: &PhaseSummary, figure: &Figure) -> String {
    match p.stat(figure) {
        None => NONE.into(),
        Some(s) => {
            let text = figure.unit.range(&s);
            let want = expected(summary, p);
            if s.n < want {
                format!("{text} ({} of {want})", s.n)
            } else {
                text
            }
        }
    }
}

/// The wall time of a tool's phase, if the phase is there at all.
pub fn phase_time(summary: &Summary, t: &ToolSummary, step: Option<&Step>) -> String {
    match step.and_then(|s| t.phase(s)) {
        Some(p) => counted(summary, p, &figures::WALL_TIME),
        None => NONE.into(),
    }
}

/// One figure of a phase.
pub fn phase_figure(summary: &Summary, p: &PhaseSummary, figure: &Figure) -> String {
    counted(summary, p, figure)
}

/// Every per-phase figure of a phase, in the table's order.
pub fn phase_figures(summary: &Summary, p: &PhaseSummary) -> Vec<String> {
    summary
        .phase_figures()
        .into_iter()
        .map(|(f, _)| phase_figure(summary, p, f))
        .collect()
}

pub fn repo_size(t: &ToolSummary) -> String {
    t.repo_size_after_full
        .as_ref()
        .map_or(NONE.into(), format::bytes_range)
}

pub fn growth(t: &ToolSummary) -> String {
    t.growth_after_incremental
        .as_ref()
        .map_or(NONE.into(), format::bytes_range)
}

/// Medians of a figure in the headline phases, seconds and MiB without
/// their unit (the header names it), sizes with theirs: "117 / 109 / 104".
pub fn medians(roles: &Roles, t: &ToolSummary, figure: &Figure) -> String {
    roles
        .headline()
        .iter()
        .map(|s| {
            s.and_then(|s| t.phase(s))
                .and_then(|p| p.stat(figure))
                .map_or(NONE.into(), |m| match figure.unit {
                    Unit::Secs => format::secs_value(m.median),
                    Unit::Mib => format::mib_value(m.median),
                    Unit::Bytes | Unit::Files => figure.unit.value(m.median),
                })
        })
        .collect::<Vec<_>>()
        .join(" / ")
}

/// Medians of user/system CPU of the headline phases: "52/9.1, 6.1/1.2, 20/4.0".
pub fn cpu_medians(roles: &Roles, t: &ToolSummary) -> String {
    roles
        .headline()
        .iter()
        .map(|s| {
            let p = s.and_then(|s| t.phase(s));
            let stat = |f: &Figure| p.and_then(|p| p.stat(f));
            match (stat(&figures::USER_CPU), stat(&figures::SYSTEM_CPU)) {
                (Some(u), Some(y)) => format!(
                    "{}/{}",
                    format::secs_value(u.median),
                    format::secs_value(y.median)
                ),
                _ => NONE.into(),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// "pass (3/3)", "FAIL in cycle 2 (2 of 3 passed)", "not checked".
pub fn restore_check(t: &ToolSummary) -> String {
    let total = t.restore_checks.len();
    if total == 0 {
        return NONE.into();
    }
    let passed = t.checks_with(CheckOutcome::Pass);
    let unchecked = t.checks_with(CheckOutcome::NotChecked);
    let failed: Vec<String> = t
        .restore_checks
        .iter()
        .filter(|c| c.outcome == CheckOutcome::Fail)
        .map(|c| c.cycle.to_string())
        .collect();
    if !failed.is_empty() {
        let which = if failed.len() == 1 { "cycle" } else { "cycles" };
        format!(
            "FAIL in {which} {} ({passed} of {total} passed)",
            failed.join(", ")
        )
    } else if unchecked == total {
        "not checked".into()
    } else if unchecked > 0 {
        format!("pass {passed} of {total}, {unchecked} not checked")
    } else {
        format!("pass ({passed}/{total})")
    }
}

/// "3 of 3", "2 of 3 (1 failed)".
pub fn cycles_ok(summary: &Summary, p: &PhaseSummary) -> String {
    let want = expected(summary, p);
    let failed = p.recorded - p.ok;
    if failed > 0 {
        format!("{} of {want} ({failed} failed)", p.ok)
    } else {
        format!("{} of {want}", p.ok)
    }
}
