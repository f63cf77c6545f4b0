//! Text that came from a lab file, a guest or a remote machine, made safe to
//! show. A terminal obeys the control characters in what it prints: a lab's
//! description or a tool's output could clear the screen, retitle the
//! window, or return to the start of the line and overwrite an error with a
//! fake "is valid"; bidi overrides reorder what a reader sees (Trojan
//! Source, CVE-2021-42574). So every such character is shown as an escape a
//! reader can see (`\x1b`, `\r`, `\u{202e}`) instead of being obeyed.
//!
//! This is for the display boundary only: the terminal, `summary.md`. The
//! evidence keeps the bytes as they were (its JSON escapes them anyway).

use std::borrow::Cow;
use std::fmt::Write;

/// One line: every control character escaped, newline and tab included, so
/// a value cannot start a line of its own (a fake "ok: ... is valid").
pub fn printable(s: &str) -> Cow<'_, str> {
    escape(s, |_| false)
}

/// Several lines: as [`printable`], but newline and tab are kept, for text
/// whose lines are meant (a description, an error chain, a whole table).
pub fn printable_text(s: &str) -> Cow<'_, str> {
    escape(s, |c| c == '\n' || c == '\t')
}

/// JSON text (as serde_json writes it) safe to show: serde_json escapes the
/// C0 controls but writes DEL, the C1 controls and the bidi overrides as
/// they are. Those are replaced by their `\uXXXX` JSON escapes, which parse
/// back to the same string; outside strings JSON text is ASCII, so every one
/// found is inside a string.
pub fn printable_json(json: &str) -> Cow<'_, str> {
    // A raw line break or tab can only be JSON's own whitespace (inside
    // strings serializers escape them): pretty output keeps its lines.
    let hazard = |c: char| is_hazard(c) && !matches!(c, '\n' | '\t' | '\r');
    if !json.chars().any(hazard) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if hazard(c) {
            // Every hazard is in the Basic Multilingual Plane: one \uXXXX.
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Whether a terminal (or a reader of a Markdown file) could be fooled by
/// `c`: the C0 controls, DEL and the C1 controls (Unicode's `Cc`), and the
/// bidi embeddings, overrides and isolates.
pub fn is_hazard(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn escape(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let escaped = |c: char| is_hazard(c) && !keep(c);
    if !s.chars().any(escaped) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if escaped(c) {
            push_escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `\n`, `\r`, `\t` as Rust and C write them; other ASCII controls as
/// `\x1b`; the rest as `\u{85}`. The result is ASCII, so escaping it again
/// changes nothing.
fn push_escape(out: &mut String, c: char) {
    let _ = match c {
        '\n' => write!(out, "\\n"),
        '\r' => write!(out, "\\r"),
        '\t' => write!(out, "\\t"),
        c if c.is_ascii() => write!(out, "\\x{:02x}", u32::from(c)),
        c => write!(out, "\\u{{{:x}}}", u32::from(c)),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        for s in ["", "restic 0.19.1", "tab\tand\nnewline", "é ✓ 日本"] {
            assert!(matches!(printable_text(s), Cow::Borrowed(_)), "{s:?}");
        }
        assert!(matches!(printable("naïve ✓"), Cow::Borrowed(_)));
        assert!(matches!(printable_json("{\"a\":\"é\"}"), Cow::Borrowed(_)));
    }

    #[test]
    fn terminal_sequences_are_shown_not_obeyed() {
        assert_eq!(printable("\x1b[2Jx"), "\\x1b[2Jx");
        assert_eq!(printable("\x1b]0;title\x07"), "\\x1b]0;title\\x07");
        assert_eq!(printable("\r✓ lab is valid"), "\\r✓ lab is valid");
        assert_eq!(printable("a\x00b\x7fc"), "a\\x00b\\x7fc");
        // C1: U+009B is CSI on terminals that take 8-bit controls.
        assert_eq!(printable("\u{9b}2J \u{85}"), "\\u{9b}2J \\u{85}");
    }

    #[test]
    fn bidi_overrides_and_isolates_are_escaped() {
        assert_eq!(printable("a\u{202e}b"), "a\\u{202e}b");
        for c in ('\u{202a}'..='\u{202e}').chain('\u{2066}'..='\u{2069}') {
            assert!(!printable(&c.to_string()).contains(c), "{c:?}");
        }
        // The neighbours are ordinary characters.
        assert_eq!(printable("\u{2029}\u{206a}"), "\u{2029}\u{206a}");
    }

    #[test]
    fn newline_and_tab_are_kept_only_in_text() {
        assert_eq!(printable("a\nok: valid\tx"), "a\\nok: valid\\tx");
        assert_eq!(printable_text("a\nb\tc\r\x1b[2J"), "a\nb\tc\\r\\x1b[2J");
    }

    #[test]
    fn escaping_twice_changes_nothing_more() {
        let once = printable("\x1b[2J\r\u{202e}\u{9b}\n").into_owned();
        assert!(once.is_ascii());
        assert_eq!(printable(&once), once);
        assert_eq!(printable_text(&once), once);
    }

    #[test]
    fn json_keeps_its_meaning() {
        let value = "x\u{7f}\u{85}\u{202e}\x1b";
        let json = serde_json::to_string(&value).unwrap();
        let shown = printable_json(&json);
        assert!(!shown.chars().any(is_hazard), "{shown}");
        let back: String = serde_json::from_str(&shown).unwrap();
        assert_eq!(back, value);
        // Pretty JSON (what `labrun status --json` prints) keeps its lines
        // and still parses to the same value.
        let pretty = serde_json::to_string_pretty(&serde_json::json!([{"v": value}])).unwrap();
        let shown = printable_json(&pretty);
        assert_eq!(shown.lines().count(), pretty.lines().count(), "{shown}");
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back[0]["v"], value);
    }
}
