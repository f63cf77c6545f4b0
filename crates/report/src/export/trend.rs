//! A release series' trend in the summary: tables and the first worse and
//! first better steps in words (`summary.md`, `report.html`, the same cells), and `trend.svg`,
//! one panel per phase and figure: the versions in order on the x axis,
//! each ratio to the anchor with its interval, the anchor at 1.

use super::Exporter;
use crate::compare::FigureDef as _;
use crate::error::{ReportError, Result};
use crate::summary::Summary;
use crate::trend::{Trend, TrendRow, TrendStep};
use plotters::prelude::*;
use std::fmt::Write;

const NONE: &str = "n/a";

/// `restic@0.18.1` -> `0.18.1` (the series' own name is the heading's).
fn version<'a>(t: &Trend, member: &'a str) -> &'a str {
    crate::trend::member_version(&t.tool, member)
}

/// `1.31x [1.12, 1.53]`, or the ratio alone for sizes.
fn ratio_cell(ratio: Option<f64>, interval: Option<[f64; 2]>) -> String {
    match (ratio, interval) {
        (Some(r), Some([lo, hi])) => format!("{r:.3}x [{lo:.3}, {hi:.3}]"),
        (Some(r), None) => format!("{r:.3}x"),
        (None, _) => NONE.into(),
    }
}

fn step_name(t: &Trend, s: &TrendStep) -> String {
    format!("{} -> {}", version(t, &s.from), version(t, &s.to))
}

/// The row in one line: its first worse and first better steps named, or
/// that there is none, and the steps that stayed inconclusive.
pub fn line(t: &Trend, r: &TrendRow) -> String {
    let (worse, better) = r.figure.words();
    let first = |index: Option<usize>, word: &str| match index.map(|i| &r.steps[i]) {
        Some(s) => format!(
            "first {word} step {}, {}",
            step_name(t, s),
            ratio_cell(s.ratio, s.interval)
        ),
        None => format!("no {word} step"),
    };
    let mut out = format!(
        "{}: {}; {}",
        r.title(),
        first(r.first_worse, worse),
        first(r.first_better, better)
    );
    let open: Vec<String> = r
        .steps
        .iter()
        .filter(|s| s.verdict == crate::compare::Verdict::Inconclusive)
        .map(|s| step_name(t, s))
        .collect();
    if !open.is_empty() {
        let _ = write!(out, "; inconclusive: {}", open.join(", "));
    }
    out
}

/// How the trend was made, with this trend's settings.
pub fn method(t: &Trend) -> String {
    format!(
        "Each version's ratio is to the anchor {anchor} (version / anchor), the geometric mean \
         over this run's cycles, paired cycle by cycle, with its {conf:.0}% interval: the \
         statistics `labrun compare` uses. Each step is an adjacent pair, older -> newer \
         (newer / older), judged at a {margin:.0}% margin with Holm's correction across the \
         chain's steps of each row (alpha {alpha}). Only ratios are kept, never seconds: every \
         run of this series includes the anchor, so runs on another day or host combine \
         through it (a version's ratio in one run beside its ratio in another), never through \
         absolute times.",
        anchor = t.anchor,
        conf = t.confidence * 100.0,
        margin = t.margin * 100.0,
        alpha = t.alpha,
    )
}

/// Ratio to the anchor per row (phase and figure) and version.
pub fn ratio_table(t: &Trend) -> Vec<Vec<String>> {
    let mut head = vec!["phase, figure".to_string()];
    head.extend(t.members.iter().map(|m| {
        let v = version(t, m).to_string();
        if *m == t.anchor {
            format!("{v} (anchor)")
        } else {
            v
        }
    }));
    let mut rows = vec![head];
    for r in &t.rows {
        let mut row = vec![r.title()];
        row.extend(r.points.iter().map(|p| ratio_cell(p.ratio, p.interval)));
        rows.push(row);
    }
    rows
}

/// Each adjacent step's ratio and verdict per row.
pub fn step_table(t: &Trend) -> Vec<Vec<String>> {
    let mut head = vec!["phase, figure".to_string()];
    if let Some(r) = t.rows.first() {
        head.extend(r.steps.iter().map(|s| step_name(t, s)));
    }
    let mut rows = vec![head];
    for r in &t.rows {
        let mut row = vec![r.title()];
        row.extend(
            r.steps
                .iter()
                .map(|s| format!("{}, {}", ratio_cell(s.ratio, s.interval), s.verdict_word)),
        );
        rows.push(row);
    }
    rows
}

fn markdown_table(out: &mut String, rows: &[Vec<String>]) {
    let Some((head, body)) = rows.split_first() else {
        return;
    };
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    super::markdown::table(out, &head, body.iter().cloned());
}

fn html_table(rows: &[Vec<String>]) -> String {
    let Some((head, body)) = rows.split_first() else {
        return String::new();
    };
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    super::html_markup::table(
        &head,
        body.iter().map(|r| {
            r.iter()
                .map(|c| super::html_markup::Cell::plain(c.clone()))
                .collect()
        }),
    )
}

/// The page's section of one trend: the same words and tables; the chart
/// is `trend.svg` among the charts.
pub fn html_section(i: usize, t: &Trend, s: &Summary) -> super::html::Section {
    use super::html_markup::text;
    let mut body = format!("<p>{}</p>\n<ul>\n", text(&method(t)));
    for r in &t.rows {
        let _ = writeln!(body, "<li>{}</li>", text(&line(t, r)));
    }
    body.push_str("</ul>\n<p>Ratio to the anchor (interval):</p>\n");
    body.push_str(&html_table(&ratio_table(t)));
    body.push_str("<p>Adjacent steps (newer / older), Holm across the chain:</p>\n");
    body.push_str(&html_table(&step_table(t)));
    if let Some(d) = &s.decided {
        let _ = writeln!(body, "<p>Pairs added: {}.</p>", text(&d.line()));
    }
    body.push_str("<p>Chart: <code>trend.svg</code> (under Charts).</p>\n");
    super::html::Section {
        id: format!("trend-{}", i + 1),
        title: format!("Trend: {} (anchor {})", t.tool, t.anchor),
        body,
    }
}

/// The Markdown sections; nothing for a run without a series.
pub fn markdown(out: &mut String, s: &Summary) {
    for t in &s.trends {
        let _ = writeln!(out, "## Trend: {} (anchor {})\n", t.tool, t.anchor);
        let _ = writeln!(out, "{}\n", method(t));
        for r in &t.rows {
            let _ = writeln!(out, "- {}", line(t, r));
        }
        out.push('\n');
        out.push_str("Ratio to the anchor (interval):\n\n");
        markdown_table(out, &ratio_table(t));
        out.push_str("Adjacent steps (newer / older), Holm across the chain:\n\n");
        markdown_table(out, &step_table(t));
        if let Some(d) = &s.decided {
            let _ = writeln!(out, "Pairs added: {}.\n", d.line());
        }
    }
}

/// `trend.svg`: a run with a series.
pub struct TrendChart;

impl Exporter for TrendChart {
    fn file_name(&self) -> &'static str {
        "trend.svg"
    }
    fn serialize(&self, s: &Summary) -> Result<Vec<u8>> {
        draw(&s.trends)
    }
    fn applies(&self, s: &Summary) -> bool {
        !s.trends.is_empty()
    }
}

/// Panels of 2 columns: each row of each trend, the versions on x (0..n),
/// the ratio on y (log scale would hide the anchor's 1; a linear axis
/// around 1 reads directly).
fn draw(trends: &[Trend]) -> Result<Vec<u8>> {
    let render = |e: &dyn std::fmt::Display| ReportError::Render {
        what: "trend.svg",
        message: e.to_string(),
    };
    let panels: Vec<(&Trend, &TrendRow)> = trends
        .iter()
        .flat_map(|t| t.rows.iter().map(move |r| (t, r)))
        .filter(|(_, r)| r.points.iter().any(|p| p.ratio.is_some()))
        .collect();
    let cols = 2usize;
    let grid_rows = panels.len().div_ceil(cols).max(1);
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (1000, 260 * grid_rows as u32)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| render(&e))?;
        let areas = root.split_evenly((grid_rows, cols));
        for (area, (t, r)) in areas.iter().zip(&panels) {
            let n = r.points.len();
            let (mut lo, mut hi) = (1.0f64, 1.0f64);
            for p in &r.points {
                for v in p.ratio.iter().chain(p.interval.iter().flatten()) {
                    lo = lo.min(*v);
                    hi = hi.max(*v);
                }
            }
            let pad = ((hi - lo) * 0.15).max(0.05);
            let labels: Vec<String> = t
                .members
                .iter()
                .map(|m| version(t, m).to_string())
                .collect();
            let mut chart = ChartBuilder::on(area)
                .caption(format!("{}: {}", t.tool, r.title()), ("sans-serif", 14))
                .margin(10)
                .x_label_area_size(30)
                .y_label_area_size(50)
                .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), (lo - pad)..(hi + pad))
                .map_err(|e| render(&e))?;
            chart
                .configure_mesh()
                .x_labels(n)
                .x_label_formatter(&|x| {
                    let i = x.round();
                    if (x - i).abs() < 1e-6 && i >= 0.0 {
                        labels.get(i as usize).cloned().unwrap_or_default()
                    } else {
                        String::new()
                    }
                })
                .y_desc(format!("ratio to {}", version(t, &t.anchor)))
                .max_light_lines(0)
                .label_style(("sans-serif", 11))
                .draw()
                .map_err(|e| render(&e))?;
            // The anchor's level.
            chart
                .draw_series(DashedLineSeries::new(
                    [(-0.5, 1.0), (n as f64 - 0.5, 1.0)],
                    5,
                    4,
                    BLACK.mix(0.5).stroke_width(1),
                ))
                .map_err(|e| render(&e))?;
            let colour = Palette99::pick(0).to_rgba();
            let points: Vec<(f64, f64)> = r
                .points
                .iter()
                .enumerate()
                .filter_map(|(i, p)| Some((i as f64, p.ratio?)))
                .collect();
            chart
                .draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))
                .map_err(|e| render(&e))?;
            chart
                .draw_series(
                    points
                        .iter()
                        .map(|&(x, y)| Circle::new((x, y), 4, colour.filled())),
                )
                .map_err(|e| render(&e))?;
            chart
                .draw_series(r.points.iter().enumerate().filter_map(|(i, p)| {
                    let [a, b] = p.interval?;
                    Some(PathElement::new(
                        vec![(i as f64, a), (i as f64, b)],
                        colour.stroke_width(2),
                    ))
                }))
                .map_err(|e| render(&e))?;
            // The first worse step (red) and the first better (green),
            // marked on their newer versions.
            for (step, colour) in [(r.first_worse, RED), (r.first_better, GREEN)] {
                if let Some(s) = step.map(|i| &r.steps[i])
                    && let Some(i) = t.members.iter().position(|m| *m == s.to)
                    && let Some(y) = r.points[i].ratio
                {
                    chart
                        .draw_series(std::iter::once(Cross::new(
                            (i as f64, y),
                            8,
                            colour.stroke_width(2),
                        )))
                        .map_err(|e| render(&e))?;
                }
            }
        }
        root.present().map_err(|e| render(&e))?;
    }
    Ok(svg.into_bytes())
}
