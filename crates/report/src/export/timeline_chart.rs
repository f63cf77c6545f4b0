//! `chart-timeline.svg`: for each tool (a row) and headline phase (a
//! column), the first cycle's whole-tree resident memory and disk
//! throughput over the step, from the timeline samples in `raw/` alone.

use super::Exporter;
use super::cells;
use crate::error::{ReportError, Result};
use crate::summary::Summary;
use crate::timeline::StepTimeline;
use labrun_evidence::TimelineRow;
use plotters::prelude::*;

pub struct TimelineChart;

const PANEL_W: u32 = 320;
const PANEL_H: u32 = 210;
const MIB: f64 = 1024.0 * 1024.0;

impl Exporter for TimelineChart {
    fn file_name(&self) -> &'static str {
        "chart-timeline.svg"
    }
    fn applies(&self, s: &Summary) -> bool {
        !s.timelines.is_empty()
    }
    fn serialize(&self, s: &Summary) -> Result<Vec<u8>> {
        std::panic::catch_unwind(|| draw(s)).unwrap_or_else(|_| {
            Err(ReportError::Render {
                what: "chart-timeline.svg",
                message: "the chart library failed (a bug: please report it with raw/)".into(),
            })
        })
    }
}

/// The first cycle's timeline of `tool` in `step`.
fn first<'a>(s: &'a Summary, tool: &str, step: &labrun_evidence::Step) -> Option<&'a StepTimeline> {
    s.timelines
        .iter()
        .filter(|t| t.tool == tool && t.step == *step && !t.rows.is_empty())
        .min_by_key(|t| t.cycle)
}

/// Disk throughput between rows, MB/s (10^6 bytes), at each row's time.
fn disk_rates(rows: &[TimelineRow]) -> Vec<(f64, f64)> {
    let bytes = |r: &TimelineRow| r.disk_read_bytes.unwrap_or(0) + r.disk_write_bytes.unwrap_or(0);
    rows.windows(2)
        .filter(|w| w[1].t_secs > w[0].t_secs)
        .map(|w| {
            let db = bytes(&w[1]).saturating_sub(bytes(&w[0])) as f64;
            (w[1].t_secs, db / (w[1].t_secs - w[0].t_secs) / 1e6)
        })
        .collect()
}

fn draw(s: &Summary) -> Result<Vec<u8>> {
    let render = |e: &dyn std::fmt::Display| ReportError::Render {
        what: "chart-timeline.svg",
        message: e.to_string(),
    };
    // Every timed phase the run had but `init`, which is over before the
    // first sample.
    let phases: Vec<labrun_evidence::Step> = s
        .phase_steps()
        .into_iter()
        .filter(|p| *p != labrun_evidence::Step::INIT)
        .collect();
    let tools: Vec<&str> = s
        .tools
        .iter()
        .map(|t| t.tool.as_str())
        .filter(|t| phases.iter().any(|p| first(s, t, p).is_some()))
        .collect();
    let (w, h) = (
        PANEL_W * phases.len() as u32,
        PANEL_H * tools.len().max(1) as u32 + 50,
    );
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| render(&e))?;
        let root = root
            .titled(
                "Whole process tree over each step (first cycle): resident memory (MiB, colour), disk read+write (MB/s, grey)",
                ("sans-serif", 14),
            )
            .map_err(|e| render(&e))?;
        let panels = root.split_evenly((tools.len().max(1), phases.len()));
        for (i, panel) in panels.iter().enumerate() {
            let (row, col) = (i / phases.len(), i % phases.len());
            let Some(tool) = tools.get(row) else { continue };
            let step = &phases[col];
            let title = format!("{tool}: {}", cells::phase_title(step));
            let Some(t) = first(s, tool, step) else {
                panel
                    .titled(&title, ("sans-serif", 12))
                    .map_err(|e| render(&e))?;
                continue;
            };
            let memory: Vec<(f64, f64)> = t
                .rows
                .iter()
                .filter_map(|r| Some((r.t_secs, r.resident_bytes? as f64 / MIB)))
                .collect();
            let disk = disk_rates(&t.rows);
            let x_max = t.rows.iter().map(|r| r.t_secs).fold(1.0, f64::max);
            let y_max = memory.iter().map(|p| p.1).fold(1.0, f64::max) * 1.1;
            let d_max = disk.iter().map(|p| p.1).fold(1.0, f64::max) * 1.1;
            let mut chart = ChartBuilder::on(panel)
                .caption(&title, ("sans-serif", 12))
                .margin(6)
                .x_label_area_size(24)
                .y_label_area_size(40)
                .right_y_label_area_size(40)
                .build_cartesian_2d(0f64..x_max, 0f64..y_max)
                .map_err(|e| render(&e))?
                .set_secondary_coord(0f64..x_max, 0f64..d_max);
            chart
                .configure_mesh()
                .x_labels(4)
                .y_labels(4)
                .x_max_light_lines(0)
                .y_max_light_lines(0)
                .x_desc("s")
                .label_style(("sans-serif", 10))
                .draw()
                .map_err(|e| render(&e))?;
            chart
                .configure_secondary_axes()
                .y_labels(4)
                .label_style(("sans-serif", 10))
                .draw()
                .map_err(|e| render(&e))?;
            chart
                .draw_secondary_series(LineSeries::new(
                    disk,
                    RGBColor(150, 150, 150).stroke_width(1),
                ))
                .map_err(|e| render(&e))?;
            chart
                .draw_series(LineSeries::new(
                    memory,
                    Palette99::pick(row).stroke_width(2),
                ))
                .map_err(|e| render(&e))?;
        }
        root.present().map_err(|e| render(&e))?;
    }
    Ok(svg.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_rates_are_bytes_per_second_between_rows() {
        let row = |t, r, w| TimelineRow {
            t_secs: t,
            disk_read_bytes: Some(r),
            disk_write_bytes: Some(w),
            ..TimelineRow::default()
        };
        let rates = disk_rates(&[
            row(0.0, 0, 0),
            row(1.0, 2_000_000, 1_000_000),
            row(3.0, 2_000_000, 5_000_000),
        ]);
        assert_eq!(rates, vec![(1.0, 3.0), (3.0, 2.0)]);
    }
}
