//! `index.html`: per machine class, a table of tools x datasets; each cell
//! says how many runs and the newest, and links to that line of the tool's
//! page. Then the datasets' pages, and any run the site left out and why.

use crate::lines::Line;
use crate::load::{SiteRun, Skipped};
use crate::markup::{Cell, link, page, paragraph, section, table};
use crate::names;
use labrun_report::MachineClass;
use std::collections::BTreeSet;

pub fn render(lines: &[Line], runs: &[SiteRun], skipped: &[Skipped]) -> String {
    let classes: BTreeSet<&MachineClass> = lines.iter().map(|l| &l.key.class).collect();
    let datasets: BTreeSet<&str> = lines.iter().map(|l| l.key.dataset.as_str()).collect();
    let mut sections = vec![section(
        "about".into(),
        "About",
        paragraph(&format!(
            "{} runs of the results store, {} tools, {} datasets, {} machine classes. Runs of different machine classes (host CPU model, vCPUs, memory, acceleration) or datasets are never mixed: each sits in its own cell, line and chart.",
            runs.len(),
            lines
                .iter()
                .map(|l| &l.key.tool)
                .collect::<BTreeSet<_>>()
                .len(),
            datasets.len(),
            classes.len()
        )),
    )];
    for class in &classes {
        let in_class: Vec<&Line> = lines.iter().filter(|l| l.key.class == **class).collect();
        let columns: Vec<&str> = datasets
            .iter()
            .copied()
            .filter(|d| in_class.iter().any(|l| l.key.dataset == *d))
            .collect();
        let tools: BTreeSet<&str> = in_class.iter().map(|l| l.key.tool.as_str()).collect();
        let rows: Vec<Vec<Cell>> = tools
            .iter()
            .map(|tool| {
                let mut row = vec![Cell::Link {
                    href: names::tool_page(tool),
                    text: tool.to_string(),
                }];
                for d in &columns {
                    row.push(
                        match in_class
                            .iter()
                            .find(|l| l.key.tool == *tool && l.key.dataset == *d)
                        {
                            Some(l) => cell(l, runs),
                            None => Cell::Text("-".into()),
                        },
                    );
                }
                row
            })
            .collect();
        let mut header = vec!["tool"];
        header.extend(columns.iter().copied());
        sections.push(section(
            names::class_anchor(class),
            format!("Machine class {class}"),
            table(&header, &rows),
        ));
    }
    let dataset_links: String = datasets
        .iter()
        .map(|d| link(&names::dataset_page(d), d))
        .collect();
    sections.push(section(
        "datasets".into(),
        "Datasets: the tools side by side",
        dataset_links,
    ));
    if !skipped.is_empty() {
        let rows: Vec<Vec<Cell>> = skipped
            .iter()
            .map(|s| {
                vec![
                    Cell::Text(format!("sha256:{}", s.digest)),
                    Cell::Text(s.reason.clone()),
                ]
            })
            .collect();
        sections.push(section(
            "left-out".into(),
            "Runs left out",
            table(&["run", "why"], &rows),
        ));
    }
    page("labrun site: results", &sections)
}

/// `3 runs, newest 0.19.1 (2026-12-01T14:47:49Z)`, linking to the line.
fn cell(line: &Line, runs: &[SiteRun]) -> Cell {
    let newest = line
        .runs
        .iter()
        .map(|&i| &runs[i])
        .max_by_key(|r| (r.started_unix_ms, r.digest.as_str()));
    let n = line.runs.len();
    let text = match newest {
        Some(r) => format!(
            "{n} run{}, newest {}{}",
            if n == 1 { "" } else { "s" },
            r.version_of(&line.key.tool)
                .map_or(String::new(), |v| format!("{v} ")),
            r.date().get(..10).unwrap_or("-")
        ),
        None => "-".into(),
    };
    Cell::Link {
        href: format!(
            "{}#{}",
            names::tool_page(&line.key.tool),
            names::line_anchor(&line.key.dataset, &line.key.class)
        ),
        text,
    }
}
