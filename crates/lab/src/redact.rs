//! The lab file as run, with its secrets removed: evidence is meant to be
//! published, and `raw/lab.yaml` is the file byte for byte otherwise.
//!
//! Secrets are found by what the YAML parser decodes, then cut out of the
//! source by the position of the scalar that holds them. Replacing the
//! decoded text would miss every secret written another way than plainly:
//! `"lab-only-\"quoted\""`, `"\x41..."` escapes, a folded line continuation,
//! a block scalar. Positions catch all of them, and an anchored value is cut
//! where it is written, so its aliases carry nothing either.

use crate::schema::Lab;
use serde_saphyr::granit_parser::{Event, Parser};
use std::ops::Range;

/// What a secret is replaced with (a double-quoted scalar is valid YAML in
/// every place a scalar can stand).
pub const REDACTED: &str = "\"<redacted>\"";

/// Bounds the walk like the source map's: the file was size-checked.
const MAX_EVENTS: usize = 200_000;

impl Lab {
    /// The source text with every scalar whose value is, or contains, one
    /// of the tools' secret values replaced by [`REDACTED`], and every
    /// URL's userinfo (`user:TOKEN@`) by `<redacted>`; a secret that
    /// is still written literally anywhere else (a comment) is replaced
    /// too. Fails closed: if the text cannot be walked, nothing of it is
    /// returned but a note.
    ///
    /// A variant's lab is the whole file with one variant applied: the text
    /// also holds every other variant's secrets, so they are read from the
    /// text itself, not only from this lab's tools.
    pub fn redacted_source(&self) -> String {
        let mut secrets = self.secret_values();
        if !self.source.text.is_empty() {
            match crate::load::parse_unchecked(&self.source.text) {
                Some(family) => secrets.extend(family.secret_values()),
                None => return NOT_KEPT.to_string(),
            }
        }
        // Credentials written into a URL (a `git.repo`) go the same way.
        let text = redact(&self.source.text, &longest_first(secrets));
        labrun_artifact::without_credentials(&text).into_owned()
    }

    /// Every non-empty value of an environment variable a tool names in
    /// `secret_env`, as the lab sets it and as each of its variants (or
    /// matrix values) does, longest first (so that one secret that
    /// contains another is cut whole).
    pub fn secret_values(&self) -> Vec<String> {
        let own = self.tools.iter().flat_map(|t| {
            t.secret_env
                .iter()
                .filter_map(|name| t.env.get(name))
                .cloned()
        });
        let specs = self
            .variants
            .iter()
            .chain(self.matrix.0.iter().flat_map(|a| a.values.iter()));
        let by_variants = specs.flat_map(|spec| {
            spec.tools.iter().flat_map(|(tool, o)| {
                let secret_env = self
                    .tools
                    .iter()
                    .find(|t| t.name == *tool)
                    .map(|t| t.secret_env.as_slice())
                    .unwrap_or_default();
                o.env
                    .iter()
                    .filter(|(k, _)| secret_env.contains(k))
                    .map(|(_, v)| v.clone())
            })
        });
        longest_first(own.chain(by_variants).collect())
    }
}

/// What stands in for a lab file that cannot be walked to redact it.
const NOT_KEPT: &str = "# labrun could not parse this lab file again to redact its secrets: \
                the file as run is not kept (raw/plan.json has the settings)\n";

fn longest_first(mut secrets: Vec<String>) -> Vec<String> {
    secrets.retain(|s| !s.is_empty());
    secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    secrets.dedup();
    secrets
}

/// [`Lab::redacted_source`] on any text.
pub fn redact(text: &str, secrets: &[String]) -> String {
    if secrets.is_empty() {
        return text.to_string();
    }
    let Some(ranges) = secret_scalars(text, secrets) else {
        return NOT_KEPT.to_string();
    };
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for r in ranges {
        out.push_str(&text[at..r.start]);
        out.push_str(REDACTED);
        at = r.end;
    }
    out.push_str(&text[at..]);
    // Whatever is still literally there (a comment, a key) goes too.
    for s in secrets {
        out = out.replace(s.as_str(), "<redacted>");
    }
    out
}

/// Byte ranges of the scalars whose decoded value holds a secret, in order
/// and not overlapping; `None` if the text is not walkable YAML.
fn secret_scalars(text: &str, secrets: &[String]) -> Option<Vec<Range<usize>>> {
    let mut ranges: Vec<Range<usize>> = Vec::new();
    for (n, item) in Parser::new_from_str(text).enumerate() {
        let (event, span) = item.ok()?;
        if n > MAX_EVENTS {
            return None;
        }
        let Event::Scalar(value, ..) = event else {
            continue;
        };
        if !secrets.iter().any(|s| value.contains(s.as_str())) {
            continue;
        }
        let range = span.byte_range()?;
        let range = widen_to_scalar(text, range)?;
        if ranges.last().is_some_and(|last| range.start < last.end) {
            return None;
        }
        ranges.push(range);
    }
    Some(ranges)
}

/// The parser's span of a block scalar (`|`, `>`) starts at its content and
/// runs on past its last line break: take the indicator too and leave the
/// line break, so that the replacement stands where the whole scalar stood.
/// Refuses a range that is not on character boundaries.
fn widen_to_scalar(text: &str, range: Range<usize>) -> Option<Range<usize>> {
    text.get(range.clone())?;
    let line_start = text[..range.start].rfind('\n').map_or(0, |i| i + 1);
    let before = &text[line_start..range.start];
    if !before.trim().is_empty() {
        return Some(range);
    }
    // Content on a line of its own: the indicator ends the previous line.
    let prev_end = line_start.checked_sub(1)?;
    let prev_start = text[..prev_end].rfind('\n').map_or(0, |i| i + 1);
    let prev = &text[prev_start..prev_end];
    let trimmed = prev.trim_end();
    // The indicator (`|`, `>-`, `|2+`) is the line's last word.
    let indicator = trimmed.split_whitespace().last().unwrap_or("");
    if indicator.starts_with(['|', '>']) {
        let start = prev_start + trimmed.len() - indicator.len();
        // The span runs on to the next line's indentation: stop at the
        // last line break and keep it.
        let end = text[range.clone()]
            .rfind('\n')
            .map_or(range.end, |i| range.start + i);
        Some(start..end)
    } else {
        Some(range)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret() -> Vec<String> {
        vec!["lab-only-\"quoted\"-secret".to_string()]
    }

    /// The redacted text parses, holds no trace of the secret, and keeps
    /// everything else.
    fn check(text: &str, secrets: &[String]) -> String {
        let out = redact(text, secrets);
        for s in secrets {
            assert!(!out.contains(s.as_str()), "{out}");
        }
        let values = decoded_scalars(&out);
        for s in secrets {
            assert!(
                !values.iter().any(|v| v.contains(s.as_str())),
                "{out}\n{values:?}"
            );
        }
        assert!(values.iter().any(|v| v == "<redacted>"), "{out}");
        assert!(values.iter().any(|v| v == "keep"), "{out}");
        out
    }

    fn decoded_scalars(text: &str) -> Vec<String> {
        Parser::new_from_str(text)
            .map(|i| i.expect("the redacted text is YAML"))
            .filter_map(|(e, _)| match e {
                Event::Scalar(v, ..) => Some(v.to_string()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_double_quoted_secret_with_escapes_is_cut() {
        let doc = "a: keep\nenv:\n  P: \"lab-only-\\\"quoted\\\"-secret\"\n";
        let out = check(doc, &secret());
        assert_eq!(out, "a: keep\nenv:\n  P: \"<redacted>\"\n");
    }

    #[test]
    fn hex_escapes_and_line_continuations_are_cut() {
        let s = vec!["AB-secret-value".to_string()];
        check("a: keep\nP: \"\\x41\\x42-secret-value\"\n", &s);
        check("a: keep\nP: \"AB-secret-\\\n   value\"\n", &s);
        check("a: keep\nP: 'AB-secret-value'\n", &s);
    }

    #[test]
    fn block_scalars_and_flow_maps_are_cut() {
        let s = vec!["AB-secret-value".to_string()];
        check("a: keep\nP: |-\n  AB-secret-value\nb: 1\n", &s);
        check("a: keep\nP: >-\n  AB-secret-value\nb: 1\n", &s);
        check("a: keep\nl:\n  - |\n    AB-secret-value\n  - keep\n", &s);
        check("a: keep\nenv: {P: AB-secret-value, Q: 1}\n", &s);
    }

    #[test]
    fn an_anchor_is_cut_where_it_is_written() {
        let s = vec!["AB-secret-value".to_string()];
        let out = check("a: keep\nx: &pw AB-secret-value\nenv:\n  P: *pw\n", &s);
        assert!(out.contains("*pw"), "{out}");
    }

    #[test]
    fn a_secret_inside_a_longer_value_and_in_a_comment_is_cut() {
        let s = vec!["AB-secret-value".to_string()];
        let out = check(
            "a: keep # AB-secret-value\ncmd: [sh, -c, \"echo AB-secret-value\"]\n",
            &s,
        );
        assert!(out.contains("sh, -c"), "{out}");
    }

    #[test]
    fn no_secrets_keeps_the_text_byte_for_byte() {
        let doc = "a: keep\n# comment\n";
        assert_eq!(redact(doc, &[]), doc);
    }
}
