//! The building blocks of `report.html`: escaping, tables, inline images.
//!
//! Tool names, versions, errors, warnings and the environment come from the
//! lab file and the guest. Every such value goes through [`text`] before it
//! reaches the page, so a tool named `<script>` is shown, never run; the
//! markup itself is only ever this module's and the sections' own.

use labrun_evidence::printable::printable_text;
use std::fmt::Write;

/// A value from evidence as HTML text: control characters and bidi
/// overrides shown as escapes (as in `summary.md`), then `& < > " '`
/// escaped, so it is safe both between tags and inside a quoted attribute.
pub fn text(s: &str) -> String {
    let shown = printable_text(s);
    let mut out = String::with_capacity(shown.len());
    for c in shown.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// An SVG as a `data:` URI for an `<img>`: the page needs no file beside
/// it, and an SVG shown as an image can neither run script nor fetch
/// anything. Every byte but letters, digits and `-_.~` is percent-encoded,
/// so the URI holds no quote, `&`, `/` or `:` of its own.
pub fn svg_data_uri(svg: &[u8]) -> String {
    let mut out = String::with_capacity(svg.len() * 2 + 20);
    out.push_str("data:image/svg+xml,");
    for &b in svg {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// One table cell: its text (already formatted, not yet escaped) and, for
/// a figure, the number the table sorts it by.
pub struct Cell {
    pub text: String,
    pub sort: Option<f64>,
    /// Shown in bold (a failure, a lost kind of metadata).
    pub strong: bool,
    /// Long text (an error, a build's flags) that wraps instead of
    /// widening its column.
    pub wrap: bool,
}

impl Cell {
    pub fn plain(text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            sort: None,
            strong: false,
            wrap: false,
        }
    }

    /// Long text that wraps.
    pub fn prose(text: impl Into<String>) -> Cell {
        Cell {
            wrap: true,
            ..Cell::plain(text)
        }
    }

    /// A figure, sorted by `key` (no key: sorts after every figure).
    pub fn figure(text: impl Into<String>, key: Option<f64>) -> Cell {
        Cell {
            text: text.into(),
            // A column sorts as numbers only when every cell has a key: an
            // empty key marks "no figure" rather than leaving it out.
            sort: Some(key.unwrap_or(f64::NAN)),
            strong: false,
            wrap: false,
        }
    }

    pub fn strong(mut self, yes: bool) -> Cell {
        self.strong = yes;
        self
    }
}

/// A table that sorts by a column when its header is clicked (with scripts
/// on; without them it reads as it was written). Wide tables scroll inside
/// their own box rather than widening the page. No rows: one row of "-".
pub fn table(header: &[&str], rows: impl Iterator<Item = Vec<Cell>>) -> String {
    let mut out = String::from("<div class=\"scroll\"><table class=\"sortable\">\n<thead><tr>");
    for h in header {
        let _ = write!(out, "<th scope=\"col\">{}</th>", text(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    let mut any = false;
    for row in rows {
        any = true;
        out.push_str("<tr>");
        for cell in row {
            let key = match cell.sort {
                Some(k) if k.is_finite() => format!(" data-v=\"{k}\""),
                Some(_) => " data-v=\"\"".to_string(),
                None => String::new(),
            };
            let body = if cell.strong {
                format!("<strong>{}</strong>", text(&cell.text))
            } else {
                text(&cell.text)
            };
            let class = if cell.wrap { " class=\"wrap\"" } else { "" };
            let _ = write!(out, "<td{class}{key}>{body}</td>");
        }
        out.push_str("</tr>\n");
    }
    if !any {
        out.push_str("<tr>");
        for _ in header {
            let _ = write!(out, "<td>{}</td>", super::cells::NONE);
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
    out
}

/// A definition list of label and value pairs (values escaped here).
pub fn facts(pairs: &[(&str, String)]) -> String {
    let mut out = String::from("<dl class=\"facts\">\n");
    for (label, value) in pairs {
        let _ = writeln!(out, "<dt>{}</dt><dd>{}</dd>", text(label), text(value));
    }
    out.push_str("</dl>\n");
    out
}

/// A bulleted list of values from evidence.
pub fn list<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let mut out = String::from("<ul>\n");
    for i in items {
        let _ = writeln!(out, "<li>{}</li>", text(i));
    }
    out.push_str("</ul>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_characters_become_text() {
        assert_eq!(
            text("<script>alert('x') & \"y\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;"
        );
        // A right-to-left override could reorder what a reader sees.
        assert_eq!(text("a\u{202e}b\x1b"), "a\\u{202e}b\\x1b");
        assert_eq!(text("line\nnext"), "line\nnext");
    }

    #[test]
    fn data_uri_has_nothing_that_ends_an_attribute_or_names_a_host() {
        let uri = svg_data_uri(br#"<svg xmlns="http://www.w3.org/2000/svg">a&b's</svg>"#);
        let data = uri
            .strip_prefix("data:image/svg+xml,")
            .expect("the SVG media type");
        assert!(data.starts_with("%3Csvg"), "{uri}");
        for bad in ['"', '\'', '&', '<', '>', '/', ':', ' '] {
            assert!(!data.contains(bad), "{bad} in {uri}");
        }
        assert!(data.contains("http%3A%2F%2Fwww.w3.org"), "{uri}");
    }

    #[test]
    fn table_keys_sort_figures_and_mark_missing_ones() {
        let t = table(
            &["Tool", "Time"],
            vec![vec![Cell::plain("a<b"), Cell::figure("1.5 s", Some(1.5))]].into_iter(),
        );
        assert!(
            t.contains("<td>a&lt;b</td><td data-v=\"1.5\">1.5 s</td>"),
            "{t}"
        );
        let missing = table(&["Time"], vec![vec![Cell::figure("-", None)]].into_iter());
        assert!(missing.contains("<td data-v=\"\">-</td>"), "{missing}");
        let empty = table(&["A", "B"], std::iter::empty());
        assert!(empty.contains("<tr><td>-</td><td>-</td></tr>"), "{empty}");
    }
}
