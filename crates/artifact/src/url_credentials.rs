//! Credentials written into a URL (`https://user:TOKEN@host/repo.git`) are
//! needed to fetch, and must never be shown or kept: messages, logs, build
//! records and evidence get the URL with its userinfo replaced. This is the
//! one rule for it; everything that shows or keeps a URL goes through it.

use std::borrow::Cow;
use std::ops::Range;

/// What stands where a URL's userinfo was.
pub const HIDDEN: &str = "<redacted>";

/// `text` with the userinfo of every `scheme://userinfo@host` in it
/// replaced by [`HIDDEN`]: a single URL, a message that quotes one, or a
/// logged command line.
pub fn without_credentials(text: &str) -> Cow<'_, str> {
    let found = userinfo_ranges(text);
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for r in found {
        out.push_str(&text[at..r.start]);
        out.push_str(HIDDEN);
        at = r.end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// The userinfo parts (`user:TOKEN`) of the URLs in `text`, for a redactor
/// that cuts secrets out by value (the lab file kept as evidence).
pub fn credentials_in(text: &str) -> Vec<String> {
    userinfo_ranges(text)
        .into_iter()
        .map(|r| text[r].to_string())
        .collect()
}

/// Byte ranges of the userinfo of each URL: after `://`, up to the last `@`
/// of the authority (a password may hold an unencoded `@`). The authority
/// ends at the path, query or fragment, or where a URL cannot go on
/// (white space, a quote, a bracket of the text around it).
fn userinfo_ranges(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find("://") {
        let start = from + found + 3;
        let rest = &text[start..];
        let end = rest
            .find(|c: char| {
                matches!(
                    c,
                    '/' | '?' | '#' | '"' | '\'' | '`' | '<' | '>' | '(' | ')'
                ) || c.is_whitespace()
            })
            .unwrap_or(rest.len());
        if let Some(at) = rest[..end].rfind('@')
            && at > 0
        {
            out.push(start..start + at);
        }
        from = start + end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_is_replaced_and_the_rest_kept() {
        let cases = [
            (
                "https://user:TOKEN@example.invalid/x.git",
                "https://<redacted>@example.invalid/x.git",
            ),
            (
                "https://TOKEN@example.invalid",
                "https://<redacted>@example.invalid",
            ),
            (
                "https://u:p@ss@h:8443/x?y#z",
                "https://<redacted>@h:8443/x?y#z",
            ),
            (
                "git fetch \"https://u:T@a/x\" then ssh://git@b/y and c@d",
                "git fetch \"https://<redacted>@a/x\" then ssh://<redacted>@b/y and c@d",
            ),
            ("https://a/x@y", "https://a/x@y"),
            ("git@example.invalid:x.git", "git@example.invalid:x.git"),
            ("/srv/x.git", "/srv/x.git"),
            ("https://@h/x", "https://@h/x"),
        ];
        for (text, shown) in cases {
            assert_eq!(without_credentials(text), shown, "{text}");
        }
    }

    #[test]
    fn the_credentials_found_are_the_ones_hidden() {
        let text = "repo: https://user:TOKEN@h/x.git # and http://k@g/";
        assert_eq!(credentials_in(text), ["user:TOKEN", "k"]);
    }
}
