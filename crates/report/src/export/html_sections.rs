//! The sections of `report.html`, one function each. Table cells are the
//! Markdown writer's own (`cells`, `format`), so the page and `summary.md`
//! always say the same thing in the same words; only the markup differs.

use super::cells::{self, NONE};
use super::html::Section;
use super::html_markup::{Cell, facts, list, svg_data_uri, table, text};
use crate::environment::{Environment, Machine};
use crate::error::Result;
use crate::figures;
use crate::format;
use crate::stats::Stat;
use crate::summary::{CheckOutcome, PhaseSummary, Summary, ToolSummary};
use crate::warning::WarningKind;
use labrun_evidence::{MetadataKind, MetadataStatus};
use std::fmt::Write;

fn section(id: &str, title: &str, body: String) -> Section {
    Section {
        id: id.to_string(),
        title: title.to_string(),
        body,
    }
}

fn median(stat: Option<Stat>) -> Option<f64> {
    stat.map(|s| s.median)
}

/// The lab a run id names: `<lab>-<UTC timestamp>-<digest>`.
fn lab_name(run_id: &str) -> Option<&str> {
    let mut parts = run_id.rsplitn(3, '-');
    let (_digest, stamp, lab) = (parts.next()?, parts.next()?, parts.next()?);
    let is_stamp = stamp.ends_with('Z')
        && stamp.contains('T')
        && stamp
            .chars()
            .all(|c| c.is_ascii_digit() || c == 'T' || c == 'Z');
    (is_stamp && !lab.is_empty()).then_some(lab)
}

pub fn run(s: &Summary) -> Section {
    let finished: Vec<String> = s
        .tools
        .iter()
        .map(|t| format!("{} {}", t.tool, t.cycles_finished))
        .collect();
    let mut body = facts(&[
        ("Run", s.run_id.clone()),
        (
            "Lab",
            lab_name(&s.run_id).map_or("unknown (the run id names none)".into(), str::to_string),
        ),
        (
            "Tools",
            s.tools
                .iter()
                .map(cells::tool_label)
                .collect::<Vec<_>>()
                .join(", "),
        ),
        (
            "Cycles planned",
            s.cycles_planned
                .map_or("unknown (no plan.json)".into(), |c| c.to_string()),
        ),
        (
            "Cycles finished",
            if finished.is_empty() {
                NONE.into()
            } else {
                finished.join(", ")
            },
        ),
    ]);
    body.push_str(
        "<p class=\"note\">Each figure is the median over cycles with its min-max range \
         (\"140 s, range 122-168\"); for an even number of cycles the median is the mean of the \
         two middle values. Failed steps are left out of the figures; \"(2 of 3)\" marks a figure \
         made from fewer cycles. Sizes are in decimal units (kB = 10^3 bytes, MB = 10^6, \
         GB = 10^9), memory in MiB (2^20 bytes). Peak memory is given twice: the largest single \
         process (what <code>/usr/bin/time -v</code> reports, the write-up's figure) and the \
         step's whole process tree (its cgroup: every process it started). Click a column's \
         header to sort a table by it.</p>\n",
    );
    section("run", "The run", body)
}

fn warning_label(kind: WarningKind) -> &'static str {
    match kind {
        WarningKind::SoftwareEmulation => "Software emulation",
        WarningKind::CacheNotDropped => "Cache not dropped",
        WarningKind::StepsFailed => "Failed steps",
        WarningKind::CyclesMissing => "Cycles missing",
        WarningKind::TruncatedRecords => "Records cut short",
        WarningKind::MissingEnvironment => "No environment",
        WarningKind::MissingPlan => "No plan",
        WarningKind::MixedRuns => "Mixed runs",
        WarningKind::ToolsSubset => "Some tools only",
        WarningKind::LeftoverProcesses => "Leftover processes",
        WarningKind::NoTreeMeters => "No whole-tree figures",
        WarningKind::AgentOverhead => "Measuring cost",
        WarningKind::UnreadableTimeline => "Timeline unreadable",
        WarningKind::ComparisonNotMade => "Comparison not made",
        WarningKind::StorageUnknown => "Storage unknown",
        WarningKind::HostNoise => "Host noise",
    }
}

pub fn warnings(s: &Summary) -> Section {
    let body = if s.warnings.is_empty() {
        "<p class=\"ok\">None.</p>\n".to_string()
    } else {
        let mut b = String::from(
            "<div class=\"warnings\" role=\"alert\">\n<p><strong>Read these before trusting \
             the figures.</strong></p>\n<ul>\n",
        );
        for w in &s.warnings {
            let label = warning_label(w.kind);
            // Some messages open with their kind already ("Software emulation: ...").
            let line = match w.message.split_at_checked(label.len()) {
                Some((start, rest)) if start.eq_ignore_ascii_case(label) => {
                    format!("<span class=\"kind\">{}</span>{}", text(start), text(rest))
                }
                _ => format!("<span class=\"kind\">{label}:</span> {}", text(&w.message)),
            };
            let _ = writeln!(b, "<li>{line}</li>");
        }
        b.push_str("</ul>\n</div>\n");
        b
    };
    section("warnings", "Warnings", body)
}

fn exit_text(e: &Option<labrun_evidence::ExitStatus>) -> String {
    match e {
        Some(e) => match (e.code, e.signal) {
            (_, Some(sig)) => format!("killed by signal {sig}"),
            (Some(code), None) => format!("exit {code}"),
            (None, None) => NONE.into(),
        },
        None => NONE.into(),
    }
}

pub fn failed_steps(s: &Summary) -> Section {
    let mut body = String::new();
    if s.failed_steps.is_empty() {
        body.push_str("<p>None.</p>\n");
    } else {
        body.push_str(&table(
            &["Tool", "Cycle", "Step", "Why", "Exit", "Allowed to fail"],
            s.failed_steps.iter().map(|f| {
                vec![
                    Cell::plain(if f.tool.is_empty() { NONE } else { &f.tool }),
                    Cell::figure(f.cycle.to_string(), Some(f64::from(f.cycle))),
                    Cell::plain(f.step.to_string()),
                    Cell::prose(f.error.as_deref().unwrap_or("no reason recorded")),
                    Cell::plain(exit_text(&f.exit)),
                    Cell::plain(if f.allowed {
                        "yes (the protocol allows it)"
                    } else {
                        "no"
                    })
                    .strong(!f.allowed),
                ]
            }),
        ));
    }
    let differences: Vec<String> = s
        .tools
        .iter()
        .flat_map(|t| {
            t.restore_checks
                .iter()
                .filter(|c| !c.first_differences.is_empty())
                .map(|c| {
                    format!(
                        "{}, cycle {}, restore check: first differences: {}",
                        t.tool,
                        c.cycle,
                        c.first_differences.join(", ")
                    )
                })
        })
        .collect();
    if !differences.is_empty() {
        body.push_str(&list(differences.iter().map(String::as_str)));
    }
    section("failed", "Failed steps", body)
}

/// Whether any restore check of a tool failed (its cell is shown bold).
fn check_failed(t: &ToolSummary) -> bool {
    t.checks_with(CheckOutcome::Fail) > 0
}

pub fn results(s: &Summary) -> Section {
    let rows = s.tools.iter().map(|t| {
        let mut row = vec![Cell::plain(cells::tool_label(t))];
        for p in s.roles.headline() {
            row.push(Cell::figure(
                cells::phase_time(s, t, p),
                median(
                    p.and_then(|p| t.phase(p))
                        .and_then(|p| p.stat(&figures::WALL_TIME)),
                ),
            ));
        }
        row.extend([
            Cell::figure(cells::repo_size(t), median(t.repo_size_after_full)),
            Cell::figure(cells::growth(t), median(t.growth_after_incremental)),
            Cell::plain(cells::medians(&s.roles, t, &figures::PEAK_MEMORY)),
            Cell::plain(cells::medians(&s.roles, t, &figures::TREE_MEMORY)),
            Cell::plain(cells::cpu_medians(&s.roles, t)),
            Cell::plain(cells::restore_check(t)).strong(check_failed(t)),
        ]);
        row
    });
    let body = table(&cells::RESULT_COLUMNS, rows);
    section("results", "Results", body)
}

/// One comparison the lab asked for: the verdict table, what it was
/// judged by, and the method, as `compare.md` says them.
pub fn verdicts(i: usize, c: &crate::compare::Comparison) -> Section {
    section(
        &format!("verdict-{}", i + 1),
        &format!("Verdict: {} against {}", c.candidate.tool, c.baseline.tool),
        verdict_body(c),
    )
}

/// The lab's noise floor: what it is, its table, then the A/A pair's own
/// verdicts (`aa`).
pub fn noise_floor(f: &crate::compare::NoiseFloor, aa: &crate::compare::Comparison) -> Section {
    let rows = f.table();
    let header: Vec<&str> = rows
        .first()
        .map_or(Vec::new(), |h| h.iter().map(String::as_str).collect());
    let mut body = format!("<p>{}</p>\n", text(&f.explanation()));
    body.push_str(&table(
        &header,
        rows.iter()
            .skip(1)
            .map(|r| r.iter().map(|v| Cell::plain(v.clone())).collect()),
    ));
    body.push_str("<h3>The A/A pair's verdicts</h3>\n");
    body.push_str(&verdict_body(aa));
    section(
        "noise-floor",
        &format!("Noise floor: {} against {} (A/A)", f.copy, f.tool),
        body,
    )
}

/// A comparison's verdict table, its warnings, tally and method.
fn verdict_body(c: &crate::compare::Comparison) -> String {
    use crate::compare::render;
    let rows = render::table(c);
    let header: Vec<&str> = rows
        .first()
        .map_or(Vec::new(), |h| h.iter().map(String::as_str).collect());
    let mut body = format!("<p>{}</p>\n", text(&render::headline(c)));
    for w in &c.warnings {
        body.push_str(&format!("<p class=\"warn\">{}</p>\n", text(w)));
    }
    body.push_str(&table(
        &header,
        rows.iter()
            .skip(1)
            .map(|r| r.iter().map(|v| Cell::plain(v.clone())).collect()),
    ));
    body.push_str(&format!("<p>{}</p>\n", text(&render::tally(c))));
    body.push_str(&format!(
        "<details><summary>Method</summary><p>{}</p></details>\n",
        text(&c.method)
    ));
    body
}

pub fn history(s: &Summary) -> Option<Section> {
    if s.history.is_empty() {
        return None;
    }
    let mut body = String::from(
        "<p class=\"note\">Snapshot k holds commit k of the series; each restore went into an \
         emptied folder and was checked against its own commit. Times are wall time with the \
         median user and system CPU in parentheses (CPU above wall time means several cores at \
         work).</p>\n",
    );
    body.push_str(&table(
        &[
            "Tool",
            "Snapshot",
            "Commit",
            "Backup",
            "Repo size after",
            "Restore",
            "Restore peak memory",
            "Verified",
        ],
        s.history.iter().map(|r| {
            let wall = |t: &Option<crate::history::Timing>| t.map(|t| t.wall_secs.median);
            let peak = r.restore.and_then(|t| t.peak_memory_mib);
            vec![
                Cell::plain(&r.tool),
                Cell::figure(r.index.to_string(), Some(f64::from(r.index))),
                Cell::plain(r.commit.chars().take(12).collect::<String>()),
                Cell::figure(super::history::timing_cell(&r.backup), wall(&r.backup)),
                Cell::figure(
                    r.repo_size_bytes
                        .as_ref()
                        .map_or_else(|| "n/a".into(), format::bytes_range),
                    median(r.repo_size_bytes),
                ),
                Cell::figure(super::history::timing_cell(&r.restore), wall(&r.restore)),
                Cell::figure(
                    peak.map_or_else(|| "n/a".into(), |m| format::mib_range(&m)),
                    median(peak),
                ),
                Cell::plain(format!("{} of {}", r.verified, r.restores_checked))
                    .strong(r.verified < r.restores_checked),
            ]
        }),
    ));
    Some(section("history", "Per snapshot (git history)", body))
}

pub fn fidelity(s: &Summary) -> Option<Section> {
    if s.fidelity.is_empty() {
        return None;
    }
    let mut body = String::from(
        "<p class=\"note\">What a backup and restore of labrun's fidelity fixture kept. \
         Informative only: content decides whether a restore passes. \"not tested\": the fixture \
         could not hold that kind on this filesystem.</p>\n",
    );
    let mut header = vec!["Tool"];
    header.extend(MetadataKind::ALL.iter().map(|k| k.name()));
    body.push_str(&table(
        &header,
        s.fidelity.iter().map(|row| {
            let mut cells = vec![Cell::plain(&row.tool)];
            cells.extend(MetadataKind::ALL.iter().map(|k| {
                match row.checks.iter().find(|c| c.kind == *k).map(|c| c.status) {
                    Some(MetadataStatus::Preserved) => Cell::plain("kept"),
                    Some(MetadataStatus::Lost) => Cell::plain("lost").strong(true),
                    Some(MetadataStatus::NotTested) => Cell::plain("not tested"),
                    None => Cell::plain(NONE),
                }
            }));
            cells
        }),
    ));
    let mut notes = Vec::new();
    for row in &s.fidelity {
        for c in row
            .checks
            .iter()
            .filter(|c| c.status == MetadataStatus::Lost)
        {
            notes.push(format!(
                "{} lost {}: {}",
                row.tool,
                c.kind.name(),
                c.detail.as_deref().unwrap_or("(no detail)")
            ));
        }
        if !row.differing_cycles.is_empty() {
            let cycles: Vec<String> = row.differing_cycles.iter().map(u32::to_string).collect();
            notes.push(format!(
                "{}: cycle {} gave other verdicts than cycle {} (shown)",
                row.tool,
                cycles.join(", "),
                row.cycle
            ));
        }
    }
    if !notes.is_empty() {
        body.push_str(&list(notes.iter().map(String::as_str)));
    }
    Some(section("fidelity", "Metadata fidelity", body))
}

pub fn phases(s: &Summary) -> Section {
    let mut body = String::new();
    for phase in s.phase_steps() {
        let _ = writeln!(
            body,
            "<h3>{} (<code>{}</code>)</h3>",
            text(&cells::phase_title(&phase)),
            text(phase.as_str())
        );
        body.push_str(&table(
            &cells::phase_columns(s),
            s.tools.iter().filter_map(|t| {
                let p: &PhaseSummary = t.phase(&phase)?;
                let mut row = vec![Cell::plain(cells::tool_label(t))];
                row.extend(
                    s.phase_figures().into_iter().map(|(f, _)| {
                        Cell::figure(cells::phase_figure(s, p, f), median(p.stat(f)))
                    }),
                );
                row.push(
                    Cell::figure(cells::cycles_ok(s, p), Some(f64::from(p.ok)))
                        .strong(p.ok < p.recorded),
                );
                Some(row)
            }),
        ));
    }
    if body.is_empty() {
        body.push_str("<p>No timed phase was recorded.</p>\n");
    }
    section("phases", "Per phase", body)
}

/// Every chart the run writes beside this page, drawn by the same writers.
pub fn charts(s: &Summary) -> Result<Section> {
    let mut body = String::new();
    for chart in super::exporters()
        .iter()
        .filter(|e| e.file_name().ends_with(".svg") && e.applies(s))
    {
        let svg = chart.serialize(s)?;
        let _ = writeln!(
            body,
            "<figure><img src=\"{}\" alt=\"{name}\"><figcaption>{name} (also beside this \
             page)</figcaption></figure>",
            svg_data_uri(&svg),
            name = text(chart.file_name())
        );
    }
    Ok(section("charts", "Charts", body))
}

fn or_unknown(v: &Option<String>) -> String {
    v.as_deref()
        .filter(|s| !s.is_empty())
        .unwrap_or("unknown")
        .to_string()
}

fn machine_rows(env: &Environment) -> Vec<Vec<Cell>> {
    type Field = (&'static str, fn(&Machine) -> String);
    let fields: [Field; 5] = [
        ("CPU", |m| or_unknown(&m.cpu_model)),
        ("CPUs", |m| {
            m.cpus.map_or("unknown".into(), |c| c.to_string())
        }),
        ("Memory (MiB)", |m| {
            m.memory_mib.map_or("unknown".into(), |c| c.to_string())
        }),
        ("Kernel", |m| or_unknown(&m.kernel)),
        ("OS", |m| or_unknown(&m.os)),
    ];
    fields
        .iter()
        .map(|(label, value)| {
            vec![
                Cell::plain(*label),
                Cell::plain(value(&env.host)),
                Cell::plain(value(&env.guest)),
            ]
        })
        .collect()
}

pub fn environment(s: &Summary) -> Section {
    let mut body = String::new();
    match &s.environment {
        None => body.push_str("<p>Not recorded (no readable raw/environment.json).</p>\n"),
        Some(env) => {
            let accel = match env.acceleration {
                Some(a) if a.is_emulated() => format!("{a} (software emulation)"),
                Some(a) => a.to_string(),
                None => "unknown".into(),
            };
            let mut rows = vec![
                ("Acceleration", accel),
                ("Guest disk cache mode", or_unknown(&env.disk_cache)),
            ];
            rows.extend(env.disk_speed().map(|d| ("Guest disk profile", d)));
            rows.extend(env.repositories().map(|r| ("Repositories", r)));
            rows.extend(env.hypervisor.clone().map(|h| ("Hypervisor host", h)));
            rows.push(("libvirt", or_unknown(&env.libvirt_version)));
            rows.push(("QEMU", or_unknown(&env.qemu_version)));
            body.push_str(&facts(&rows));
            body.push_str(&table(
                &["", "Host", "Guest"],
                machine_rows(env).into_iter(),
            ));
            body.push_str("<h3>Tool versions, as each tool reports itself</h3>\n");
            if env.tool_versions.is_empty() {
                body.push_str("<p>Not recorded.</p>\n");
            } else {
                body.push_str(&table(
                    &["Tool", "Version"],
                    env.tool_versions
                        .iter()
                        .map(|(tool, v)| vec![Cell::plain(tool), Cell::prose(v)]),
                ));
            }
        }
    }
    if !s.binaries.is_empty() {
        body.push_str("<h3>Installed binaries (SHA-256)</h3>\n");
        body.push_str(&table(
            &["Binary", "SHA-256"],
            s.binaries
                .iter()
                .map(|b| vec![Cell::plain(&b.path), Cell::plain(&b.sha256)]),
        ));
    }
    let ran: Vec<_> = s.tool_sources.iter().filter(|t| t.run).collect();
    if !ran.is_empty() {
        body.push_str("<h3>Where the binaries came from</h3>\n");
        body.push_str(&table(
            &["Tool", "Version", "Source"],
            ran.iter().map(|t| {
                vec![
                    Cell::plain(&t.name),
                    Cell::plain(t.version.as_deref().unwrap_or(NONE)),
                    Cell::prose(&t.source),
                ]
            }),
        ));
    }
    section("environment", "Environment", body)
}

pub fn meter_cost(s: &Summary) -> Section {
    let body = match &s.meter_cost {
        None => "<p>Not recorded: no timed step has whole-tree figures (no writable cgroup v2, \
                 or an agent before them).</p>\n"
            .to_string(),
        Some(cost) => {
            let mut b = format!("<p>Cost of measuring: {}.</p>\n", text(&cost.sentence()));
            if !cost.over_limit.is_empty() {
                let _ = writeln!(
                    b,
                    "<p>Steps at or above {}:</p>",
                    crate::meter_cost::percent(crate::meter_cost::LIMIT)
                );
                b.push_str(&table(
                    &["Step", "Agent's CPU over the step's"],
                    cost.over_limit.iter().map(|(step, share)| {
                        vec![
                            Cell::plain(step),
                            Cell::figure(crate::meter_cost::percent(*share), Some(*share)),
                        ]
                    }),
                ));
            }
            b
        }
    };
    section("cost", "What measuring cost", body)
}

pub fn remake(s: &Summary) -> Section {
    let body = format!(
        "<p><code>labrun report results/{}</code> re-makes this page, <code>summary.md</code> \
         and the other summaries from <code>raw/</code> alone.</p>\n",
        text(&s.run_id)
    );
    section("remake", "How to re-make this", body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lab_is_the_run_id_before_its_timestamp() {
        assert_eq!(lab_name("default-20261129T1851Z-3fa2c1"), Some("default"));
        assert_eq!(
            lab_name("full-restore-20261201T190906Z-2568d7"),
            Some("full-restore")
        );
        assert_eq!(lab_name("my-run"), None);
        assert_eq!(lab_name("a-b-c"), None);
    }
}
