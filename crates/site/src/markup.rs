//! The site's own markup: tables whose cells may link, and the page
//! around them (report.html's own document, so every page has its strict
//! policy and style). Every text and address goes through the report's
//! one escaping rule ([`text`]) here, so no caller writes markup from data.

use labrun_report::export::html::{Section, document};
use labrun_report::export::html_markup::text;
use std::fmt::Write;

/// One table cell.
pub enum Cell {
    Text(String),
    /// A link inside the site (a relative address the site made).
    Link {
        href: String,
        text: String,
    },
    /// A figure: shown as text, sorted by its number.
    Figure {
        text: String,
        sort: Option<f64>,
    },
    /// Text that must stand out (a step flagged slower or faster).
    Flag(String),
}

pub fn table(header: &[&str], rows: &[Vec<Cell>]) -> String {
    let mut out = String::from("<div class=\"scroll\"><table class=\"sortable\">\n<thead><tr>");
    for h in header {
        let _ = write!(out, "<th scope=\"col\">{}</th>", text(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            match cell {
                Cell::Text(t) => {
                    let _ = write!(out, "<td>{}</td>", text(t));
                }
                Cell::Link { href, text: t } => {
                    let _ = write!(out, "<td><a href=\"{}\">{}</a></td>", text(href), text(t));
                }
                Cell::Figure { text: t, sort } => {
                    let key = sort
                        .filter(|k| k.is_finite())
                        .map_or(String::new(), |k| k.to_string());
                    let _ = write!(out, "<td data-v=\"{key}\">{}</td>", text(t));
                }
                Cell::Flag(t) => {
                    let _ = write!(out, "<td><strong>{}</strong></td>", text(t));
                }
            }
        }
        out.push_str("</tr>\n");
    }
    if rows.is_empty() {
        let _ = writeln!(
            out,
            "<tr><td colspan=\"{}\">none</td></tr>",
            header.len().max(1)
        );
    }
    out.push_str("</tbody></table></div>\n");
    out
}

pub fn paragraph(t: &str) -> String {
    format!("<p>{}</p>\n", text(t))
}

/// A link as a paragraph of its own.
pub fn link(href: &str, t: &str) -> String {
    format!("<p><a href=\"{}\">{}</a></p>\n", text(href), text(t))
}

/// A whole page: report.html's document (policy, style, contents).
pub fn page(title: &str, sections: &[Section]) -> String {
    document(title, sections)
}

pub fn section(id: String, title: impl Into<String>, body: String) -> Section {
    Section {
        id,
        title: title.into(),
        body,
    }
}
