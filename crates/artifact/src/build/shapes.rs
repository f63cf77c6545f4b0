//! Shapes the recipes share: a semantic version (a Go tag, a crate's
//! version, a rustc release) and the file name a built binary gets. Each
//! returns why a value breaks the rule; the recipe names the field.

use super::is_plain_word;
use crate::source::FileName;

/// `MAJOR.MINOR.PATCH`, then an optional `-PRERELEASE` and `+BUILD`, as
/// semver.org writes it (no leading zeros, no empty identifiers): the form
/// both the go command and cargo take as an exact version.
pub(crate) fn semver_problem(version: &str) -> Option<&'static str> {
    let (rest, build) = match version.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (version, None),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (rest, None),
    };
    let numbers: Vec<&str> = core.split('.').collect();
    if numbers.len() != 3 || !numbers.iter().all(|n| is_number(n)) {
        return Some("expected three numbers MAJOR.MINOR.PATCH without leading zeros");
    }
    let identifiers_ok = |part: &str| {
        part.split('.')
            .all(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
    };
    if pre.is_some_and(|p| !identifiers_ok(p)) {
        return Some("the pre-release after `-` must be dot-separated letters, digits and `-`");
    }
    if build.is_some_and(|b| !identifiers_ok(b)) {
        return Some("the build metadata after `+` must be dot-separated letters, digits and `-`");
    }
    None
}

/// Digits without a leading zero (`0` itself is a number).
fn is_number(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'))
}

/// The name a built binary gets in the build folder and the cache: one
/// plain word that is a file name (`.` and `..` name folders, and would
/// put the binary outside its own).
pub(crate) fn binary_name_problem(name: &str) -> Option<String> {
    (!is_plain_word(name, b"._-") || FileName::exact(name).is_none()).then(|| {
        format!(
            "{name:?} must be a plain file name: letters, digits, `.`, `-` and `_`, \
             not starting with `-`, and not `.` or `..`"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semantic_versions() {
        for ok in [
            "0.11.4",
            "1.95.0",
            "0.0.0-20241219135422-065ae5086857",
            "2.0.0+incompatible",
            "1.0.0-rc.1",
        ] {
            assert_eq!(semver_problem(ok), None, "{ok}");
        }
        for bad in [
            "master",
            "1",
            "1.2",
            "01.2.3",
            "1.2.3-",
            "1.2.3-a..b",
            "1.2.3+",
            "1.2.x",
        ] {
            assert!(semver_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn binary_names() {
        assert_eq!(binary_name_problem("rustic"), None);
        assert_eq!(binary_name_problem("rest-server.v2"), None);
        for bad in [".", "..", "", "-x", "a/b", "a b"] {
            assert!(binary_name_problem(bad).is_some(), "{bad:?}");
        }
    }
}
