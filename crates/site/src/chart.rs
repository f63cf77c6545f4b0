//! A trend chart as inline SVG, written here (no script library, nothing
//! fetched): one point per run, its median with the range over cycles as
//! a whisker, each point a link to that run's report page, and a step that
//! compare found worse or better marked on the later point.

use crate::lines::Change;
use labrun_report::Stat;
use labrun_report::compare::Verdict;
use labrun_report::export::html_markup::text;
use labrun_report::figures::Unit;
use std::fmt::Write;

const WIDTH: f64 = 620.0;
const HEIGHT: f64 = 250.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 34.0;
const BOTTOM: f64 = 56.0;
const WORSE: &str = "#b3261e";
const BETTER: &str = "#1b7f3b";
const LINE: &str = "#0b57a4";

/// One run on the chart.
pub struct ChartPoint {
    /// Under the axis: the version, or the date.
    pub label: String,
    pub stat: Option<Stat>,
    /// The run's report page, relative to the page the chart is on.
    pub href: String,
    pub digest: String,
}

/// `changes[i]` is the step from point i to point i+1.
pub fn trend_svg(
    title: &str,
    unit: Unit,
    points: &[ChartPoint],
    changes: &[Option<Change>],
) -> String {
    let top_value = points
        .iter()
        .filter_map(|p| p.stat.map(|s| s.max))
        .fold(0.0_f64, f64::max);
    let y_max = if top_value > 0.0 {
        top_value * 1.1
    } else {
        1.0
    };
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x = |i: usize| {
        if points.len() < 2 {
            LEFT + plot_w / 2.0
        } else {
            LEFT + plot_w * i as f64 / (points.len() - 1) as f64
        }
    };
    let y = |v: f64| TOP + plot_h * (1.0 - v / y_max);
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"trend\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"{WIDTH}\" height=\"{HEIGHT}\" role=\"img\" aria-label=\"{t}\">\n<title>{t}</title>\n\
         <rect x=\"0\" y=\"0\" width=\"{WIDTH}\" height=\"{HEIGHT}\" fill=\"#fff\"/>\n\
         <text x=\"{LEFT}\" y=\"20\" font-size=\"14\" font-weight=\"600\" fill=\"#1b1f24\">{t}</text>\n",
        t = text(title)
    );
    // Axes and three value ticks (0, half, top).
    let _ = writeln!(
        out,
        "<path d=\"M{LEFT} {TOP} V{b} H{r}\" stroke=\"#555\" fill=\"none\"/>",
        b = TOP + plot_h,
        r = WIDTH - RIGHT
    );
    for v in [0.0, y_max / 2.0, y_max] {
        let _ = writeln!(
            out,
            "<text x=\"{tx}\" y=\"{ty:.1}\" font-size=\"11\" text-anchor=\"end\" fill=\"#555\">{label}</text>\
             <line x1=\"{LEFT}\" x2=\"{r}\" y1=\"{gy:.1}\" y2=\"{gy:.1}\" stroke=\"#e3e6ea\"/>",
            tx = LEFT - 6.0,
            ty = y(v) + 4.0,
            gy = y(v),
            r = WIDTH - RIGHT,
            label = text(&unit.value(v)),
        );
    }
    // The medians joined, broken where a run has no value.
    let mut path = String::new();
    let mut pen_down = false;
    for (i, p) in points.iter().enumerate() {
        match p.stat {
            Some(s) => {
                let _ = write!(
                    path,
                    "{}{:.1} {:.1} ",
                    if pen_down { "L" } else { "M" },
                    x(i),
                    y(s.median)
                );
                pen_down = true;
            }
            None => pen_down = false,
        }
    }
    if !path.is_empty() {
        let _ = writeln!(
            out,
            "<path d=\"{}\" stroke=\"{LINE}\" stroke-width=\"1.5\" fill=\"none\"/>",
            path.trim_end()
        );
    }
    for (i, p) in points.iter().enumerate() {
        let label: String = p.label.chars().take(16).collect();
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#1b1f24\">{}</text>",
            x(i),
            TOP + plot_h + 16.0,
            text(&label)
        );
        let Some(s) = p.stat else { continue };
        let flag = i
            .checked_sub(1)
            .and_then(|j| changes.get(j))
            .and_then(Option::as_ref)
            .filter(|c| c.flagged());
        let colour = match flag.map(|c| c.verdict) {
            Some(Verdict::Worse) => WORSE,
            Some(Verdict::Better) => BETTER,
            _ => LINE,
        };
        let hover = format!(
            "{}: {}{}",
            p.label,
            unit.range(&s),
            flag.map_or(String::new(), |c| format!(
                ", {} than the point before",
                c.word
            ))
        );
        let _ = writeln!(
            out,
            "<a href=\"{href}\"><g class=\"point\" data-run=\"{digest}\" data-median=\"{median}\"{flagged}>\
             <title>{hover}</title>\
             <line x1=\"{cx:.1}\" x2=\"{cx:.1}\" y1=\"{lo:.1}\" y2=\"{hi:.1}\" stroke=\"{colour}\" stroke-width=\"2\"/>\
             <line x1=\"{l:.1}\" x2=\"{r:.1}\" y1=\"{lo:.1}\" y2=\"{lo:.1}\" stroke=\"{colour}\"/>\
             <line x1=\"{l:.1}\" x2=\"{r:.1}\" y1=\"{hi:.1}\" y2=\"{hi:.1}\" stroke=\"{colour}\"/>\
             <circle cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"5\" fill=\"{colour}\"/></g></a>",
            href = text(&p.href),
            digest = text(&p.digest),
            median = s.median,
            flagged = flag.map_or(String::new(), |c| format!(
                " data-flag=\"{}\"",
                text(&c.word)
            )),
            hover = text(&hover),
            cx = x(i),
            cy = y(s.median),
            lo = y(s.min),
            hi = y(s.max),
            l = x(i) - 4.0,
            r = x(i) + 4.0,
        );
        if let Some(c) = flag {
            let _ = writeln!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" font-weight=\"700\" text-anchor=\"middle\" fill=\"{colour}\">{}</text>",
                x(i),
                (y(s.max) - 8.0).max(TOP - 2.0),
                text(&c.word)
            );
        }
    }
    out.push_str("</svg>\n");
    out
}
