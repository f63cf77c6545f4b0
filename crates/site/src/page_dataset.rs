//! A dataset's page: per machine class, the tools side by side (each
//! tool's newest run on this dataset and class), and per measure which
//! tool is best, with compare's verdict of it against the runner-up, so
//! "best" is only said as strongly as the evidence allows.

use crate::lines::{self, Line};
use crate::load::SiteRun;
use crate::markup::{Cell, link, page, paragraph, section, table};
use crate::measure::MEASURES;
use crate::names;
use labrun_report::MachineClass;
use labrun_report::compare::Settings;
use std::collections::BTreeSet;

const UP: &str = "../";

pub fn render(dataset: &str, lines: &[&Line], runs: &[SiteRun], settings: &Settings) -> String {
    let classes: BTreeSet<&MachineClass> = lines.iter().map(|l| &l.key.class).collect();
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
                "Per machine class, each tool's newest run on this dataset (the last point of its line). Best is the lowest median; compare's rule then says whether it is beyond the margin from the runner-up, or not told apart from it."
            )
        ),
    )];
    for class in classes {
        let newest: Vec<(&str, &SiteRun)> = lines
            .iter()
            .filter(|l| l.key.class == *class)
            .filter_map(|l| Some((l.key.tool.as_str(), &runs[*l.runs.last()?])))
            .collect();
        sections.push(section(
            names::class_anchor(class),
            format!("Machine class {class}"),
            format!("{}{}", side_by_side(&newest), best(&newest, settings)),
        ));
    }
    page(&format!("labrun site: dataset {dataset}"), &sections)
}

fn side_by_side(newest: &[(&str, &SiteRun)]) -> String {
    let mut header = vec!["tool", "version", "date"];
    header.extend(MEASURES.iter().map(|m| m.title));
    header.push("report");
    let rows: Vec<Vec<Cell>> = newest
        .iter()
        .map(|(tool, run)| {
            let mut row = vec![
                Cell::Link {
                    href: format!("{UP}{}", names::tool_page(tool)),
                    text: tool.to_string(),
                },
                Cell::Text(run.version_of(tool).unwrap_or("-").into()),
                Cell::Text(run.date()),
            ];
            row.extend(MEASURES.iter().map(|m| {
                let stat = m.stat(run, tool);
                Cell::Figure {
                    text: stat.map_or_else(|| "-".into(), |s| m.unit().range(&s)),
                    sort: stat.map(|s| s.median),
                }
            }));
            row.push(Cell::Link {
                href: format!("{UP}{}", names::run_report(&run.digest)),
                text: run.run_id.clone(),
            });
            row
        })
        .collect();
    table(&header, &rows)
}

fn best(newest: &[(&str, &SiteRun)], settings: &Settings) -> String {
    let rows: Vec<Vec<Cell>> = MEASURES
        .iter()
        .filter_map(|m| {
            let mut ranked: Vec<(&str, &SiteRun, f64)> = newest
                .iter()
                .filter_map(|(t, r)| Some((*t, *r, m.stat(r, t)?.median)))
                .collect();
            ranked.sort_by(|a, b| a.2.total_cmp(&b.2).then(a.0.cmp(b.0)));
            let (tool, run, median) = *ranked.first()?;
            let against = ranked.get(1).map(|(rt, rr, _)| {
                lines::compare(rr, rt, run, tool, settings)
                    .and_then(|c| lines::change(&c, m, run))
                    .map_or_else(
                        || format!("against {rt}: not compared"),
                        |c| format!("{} than {rt}, {}", c.word, c.ratio_text()),
                    )
            });
            Some(vec![
                Cell::Text(m.title.into()),
                Cell::Link {
                    href: format!("{UP}{}", names::tool_page(tool)),
                    text: tool.to_string(),
                },
                Cell::Figure {
                    text: m.unit().value(median),
                    sort: Some(median),
                },
                Cell::Text(against.unwrap_or_else(|| "the only tool".into())),
            ])
        })
        .collect();
    format!(
        "<h3>Best per step</h3>\n{}",
        table(
            &[
                "step",
                "best",
                "median",
                "compare's verdict against the runner-up"
            ],
            &rows
        )
    )
}
