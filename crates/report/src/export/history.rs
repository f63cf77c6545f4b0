//! The git-history study's part of the summary: a per-snapshot table (in
//! `summary.md`) and `history.svg`, three panels over the snapshots: backup
//! time, repository size, restore time, one line per tool (medians over
//! cycles; user + system CPU as a dashed line beside each wall time).

use super::Exporter;
use crate::error::{ReportError, Result};
use crate::format;
use crate::history::{SnapshotRow, Timing};
use crate::summary::Summary;
use plotters::prelude::*;
use std::fmt::Write;

/// "12.0 s (user 30.1 + sys 2.0)": CPU beside wall, as the study showed it.
pub(super) fn timing_cell(t: &Option<Timing>) -> String {
    let Some(t) = t else {
        return "n/a".into();
    };
    let mut out = format::secs_range(&t.wall_secs);
    if let (Some(u), Some(s)) = (t.user_secs, t.sys_secs) {
        let _ = write!(
            out,
            " (user {} + sys {})",
            format::secs_value(u.median),
            format::secs_value(s.median)
        );
    }
    out
}

/// The Markdown section; nothing for a run without a series.
pub fn markdown(out: &mut String, s: &Summary) {
    if s.history.is_empty() {
        return;
    }
    out.push_str("## Per snapshot (git history)\n\n");
    out.push_str(
        "Snapshot k holds commit k of the series; each restore went into an emptied folder and was \
         checked against its own commit. Times are wall time with the median user and system CPU \
         in parentheses (CPU above wall time means several cores at work). Chart: `history.svg`.\n\n",
    );
    let _ = writeln!(
        out,
        "| Tool | Snapshot | Commit | Backup | Repo size after | Restore | Restore peak memory | Verified |"
    );
    out.push_str("|---|---|---|---|---|---|---|---|\n");
    for r in &s.history {
        let commit: String = r.commit.chars().take(12).collect();
        let _ = writeln!(
            out,
            "| {} | {} | `{}` | {} | {} | {} | {} | {} of {} |",
            r.tool,
            r.index,
            commit,
            timing_cell(&r.backup),
            r.repo_size_bytes
                .as_ref()
                .map_or_else(|| "n/a".into(), format::bytes_range),
            timing_cell(&r.restore),
            r.restore
                .and_then(|t| t.peak_memory_mib)
                .map_or_else(|| "n/a".into(), |m| format::mib_range(&m)),
            r.verified,
            r.restores_checked,
        );
    }
    out.push('\n');
}

/// `history.svg`, written for git-history runs only.
pub struct HistoryChart;

impl Exporter for HistoryChart {
    fn file_name(&self) -> &'static str {
        "history.svg"
    }

    fn applies(&self, s: &Summary) -> bool {
        !s.history.is_empty()
    }

    fn serialize(&self, s: &Summary) -> Result<Vec<u8>> {
        std::panic::catch_unwind(|| draw(&s.history)).unwrap_or_else(|_| {
            Err(ReportError::Render {
                what: "history.svg",
                message:
                    "the chart library failed (a bug: please report it with raw/records.jsonl)"
                        .into(),
            })
        })
    }
}

type Figure = fn(&SnapshotRow) -> Option<f64>;

struct Panel {
    title: &'static str,
    unit: &'static str,
    value: Figure,
    /// Drawn dashed beside `value` (CPU beside wall time).
    beside: Option<Figure>,
}

fn cpu(t: &Option<Timing>) -> Option<f64> {
    let t = t.as_ref()?;
    Some(t.user_secs?.median + t.sys_secs?.median)
}

fn panels() -> [Panel; 3] {
    [
        Panel {
            title: "Backup time by snapshot (solid: wall, dashed: user+sys CPU)",
            unit: "seconds",
            value: |r| r.backup.map(|t| t.wall_secs.median),
            beside: Some(|r| cpu(&r.backup)),
        },
        Panel {
            title: "Repository size after each backup",
            unit: "MB",
            value: |r| r.repo_size_bytes.map(|s| s.median / 1e6),
            beside: None,
        },
        Panel {
            title: "Restore time by snapshot (solid: wall, dashed: user+sys CPU)",
            unit: "seconds",
            value: |r| r.restore.map(|t| t.wall_secs.median),
            beside: Some(|r| cpu(&r.restore)),
        },
    ]
}

fn draw(rows: &[SnapshotRow]) -> Result<Vec<u8>> {
    let render = |e: &dyn std::fmt::Display| ReportError::Render {
        what: "history.svg",
        message: e.to_string(),
    };
    let mut tools: Vec<&str> = Vec::new();
    for r in rows {
        if !tools.contains(&r.tool.as_str()) {
            tools.push(&r.tool);
        }
    }
    let last = rows.iter().map(|r| r.index).max().unwrap_or(1).max(2);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 3 * 300)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| render(&e))?;
        for (area, panel) in root.split_evenly((3, 1)).iter().zip(panels()) {
            let series = |f: Figure, tool: &str| -> Vec<(u32, f64)> {
                rows.iter()
                    .filter(|r| r.tool == tool)
                    .filter_map(|r| Some((r.index, f(r)?)))
                    .collect()
            };
            let top = tools
                .iter()
                .flat_map(|t| {
                    let mut v = series(panel.value, t);
                    if let Some(b) = panel.beside {
                        v.extend(series(b, t));
                    }
                    v
                })
                .map(|(_, y)| y)
                .fold(0.0, f64::max)
                .max(f64::MIN_POSITIVE)
                * 1.1;
            let mut chart = ChartBuilder::on(area)
                .caption(panel.title, ("sans-serif", 16))
                .margin(10)
                .x_label_area_size(35)
                .y_label_area_size(60)
                .build_cartesian_2d(1u32..last, 0f64..top)
                .map_err(|e| render(&e))?;
            chart
                .configure_mesh()
                .x_desc("snapshot")
                .y_desc(panel.unit)
                .x_labels((last as usize).min(20))
                .max_light_lines(1)
                .label_style(("sans-serif", 12))
                .draw()
                .map_err(|e| render(&e))?;
            for (i, tool) in tools.iter().enumerate() {
                let colour = Palette99::pick(i).to_rgba();
                chart
                    .draw_series(LineSeries::new(
                        series(panel.value, tool),
                        colour.stroke_width(2),
                    ))
                    .map_err(|e| render(&e))?
                    .label(*tool)
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(2))
                    });
                if let Some(beside) = panel.beside {
                    chart
                        .draw_series(DashedLineSeries::new(
                            series(beside, tool),
                            6,
                            4,
                            colour.stroke_width(1),
                        ))
                        .map_err(|e| render(&e))?;
                }
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperLeft)
                .label_font(("sans-serif", 12))
                .draw()
                .map_err(|e| render(&e))?;
        }
        root.present().map_err(|e| render(&e))?;
    }
    Ok(svg.into_bytes())
}
