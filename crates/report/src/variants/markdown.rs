//! The variants' `summary.md`: the comparison's tables ([`super::tables`])
//! as Markdown.

use super::VariantsComparison;
use super::tables;
use crate::export::markdown::table;
use std::fmt::Write;

pub fn render(c: &VariantsComparison) -> String {
    crate::export::escape::markdown_page(&page(c))
}

fn page(c: &VariantsComparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# labrun variants: {}\n", c.run_id);
    let _ = writeln!(out, "{}\n", tables::intro(c));
    for t in tables::tables(c, "`") {
        let _ = writeln!(out, "## {}\n", t.title);
        let header: Vec<&str> = t.header.iter().map(String::as_str).collect();
        table(&mut out, &header, t.rows.into_iter());
    }
    for note in tables::notes(c) {
        let _ = writeln!(out, "{note}\n");
    }
    let _ = writeln!(
        out,
        "Re-make this page and every variant's summary from the raw evidence with `labrun report results/{}`.",
        c.run_id
    );
    out
}
