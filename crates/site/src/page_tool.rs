//! A tool's page: per dataset and machine class, a trend chart per
//! measure across the tool's runs, each point a link to the run's report;
//! the steps compare found slower or faster, flagged on the charts and
//! listed in one table at the top.

use crate::chart::{ChartPoint, trend_svg};
use crate::lines::Line;
use crate::load::SiteRun;
use crate::markup::{Cell, link, page, paragraph, section, table};
use crate::names;

/// From a tool's page (`tools/`) to the site's root.
const UP: &str = "../";

pub fn render(tool: &str, lines: &[&Line], runs: &[SiteRun]) -> String {
    let mut sections = vec![section(
        "site".into(),
        "Site",
        format!(
            "{}{}",
            link(
                &format!("{UP}{}", names::INDEX),
                "Every tool, dataset and machine class"
            ),
            paragraph(
                "One line per dataset and machine class, never mixed. Each point is a run: its median over cycles with the range as a whisker, ordered by the tool's version as the run named it (by date when a run named none). A point links to that run's own report. A step that compare's rule found worse or better than the point before is marked on the chart and listed below."
            )
        ),
    )];
    sections.push(section(
        "flagged".into(),
        "Steps found slower or faster",
        flagged(lines, runs),
    ));
    for line in lines {
        sections.push(section(
            names::line_anchor(&line.key.dataset, &line.key.class),
            format!("{} on {}", line.key.dataset, line.key.class),
            line_body(line, runs),
        ));
    }
    page(&format!("labrun site: {tool}"), &sections)
}

/// `0.19.1, 2026-12-02T05:11:07Z`: adjacent runs may share a version.
fn point_label(run: &SiteRun, tool: &str) -> String {
    match run.version_of(tool) {
        Some(v) => format!("{v}, {}", run.date()),
        None => run.date(),
    }
}

fn report_href(run: &SiteRun) -> String {
    format!("{UP}{}", names::run_report(&run.digest))
}

fn flagged(lines: &[&Line], runs: &[SiteRun]) -> String {
    let mut rows = Vec::new();
    for line in lines {
        for series in &line.series {
            for (w, change) in line.runs.windows(2).zip(&series.changes) {
                let Some(c) = change.as_ref().filter(|c| c.flagged()) else {
                    continue;
                };
                let (from, to) = (&runs[w[0]], &runs[w[1]]);
                rows.push(vec![
                    Cell::Text(line.key.dataset.clone()),
                    Cell::Text(line.key.class.to_string()),
                    Cell::Text(series.measure.title.into()),
                    Cell::Link {
                        href: report_href(from),
                        text: point_label(from, &line.key.tool),
                    },
                    Cell::Link {
                        href: report_href(to),
                        text: point_label(to, &line.key.tool),
                    },
                    Cell::Flag(c.word.clone()),
                    Cell::Text(c.ratio_text()),
                ]);
            }
        }
    }
    table(
        &[
            "dataset",
            "machine class",
            "step",
            "from",
            "to",
            "verdict",
            "ratio (interval)",
        ],
        &rows,
    )
}

fn line_body(line: &Line, runs: &[SiteRun]) -> String {
    let tool = &line.key.tool;
    let anchor = names::line_anchor(&line.key.dataset, &line.key.class);
    let mut out =
        String::from("<div class=\"charts\" style=\"display:flex;flex-wrap:wrap;gap:0 1.5rem\">\n");
    for series in &line.series {
        let points: Vec<ChartPoint> = line
            .runs
            .iter()
            .zip(&series.points)
            .map(|(&i, stat)| ChartPoint {
                label: runs[i]
                    .version_of(tool)
                    .map_or_else(|| runs[i].date(), str::to_string),
                stat: *stat,
                href: report_href(&runs[i]),
                digest: runs[i].digest.clone(),
            })
            .collect();
        out.push_str(&format!(
            "<figure id=\"{anchor}-{}\">{}</figure>\n",
            series.measure.id,
            trend_svg(
                series.measure.title,
                series.measure.unit(),
                &points,
                &series.changes
            )
        ));
    }
    out.push_str("</div>\n");
    let mut header = vec!["version", "date"];
    header.extend(line.series.iter().map(|s| s.measure.title));
    header.push("report");
    let rows: Vec<Vec<Cell>> = line
        .runs
        .iter()
        .enumerate()
        .map(|(n, &i)| {
            let run = &runs[i];
            let mut row = vec![
                Cell::Text(run.version_of(tool).unwrap_or("-").into()),
                Cell::Text(run.date()),
            ];
            row.extend(line.series.iter().map(|series| {
                let unit = series.measure.unit();
                let shown = series.points[n].map_or_else(|| "-".into(), |s| unit.range(&s));
                let change = n
                    .checked_sub(1)
                    .and_then(|p| series.changes.get(p))
                    .and_then(Option::as_ref);
                match change {
                    Some(c) if c.flagged() => {
                        Cell::Flag(format!("{shown}; {} {}", c.word, c.ratio_text()))
                    }
                    _ => Cell::Figure {
                        text: shown,
                        sort: series.points[n].map(|s| s.median),
                    },
                }
            }));
            row.push(Cell::Link {
                href: report_href(run),
                text: run.run_id.clone(),
            });
            row
        })
        .collect();
    out.push_str(&table(&header, &rows));
    out
}
