//! A tool's page: per dataset and machine class, a trend chart per
//! measure across the tool's runs, each point a link to the run's report;
//! the steps compare found slower or faster, flagged on the charts and
//! listed in one table at the top.

use crate::chart::{ChartPoint, trend_svg};
use crate::lines::Line;
use crate::load::SiteRun;
use crate::markup::{Cell, heading, link, page, paragraph, section, table};
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

fn point_label(run: &SiteRun, tool: &str) -> String {
    run.version_of(tool)
        .map_or_else(|| run.date(), str::to_string)
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
    let mut out = String::new();
    for series in &line.series {
        let unit = series.measure.unit();
        let points: Vec<ChartPoint> = line
            .runs
            .iter()
            .zip(&series.points)
            .map(|(&i, stat)| ChartPoint {
                label: point_label(&runs[i], tool),
                stat: *stat,
                href: report_href(&runs[i]),
                digest: runs[i].digest.clone(),
            })
            .collect();
        out.push_str(&heading(series.measure.title));
        out.push_str(&format!(
            "<figure id=\"{}-{}\">{}</figure>\n",
            names::line_anchor(&line.key.dataset, &line.key.class),
            series.measure.id,
            trend_svg(series.measure.title, unit, &points, &series.changes)
        ));
        let rows: Vec<Vec<Cell>> = line
            .runs
            .iter()
            .enumerate()
            .map(|(n, &i)| {
                let run = &runs[i];
                let stat = series.points[n];
                let change = n
                    .checked_sub(1)
                    .and_then(|p| series.changes.get(p))
                    .and_then(Option::as_ref);
                vec![
                    Cell::Text(run.version_of(tool).unwrap_or("-").into()),
                    Cell::Text(run.date()),
                    Cell::Figure {
                        text: stat.map_or_else(|| "-".into(), |s| unit.range(&s)),
                        sort: stat.map(|s| s.median),
                    },
                    match change {
                        Some(c) if c.flagged() => {
                            Cell::Flag(format!("{}, {}", c.word, c.ratio_text()))
                        }
                        Some(c) => Cell::Text(format!("{}, {}", c.word, c.ratio_text())),
                        None => Cell::Text("-".into()),
                    },
                    Cell::Link {
                        href: report_href(run),
                        text: run.run_id.clone(),
                    },
                ]
            })
            .collect();
        out.push_str(&table(
            &[
                "version",
                "date",
                "median, range",
                "against the run before",
                "report",
            ],
            &rows,
        ));
    }
    out
}
