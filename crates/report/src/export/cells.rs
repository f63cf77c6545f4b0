//! The text of each table cell, shared by the Markdown and terminal tables
//! so both always say the same thing.

use crate::format;
use crate::stats::Stat;
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

/// The columns of a phase's table, in every format.
pub const PHASE_COLUMNS: [&str; 9] = [
    "Tool",
    "Wall time",
    "User CPU",
    "System CPU",
    "Peak memory (largest process)",
    "Peak memory (whole tree)",
    "CPU (whole tree)",
    "Disk written (whole tree)",
    "Cycles ok",
];

/// The three phases the published comparison shows side by side.
pub const HEADLINE_PHASES: [Step; 3] = [Step::BACKUP_FULL, Step::BACKUP_INCREMENTAL, Step::RESTORE];

/// A phase's title: the published steps' in words, a lab's own by name.
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
fn counted(
    summary: &Summary,
    p: &PhaseSummary,
    stat: Option<&Stat>,
    text: fn(&Stat) -> String,
) -> String {
    match stat {
        None => NONE.into(),
        Some(s) => {
            let want = expected(summary, p);
            if s.n < want {
                format!("{} ({} of {want})", text(s), s.n)
            } else {
                text(s)
            }
        }
    }
}

pub fn phase_time(summary: &Summary, t: &ToolSummary, step: &Step) -> String {
    match t.phase(step) {
        Some(p) => counted(summary, p, p.wall_secs.as_ref(), format::secs_range),
        None => NONE.into(),
    }
}

pub fn phase_cpu(summary: &Summary, p: &PhaseSummary, user: bool) -> String {
    let stat = if user { &p.user_secs } else { &p.sys_secs };
    counted(summary, p, stat.as_ref(), format::secs_range)
}

pub fn phase_memory(summary: &Summary, p: &PhaseSummary) -> String {
    counted(summary, p, p.peak_memory_mib.as_ref(), format::mib_range)
}

pub fn phase_tree_memory(summary: &Summary, p: &PhaseSummary) -> String {
    counted(summary, p, p.tree_memory_mib.as_ref(), format::mib_range)
}

pub fn phase_tree_cpu(summary: &Summary, p: &PhaseSummary) -> String {
    counted(summary, p, p.tree_cpu_secs.as_ref(), format::secs_range)
}

pub fn phase_disk_written(summary: &Summary, p: &PhaseSummary) -> String {
    counted(
        summary,
        p,
        p.disk_written_bytes.as_ref(),
        format::bytes_range,
    )
}

pub fn phase_wall(summary: &Summary, p: &PhaseSummary) -> String {
    counted(summary, p, p.wall_secs.as_ref(), format::secs_range)
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

/// Medians of the headline phases' largest-process peaks: "117 / 109 / 104".
pub fn memory_medians(t: &ToolSummary) -> String {
    medians(t, |p| p.peak_memory_mib)
}

/// The same for the whole process tree.
pub fn tree_memory_medians(t: &ToolSummary) -> String {
    medians(t, |p| p.tree_memory_mib)
}

fn medians(t: &ToolSummary, stat: fn(&PhaseSummary) -> Option<Stat>) -> String {
    HEADLINE_PHASES
        .iter()
        .map(|s| {
            t.phase(s)
                .and_then(stat)
                .map_or(NONE.into(), |m| format::mib_value(m.median))
        })
        .collect::<Vec<_>>()
        .join(" / ")
}

/// Medians of user/system CPU of the headline phases: "52/9.1, 6.1/1.2, 20/4.0".
pub fn cpu_medians(t: &ToolSummary) -> String {
    HEADLINE_PHASES
        .iter()
        .map(|s| match t.phase(s) {
            Some(PhaseSummary {
                user_secs: Some(u),
                sys_secs: Some(y),
                ..
            }) => format!(
                "{}/{}",
                format::secs_value(u.median),
                format::secs_value(y.median)
            ),
            _ => NONE.into(),
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
