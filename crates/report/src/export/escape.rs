//! The one escaping rule of each text format labrun writes lab text into
//! (tool names and versions, errors, the machine's strings). HTML has its
//! own, in the page's markup module.

use std::borrow::Cow;

/// A whole Markdown page, made safe once it is put together: control
/// characters shown ([`labrun_evidence::printable::printable_text`]) and
/// `&` and `<` written as entities. Markdown renders inline HTML, and
/// labrun's own Markdown uses none, so no tag, autolink or entity of the
/// lab's text can reach a reader's viewer as markup; it reads the same.
/// `>` stays: it opens nothing inline, and labrun's own `->` reads as is.
pub fn markdown_page(page: &str) -> String {
    let printable = labrun_evidence::printable::printable_text(page);
    let mut out = String::with_capacity(printable.len());
    for c in printable.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            c => out.push(c),
        }
    }
    out
}

/// One CSV cell: a cell that a spreadsheet would take for a formula (one
/// starting with `=`, `+`, `-`, `@`, a tab or a carriage return, OWASP's
/// rule) gets a leading `'`, which spreadsheets show as text. Numbers
/// (`-1.5`) stay numbers.
pub fn csv_cell(cell: &str) -> Cow<'_, str> {
    let formula = cell.starts_with(['=', '+', '-', '@', '\t', '\r']);
    if formula && cell.parse::<f64>().is_err() {
        Cow::Owned(format!("'{cell}"))
    } else {
        Cow::Borrowed(cell)
    }
}
