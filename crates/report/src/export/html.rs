//! `report.html`: one self-contained page of a run's results, made from the
//! [`Summary`] alone. Everything is inside the file: the style, a few lines
//! of script that sort a table by the clicked column (the page reads the
//! same without them), and the charts as `data:` images. A strict
//! Content-Security-Policy forbids the page any request, so opening it
//! reaches nothing but the file itself.
//!
//! The page is a list of [`Section`]s rendered in order
//! ([`run_sections`]) into one document ([`document`]): another section,
//! e.g. a comparison's verdict table, is one more entry in that list.

use super::Exporter;
use super::html_markup::text;
use super::html_sections as sections;
use crate::error::Result;
use crate::summary::Summary;
use std::fmt::Write;

pub struct Html;

impl Exporter for Html {
    fn file_name(&self) -> &'static str {
        "report.html"
    }

    fn serialize(&self, summary: &Summary) -> Result<Vec<u8>> {
        Ok(render(summary)?.into_bytes())
    }
}

/// One part of the page: its anchor, its heading, and its markup (every
/// value from evidence in it already escaped).
pub struct Section {
    /// The anchor: plain words (`results`, `verdict-1`), never lab text.
    pub id: String,
    pub title: String,
    pub body: String,
}

/// The whole page of a run.
pub fn render(s: &Summary) -> Result<String> {
    let title = format!("labrun report: {}", s.run_id);
    Ok(document(&title, &run_sections(s)?))
}

/// A run's sections in page order; the fidelity and history sections only
/// when the run has them. What a reader must know before trusting the
/// figures (warnings, failed steps) comes right after the run itself.
pub fn run_sections(s: &Summary) -> Result<Vec<Section>> {
    let mut out = vec![sections::run(s), sections::warnings(s)];
    out.push(sections::failed_steps(s));
    out.push(sections::results(s));
    out.extend(
        s.comparisons
            .iter()
            .enumerate()
            .map(|(i, c)| match &s.noise_floor {
                Some(f) if f.is(c) => sections::noise_floor(f, c),
                _ => sections::verdicts(i, c),
            }),
    );
    out.extend(
        s.trends
            .iter()
            .enumerate()
            .map(|(i, t)| super::trend::html_section(i, t, s)),
    );
    out.extend(sections::history(s));
    out.extend(sections::fidelity(s));
    out.push(sections::phases(s));
    out.push(sections::charts(s)?);
    out.push(sections::environment(s));
    out.push(sections::meter_cost(s));
    out.push(sections::remake(s));
    Ok(out)
}

/// A comparison made by `labrun compare` on a page of its own: the same
/// verdict section a run's page has for the comparisons its lab asked for.
pub fn comparison_page(c: &crate::compare::Comparison) -> String {
    let title = format!(
        "labrun compare: {} against {}",
        c.candidate.label(),
        c.baseline.label()
    );
    document(&title, &[sections::verdicts(0, c)])
}

/// Nothing may be fetched: no style sheet, font, image, frame or connection
/// but what the page holds inline (images only as `data:`). Of scripts only
/// the page's own runs, named by its SHA-256 (computed from the script text
/// as it is rendered), so neither an inline script nor an event handler
/// that an escaping slip let in can run.
pub fn content_security_policy() -> String {
    use base64::Engine;
    use sha2::Digest;
    let hash = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(SCRIPT));
    format!(
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; \
         base-uri 'none'; form-action 'none'; script-src 'sha256-{hash}'"
    )
}

/// The page around its sections: head (policy, style), a table of
/// contents, the sections, the sorting script.
pub fn document(title: &str, sections: &[Section]) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n<h1>{}</h1>\n",
        content_security_policy(),
        text(title),
        text(title)
    );
    out.push_str("<nav><ul>\n");
    for s in sections {
        let _ = writeln!(out, "<li><a href=\"#{}\">{}</a></li>", s.id, text(&s.title));
    }
    out.push_str("</ul></nav>\n");
    for s in sections {
        let _ = write!(
            out,
            "<section id=\"{}\">\n<h2>{}</h2>\n{}</section>\n",
            s.id,
            text(&s.title),
            s.body
        );
    }
    let _ = write!(
        out,
        "</main>\n<script>{SCRIPT}</script>\n</body>\n</html>\n"
    );
    out
}

const STYLE: &str = r#"
:root { color-scheme: light; --line: #d0d4d9; --head: #eef1f4; --muted: #555; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: #1b1f24; background: #fff; }
main { max-width: 1800px; margin: 0 auto; padding: 1rem 1.5rem 3rem; }
h1 { font-size: 1.5rem; margin: 0.5rem 0 0.75rem; overflow-wrap: anywhere; }
h2 { font-size: 1.2rem; margin: 2rem 0 0.5rem; padding-bottom: 0.2rem; border-bottom: 2px solid var(--line); }
h3 { font-size: 1rem; margin: 1.2rem 0 0.4rem; }
p, li { max-width: 75rem; }
code { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 0.9em; overflow-wrap: anywhere; }
nav ul { list-style: none; padding: 0; margin: 0 0 1rem; display: flex; flex-wrap: wrap; gap: 0.3rem 1rem; font-size: 0.9rem; }
nav a { color: #0b57a4; }
.scroll { overflow-x: auto; margin: 0.4rem 0 0.8rem; }
table { border-collapse: collapse; font-size: 0.85rem; }
th, td { border: 1px solid var(--line); padding: 0.25rem 0.45rem; text-align: left; vertical-align: top; }
th { background: var(--head); font-weight: 600; }
td { white-space: nowrap; }
td.wrap, .wrap td { white-space: normal; overflow-wrap: anywhere; min-width: 12rem; }
tbody tr:nth-child(even) { background: #f8f9fa; }
html.js table.sortable th { cursor: pointer; user-select: none; }
html.js table.sortable th:hover { background: #dde3ea; }
th[aria-sort="ascending"]::after { content: " \25B2"; font-size: 0.7em; }
th[aria-sort="descending"]::after { content: " \25BC"; font-size: 0.7em; }
.warnings { border: 2px solid #b3261e; background: #fdecea; border-radius: 6px; padding: 0.6rem 1rem; }
.warnings ul { margin: 0.3rem 0; padding-left: 1.2rem; }
.warnings .kind { font-weight: 700; color: #8c1d18; }
.ok { border: 1px solid #8fc79a; background: #edf7ef; border-radius: 6px; padding: 0.5rem 1rem; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.2rem 1rem; margin: 0.4rem 0; }
.facts dt { font-weight: 600; }
.facts dd { margin: 0; overflow-wrap: anywhere; }
.note { color: var(--muted); font-size: 0.9rem; }
figure { margin: 1rem 0; }
figure img { display: block; max-width: 100%; height: auto; border: 1px solid var(--line); }
figcaption { color: var(--muted); font-size: 0.85rem; margin-top: 0.2rem; }
"#;

/// Sorts a table by the clicked (or Enter-pressed) header: figures by the
/// number in their `data-v` (cells without a figure last), other columns
/// by their text.
const SCRIPT: &str = r#"
(function () {
  document.documentElement.classList.add("js");
  function key(cell) {
    if (!cell) return null;
    var v = cell.getAttribute("data-v");
    if (v === null) return cell.textContent.trim();
    return v === "" ? null : parseFloat(v);
  }
  function compare(x, y) {
    if (x === null || y === null) return x === y ? 0 : (x === null ? 1 : -1);
    if (typeof x === "number" && typeof y === "number") return x - y;
    return String(x).localeCompare(String(y), undefined, { numeric: true });
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var heads = table.querySelectorAll("thead th");
    heads.forEach(function (th, col) {
      th.tabIndex = 0;
      th.title = "Sort by this column";
      function sort() {
        var up = th.getAttribute("aria-sort") !== "ascending";
        heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", up ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = key(a.cells[col]), y = key(b.cells[col]);
          if (x === null || y === null) return compare(x, y);
          return up ? compare(x, y) : compare(y, x);
        });
        rows.forEach(function (r) { body.appendChild(r); });
      }
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); }
      });
    });
  });
})();
"#;
