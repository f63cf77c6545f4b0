//! `summary.md`: the published comparison's table, per-phase detail, the
//! environment, what failed, warnings, and how to re-make the page.
//!
//! Names, versions, errors and the environment come from the lab and the
//! guest; a control character in them would drive the terminal of whoever
//! `cat`s the file. The page is escaped as a whole once it is made
//! (newlines and tabs kept); `raw/` keeps the bytes as they were.

use super::Exporter;
use super::cells::{self, NONE};
use crate::environment::{Environment, Machine};
use crate::error::Result;
use crate::figures;
use crate::summary::Summary;
use std::fmt::Write;

pub struct Markdown;

impl Exporter for Markdown {
    fn file_name(&self) -> &'static str {
        "summary.md"
    }

    fn serialize(&self, summary: &Summary) -> Result<Vec<u8>> {
        Ok(render(summary).into_bytes())
    }
}

pub fn render(s: &Summary) -> String {
    super::escape::markdown_page(&page(s))
}

fn page(s: &Summary) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# labrun summary: {}\n", s.run_id);
    let cycles = match s.cycles_planned {
        Some(c) => format!("{c} cycles planned"),
        None => "cycles planned unknown (no plan.json)".into(),
    };
    let _ = writeln!(
        out,
        "Each figure is the median over cycles with its min-max range (\"140 s, range 122-168\"); \
         for an even number of cycles the median is the mean of the two middle values. {cycles}. \
         Failed steps are left out of the figures; \"(2 of 3)\" marks a figure made from fewer cycles. \
         Sizes are in decimal units (kB = 10^3 bytes, MB = 10^6, GB = 10^9), memory in MiB (2^20 bytes). \
         Peak memory is given twice: the largest single process (what `/usr/bin/time -v` reports, the write-up's figure) \
         and the step's whole process tree (its cgroup: every process it started, resident memory sampled at least once a second).\n"
    );

    out.push_str("## Results\n\n");
    table(
        &mut out,
        &cells::RESULT_COLUMNS,
        s.tools.iter().map(|t| {
            let [full, incr, restore] = s.roles.headline().map(|p| cells::phase_time(s, t, p));
            vec![
                cells::tool_label(t),
                full,
                incr,
                restore,
                cells::repo_size(t),
                cells::growth(t),
                cells::medians(&s.roles, t, &figures::PEAK_MEMORY),
                cells::medians(&s.roles, t, &figures::TREE_MEMORY),
                cells::cpu_medians(&s.roles, t),
                cells::restore_check(t),
            ]
        }),
    );

    for c in &s.comparisons {
        match &s.noise_floor {
            Some(f) if f.is(c) => out.push_str(&crate::compare::render::floor_section(f, c)),
            _ => out.push_str(&crate::compare::render::summary_section(c)),
        }
        out.push('\n');
    }
    super::trend::markdown(&mut out, s);
    super::history::markdown(&mut out, s);
    super::fidelity::markdown(&mut out, s);
    out.push_str("## Per phase\n\n");
    for phase in s.phase_steps() {
        let _ = writeln!(out, "### {} (`{phase}`)\n", cells::phase_title(&phase));
        table(
            &mut out,
            &cells::phase_columns(s),
            s.tools.iter().filter_map(|t| {
                let p = t.phase(&phase)?;
                let mut row = vec![cells::tool_label(t)];
                row.extend(cells::phase_figures(s, p));
                row.push(cells::cycles_ok(s, p));
                Some(row)
            }),
        );
    }

    out.push_str("## Environment\n\n");
    match &s.environment {
        Some(env) => environment(&mut out, env),
        None => out.push_str("Not recorded (no readable raw/environment.json).\n"),
    }
    if let Some(cost) = &s.meter_cost {
        let _ = writeln!(out, "- Cost of measuring: {}", cost.sentence());
    }
    if !s.binaries.is_empty() {
        out.push_str("\nInstalled binaries (SHA-256):\n\n");
        for b in &s.binaries {
            let _ = writeln!(out, "- `{}` `{}`", b.sha256, b.path);
        }
    }

    let ran: Vec<_> = s.tool_sources.iter().filter(|t| t.run).collect();
    if !ran.is_empty() {
        out.push_str("\nWhere the binaries came from:\n\n");
        for t in ran {
            let version = t.version.as_deref().unwrap_or("");
            let _ = writeln!(out, "- {} {version}: {}", t.name, t.source);
        }
    }

    out.push_str("\n## Failed steps\n\n");
    if s.failed_steps.is_empty() {
        out.push_str("None.\n");
    }
    for f in &s.failed_steps {
        let who = if f.tool.is_empty() {
            String::new()
        } else {
            format!("{}, ", f.tool)
        };
        let exit = match &f.exit {
            Some(e) => match (e.code, e.signal) {
                (_, Some(sig)) => format!(" (killed by signal {sig})"),
                (Some(code), None) => format!(" (exit {code})"),
                (None, None) => String::new(),
            },
            None => String::new(),
        };
        let why = f
            .error
            .as_deref()
            .map_or("no reason recorded".to_string(), one_line);
        let allowed = if f.allowed {
            " (the protocol allows it to fail)"
        } else {
            ""
        };
        let oom = if f.oom { ", **oom**" } else { "" };
        let _ = writeln!(
            out,
            "- {who}cycle {}, `{}`{oom}{allowed}: {why}{exit}",
            f.cycle, f.step
        );
    }
    for t in &s.tools {
        for c in t
            .restore_checks
            .iter()
            .filter(|c| !c.first_differences.is_empty())
        {
            let _ = writeln!(
                out,
                "- {}, cycle {}, restore check: first differences: {}",
                t.tool,
                c.cycle,
                c.first_differences
                    .iter()
                    .map(|d| format!("`{}`", one_line(d)))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }

    out.push_str("\n## Warnings\n\n");
    if s.warnings.is_empty() {
        out.push_str("None.\n");
    }
    for w in &s.warnings {
        let _ = writeln!(out, "- {}", one_line(&w.message));
    }

    let _ = writeln!(
        out,
        "\n## How to re-make this\n\n`labrun report results/{}` (reads only `raw/`).",
        s.run_id
    );
    out
}

fn environment(out: &mut String, env: &Environment) {
    let accel = match env.acceleration {
        Some(a) if a.is_emulated() => format!("{a} (software emulation)"),
        Some(a) => a.to_string(),
        None => "unknown".into(),
    };
    let _ = writeln!(out, "- Acceleration: {accel}");
    let _ = writeln!(
        out,
        "- Guest disk cache mode: {}",
        or_unknown(&env.disk_cache)
    );
    if let Some(speed) = env.disk_speed() {
        let _ = writeln!(out, "- Guest disk profile: {speed}");
    }
    if let Some(repositories) = env.repositories() {
        let _ = writeln!(out, "- Repositories: {}", one_line(&repositories));
    }
    match &env.hypervisor {
        Some(h) => {
            let _ = writeln!(out, "- Host (hypervisor `{h}`): {}", machine(&env.host));
        }
        None => {
            let _ = writeln!(out, "- Host: {}", machine(&env.host));
        }
    }
    let _ = writeln!(out, "- Guest: {}", machine(&env.guest));
    let _ = writeln!(
        out,
        "- libvirt {}, QEMU {}",
        or_unknown(&env.libvirt_version),
        or_unknown(&env.qemu_version)
    );
    if env.tool_versions.is_empty() {
        out.push_str("- Tool versions: not recorded\n");
    } else {
        out.push_str("- Tool versions, as each tool reports itself:\n");
        for (tool, v) in &env.tool_versions {
            let _ = writeln!(out, "  - {tool}: `{}`", one_line(v));
        }
    }
}

fn machine(m: &Machine) -> String {
    let mut parts = vec![or_unknown(&m.cpu_model).to_string()];
    if let Some(c) = m.cpus {
        parts.push(format!("{c} CPUs"));
    }
    if let Some(mem) = m.memory_mib {
        parts.push(format!("{mem} MiB"));
    }
    parts.push(format!("kernel {}", or_unknown(&m.kernel)));
    if let Some(os) = &m.os {
        parts.push(os.clone());
    }
    parts.join(", ")
}

fn or_unknown(v: &Option<String>) -> &str {
    v.as_deref().filter(|s| !s.is_empty()).unwrap_or("unknown")
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub(crate) fn table(out: &mut String, header: &[&str], rows: impl Iterator<Item = Vec<String>>) {
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
    let mut any = false;
    for row in rows {
        any = true;
        let cells: Vec<String> = row.iter().map(|c| cell(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    if !any {
        let _ = writeln!(out, "| {} |", vec![NONE; header.len()].join(" | "));
    }
    out.push('\n');
}

/// A table cell: one line, pipes escaped.
fn cell(s: &str) -> String {
    one_line(s).replace('|', "\\|")
}
