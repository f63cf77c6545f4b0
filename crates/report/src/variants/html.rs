//! The variants' `report.html`: the comparison's tables ([`super::tables`])
//! and charts on one self-contained page, built like a run's own page
//! (`export::html`), with a link to each variant's.

use super::{VariantsComparison, chart, tables};
use crate::error::Result;
use crate::export::html::{Section, document};
use crate::export::html_markup::{Cell, svg_data_uri, table, text};
use labrun_evidence::variant::VARIANTS_DIR;

pub fn render(c: &VariantsComparison) -> Result<String> {
    let mut sections = vec![Section {
        id: "variants-run".into(),
        title: "The run".into(),
        body: format!("<p>{}</p>\n", text(&tables::intro(c).replace('`', ""))),
    }];
    for (i, t) in tables::tables(c, "").into_iter().enumerate() {
        let header: Vec<&str> = t.header.iter().map(String::as_str).collect();
        sections.push(Section {
            id: format!("table-{}", i + 1),
            title: t.title,
            body: table(
                &header,
                t.rows
                    .into_iter()
                    .map(|r| r.into_iter().map(Cell::plain).collect()),
            ),
        });
    }
    let mut charts = String::new();
    for (name, svg) in chart::render_all(c)? {
        charts.push_str(&format!(
            "<figure><img src=\"{}\" alt=\"{name}\"><figcaption>{name} (also beside this page)</figcaption></figure>\n",
            svg_data_uri(&svg),
            name = text(name)
        ));
    }
    sections.push(Section {
        id: "charts".into(),
        title: "Charts".into(),
        body: charts,
    });
    let mut notes: String = tables::notes(c)
        .iter()
        .map(|n| format!("<p>{}</p>\n", text(&n.replace('`', ""))))
        .collect();
    notes.push_str(
        "<p>Each variant's own page, with its environment, warnings and every figure:</p>\n<ul>\n",
    );
    for v in &c.variants {
        let name = text(&v.record.name);
        notes.push_str(&format!(
            "<li><a href=\"{VARIANTS_DIR}/{name}/report.html\">{name}</a></li>\n"
        ));
    }
    notes.push_str(&format!(
        "</ul>\n<p>Re-make this page and every variant's from the raw evidence with <code>labrun report results/{}</code>.</p>\n",
        text(&c.run_id)
    ));
    sections.push(Section {
        id: "notes".into(),
        title: "Notes and each variant".into(),
        body: notes,
    });
    Ok(document(
        &format!("labrun variants: {}", c.run_id),
        &sections,
    ))
}
