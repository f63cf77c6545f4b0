//! Charts as SVG, drawn with plotters' SVG backend: horizontal bars (the
//! median) with min-max range whiskers, one bar per tool and phase. Text is
//! written as SVG `<text>` elements, so no font files are needed to draw.

use super::Exporter;
use super::cells;
use crate::error::{ReportError, Result};
use crate::figures::{self, Figure};
use crate::stats::Stat;
use crate::summary::Summary;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Time per phase per tool, seconds.
pub struct TimeChart;
/// Repository size after the full backup and growth after the incremental, in
/// the decimal unit of the largest bar (one unit per chart).
pub struct RepoSizeChart;
/// Peak memory per phase per tool, MiB.
pub struct MemoryChart;

impl Exporter for TimeChart {
    fn file_name(&self) -> &'static str {
        "chart-time.svg"
    }
    fn serialize(&self, s: &Summary) -> Result<Vec<u8>> {
        let rows = per_phase(s, &figures::WALL_TIME);
        draw(
            self.file_name(),
            "Time per phase (median, min-max range)",
            "seconds",
            &rows,
        )
    }
}

impl Exporter for RepoSizeChart {
    fn file_name(&self) -> &'static str {
        "chart-repo-size.svg"
    }
    fn serialize(&self, s: &Summary) -> Result<Vec<u8>> {
        let largest = s
            .tools
            .iter()
            .flat_map(|t| [t.repo_size_after_full, t.growth_after_incremental])
            .flatten()
            .map(|st| st.median)
            .fold(0.0, f64::max);
        let (unit, div) = labrun_evidence::human::size_unit(largest);
        let gb = 1.0 / div;
        let mut rows = Vec::new();
        for (i, t) in s.tools.iter().enumerate() {
            if let Some(st) = t.repo_size_after_full {
                rows.push(Bar::new(
                    format!("{}: after full backup", t.tool),
                    i,
                    st.scaled(gb),
                ));
            }
            if let Some(st) = t.growth_after_incremental {
                rows.push(Bar::new(
                    format!("{}: growth after incremental", t.tool),
                    i,
                    st.scaled(gb),
                ));
            }
        }
        draw(
            self.file_name(),
            "Repository size (median, min-max range)",
            &if unit == "B" {
                "bytes".to_string()
            } else {
                format!("{unit} (10^{} bytes)", div.log10().round())
            },
            &rows,
        )
    }
}

impl Exporter for MemoryChart {
    fn file_name(&self) -> &'static str {
        "chart-memory.svg"
    }
    fn serialize(&self, s: &Summary) -> Result<Vec<u8>> {
        let rows = per_phase(s, &figures::PEAK_MEMORY);
        draw(
            self.file_name(),
            "Peak memory per phase (median, min-max range)",
            "MiB",
            &rows,
        )
    }
}

pub(crate) struct Bar {
    label: String,
    /// Index of the tool (or variant), for its colour.
    tool: usize,
    stat: Stat,
}

impl Bar {
    pub(crate) fn new(label: String, tool: usize, stat: Stat) -> Bar {
        Bar { label, tool, stat }
    }
}

/// One bar per phase and tool, grouped by phase.
fn per_phase(s: &Summary, figure: &Figure) -> Vec<Bar> {
    let mut rows = Vec::new();
    for phase in s.phase_steps() {
        for (i, t) in s.tools.iter().enumerate() {
            if let Some(st) = t.phase(&phase).and_then(|p| p.stat(figure)) {
                rows.push(Bar::new(
                    format!("{}: {}", t.tool, cells::phase_title(&phase)),
                    i,
                    st,
                ));
            }
        }
    }
    rows
}

const WIDTH: u32 = 900;
const ROW_HEIGHT: u32 = 26;

/// Draws one chart. A panic inside plotters becomes an error, so a chart
/// library bug can never take the whole report down with it.
pub(crate) fn draw(what: &'static str, title: &str, unit: &str, rows: &[Bar]) -> Result<Vec<u8>> {
    std::panic::catch_unwind(|| draw_unguarded(what, title, unit, rows)).unwrap_or_else(|_| {
        Err(ReportError::Render {
            what,
            message: "the chart library failed (a bug: please report it with raw/records.jsonl)"
                .into(),
        })
    })
}

fn draw_unguarded(what: &'static str, title: &str, unit: &str, rows: &[Bar]) -> Result<Vec<u8>> {
    let render = |e: &dyn std::fmt::Display| ReportError::Render {
        what,
        message: e.to_string(),
    };
    let n = rows.len();
    let height = 110 + ROW_HEIGHT * n.max(1) as u32;
    let label_width = rows
        .iter()
        .map(|r| r.label.chars().count())
        .max()
        .unwrap_or(10) as u32
        * 7
        + 16;
    // Room on the right for the value printed after each whisker.
    let x_max = rows
        .iter()
        .map(|r| r.stat.max)
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE)
        * 1.3;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| render(&e))?;
        if rows.is_empty() {
            root.titled(title, ("sans-serif", 18))
                .map_err(|e| render(&e))?;
            root.draw(&Text::new(
                "no figures recorded",
                (20, 60),
                ("sans-serif", 14),
            ))
            .map_err(|e| render(&e))?;
            root.present().map_err(|e| render(&e))?;
        } else {
            let mut chart = ChartBuilder::on(&root)
                .caption(title, ("sans-serif", 18))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(label_width)
                // plotters' integer ranges include their end: 0..n-1 is n rows.
                // One row would be an empty range that plotters draws nothing
                // in, so a lone row gets an empty row above it.
                .build_cartesian_2d(0f64..x_max, (0..n.max(2) - 1).into_segmented())
                .map_err(|e| render(&e))?;
            // Row 0 at the top: plotters' y axis grows upward.
            let slot = |i: usize| n - 1 - i;
            let labels: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
            let label_of = |v: &SegmentValue<usize>| match v {
                SegmentValue::CenterOf(y) if *y < n => labels[n - 1 - *y].to_string(),
                _ => String::new(),
            };
            chart
                .configure_mesh()
                .disable_y_mesh()
                // Few faint lines; and never 0 on the integer (row) axis:
                // plotters 0.3.7 overflows computing its key points then.
                .x_max_light_lines(1)
                .x_label_formatter(&|v| axis_number(*v))
                .y_labels(n)
                .y_label_formatter(&label_of)
                .x_desc(unit)
                .label_style(("sans-serif", 12))
                .draw()
                .map_err(|e| render(&e))?;
            chart
                .draw_series(rows.iter().enumerate().map(|(i, r)| {
                    let colour = Palette99::pick(r.tool).filled();
                    let mut bar = Rectangle::new(
                        [
                            (0.0, SegmentValue::Exact(slot(i))),
                            (r.stat.median, SegmentValue::Exact(slot(i) + 1)),
                        ],
                        colour,
                    );
                    bar.set_margin(4, 4, 0, 0);
                    bar
                }))
                .map_err(|e| render(&e))?;
            chart
                .draw_series(
                    rows.iter()
                        .enumerate()
                        .filter(|(_, r)| r.stat.n > 1)
                        .map(|(i, r)| {
                            ErrorBar::new_horizontal(
                                SegmentValue::CenterOf(slot(i)),
                                r.stat.min,
                                r.stat.median,
                                r.stat.max,
                                BLACK.stroke_width(1),
                                8,
                            )
                        }),
                )
                .map_err(|e| render(&e))?;
            let value_style = ("sans-serif", 11)
                .into_text_style(&root)
                .pos(Pos::new(HPos::Left, VPos::Center));
            chart
                .draw_series(rows.iter().enumerate().map(|(i, r)| {
                    Text::new(
                        value_label(&r.stat),
                        (r.stat.max + x_max * 0.01, SegmentValue::CenterOf(slot(i))),
                        value_style.clone(),
                    )
                }))
                .map_err(|e| render(&e))?;
            root.present().map_err(|e| render(&e))?;
        }
    }
    Ok(svg.into_bytes())
}

/// The median, with the range when there is one, in the unit the axis
/// names, three significant digits (the precision of the median).
fn value_label(s: &Stat) -> String {
    let decimals = labrun_evidence::human::sig3_decimals(s.median);
    let v = |x: f64| labrun_evidence::human::fixed(x, decimals);
    let (min, max) = (v(s.min), v(s.max));
    if s.n > 1 && min != max {
        format!("{} ({min}-{max})", v(s.median))
    } else {
        v(s.median)
    }
}

/// Axis numbers without trailing zeros: "100", "2.5".
fn axis_number(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
