//! The rules of a `python:` block: every name and version that reaches a
//! command line is a plain word (data, never shell or an option), digests
//! are SHA-256, and the suite's Python is one the release supports.

use super::super::is_plain_word;
use super::{PinnedDist, PythonBuild};
use crate::debian::{is_package_name, is_suite_name};
use crate::spec::SpecProblem;

/// The python3 of each Debian suite labrun builds wheels for (checked in
/// the suite's root at build time: a root whose python3 differs stops the
/// build and names this table). A new suite is a row here.
const SUITE_PYTHON: &[(&str, (u32, u32))] = &[
    ("bookworm", (3, 11)),
    ("trixie", (3, 13)),
    ("forky", (3, 14)),
    ("sid", (3, 14)),
    ("unstable", (3, 14)),
];

/// The python3 `MAJOR.MINOR` of a suite, if labrun knows it.
pub fn suite_python(suite: &str) -> Option<(u32, u32)> {
    SUITE_PYTHON
        .iter()
        .find(|(s, _)| *s == suite)
        .map(|(_, v)| *v)
}

/// A PyPI project name (PEP 508): letters, digits, `.`, `-`, `_`, starting
/// and ending with a letter or digit.
fn is_dist_name(s: &str) -> bool {
    is_plain_word(s, b".-_") && s.ends_with(|c: char| c.is_ascii_alphanumeric())
}

/// An exact version as PyPI writes it (PEP 440's characters, no ranges):
/// `0.16`, `2.0.0b20`, `1.4.5.post1`, `1!2.0`.
fn is_dist_version(s: &str) -> bool {
    is_plain_word(s, b".+!_-") && s.starts_with(|c: char| c.is_ascii_digit())
}

fn is_sha256(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

pub(super) fn problems(b: &PythonBuild) -> Vec<SpecProblem> {
    let mut out = Vec::new();
    let mut bad = |field: String, message: String| out.push(SpecProblem::new(field, message));
    if !is_dist_name(&b.name) {
        bad(
            "name".into(),
            format!(
                "{:?} is not a PyPI project name (letters, digits, `.`, `-`, `_`)",
                b.name
            ),
        );
    }
    if !is_dist_version(&b.version) {
        bad(
            "version".into(),
            format!(
                "{:?} is not an exact version such as 0.16 or 2.0.0b20 (a range is not a pin)",
                b.version
            ),
        );
    }
    if !is_sha256(&b.sdist_sha256) {
        bad(
            "sdist_sha256".into(),
            format!(
                "{:?} is not a SHA-256 (64 lowercase hex digits): `labrun pin` writes it, or \
                 `sha256sum` of the sdist `pip download --no-binary :all: --no-deps {}=={}` saves",
                b.sdist_sha256, b.name, b.version
            ),
        );
    }
    if !is_suite_name(&b.suite) {
        bad(
            "suite".into(),
            format!("{:?} is not a Debian suite name", b.suite),
        );
    }
    if let Some(range) = &b.python
        && let Err(why) = PythonRange::parse(range)
    {
        bad("python".into(), why);
    }
    if !is_plain_word(&b.entry_point, b".-_") {
        bad(
            "entry_point".into(),
            format!("{:?} is not a console script's name", b.entry_point),
        );
    }
    for (i, p) in b.patches.iter().enumerate() {
        if p.path.is_empty() || p.path.starts_with('-') {
            bad(
                format!("patches[{i}].path"),
                "give the patch file's path".into(),
            );
        }
        if !is_sha256(&p.sha256) {
            bad(
                format!("patches[{i}].sha256"),
                format!(
                    "{:?} is not a SHA-256: `sha256sum {}` prints it",
                    p.sha256, p.path
                ),
            );
        }
    }
    for (i, f) in b.remove_files.iter().enumerate() {
        let inside = !f.is_empty()
            && !f.starts_with('/')
            && f.split('/')
                .all(|part| !part.is_empty() && part != "." && part != "..");
        if !inside {
            bad(
                format!("remove_files[{i}]"),
                format!("{f:?} must be a path inside the sdist's folder (no `..`, not absolute)"),
            );
        }
    }
    for (list, dists) in [
        ("build_requires", &b.build_requires),
        ("requires", &b.requires),
    ] {
        for (i, d) in dists.iter().enumerate() {
            for (field, why) in dist_problems(d) {
                bad(format!("{list}[{i}].{field}"), why);
            }
        }
    }
    for (i, p) in b.build_packages.iter().enumerate() {
        if !is_package_name(p) {
            bad(
                format!("build_packages[{i}]"),
                format!("{p:?} is not a Debian package name"),
            );
        }
    }
    out
}

fn dist_problems(d: &PinnedDist) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if !is_dist_name(&d.name) {
        out.push(("name", format!("{:?} is not a PyPI project name", d.name)));
    }
    if !is_dist_version(&d.version) {
        out.push((
            "version",
            format!("{:?} is not an exact version", d.version),
        ));
    }
    if !is_sha256(&d.sha256) {
        out.push((
            "sha256",
            format!("{:?} is not a SHA-256 (64 lowercase hex digits)", d.sha256),
        ));
    }
    out
}

pub(super) fn suite_problem(b: &PythonBuild) -> Option<String> {
    let Some(have) = suite_python(&b.suite) else {
        let known: Vec<&str> = SUITE_PYTHON.iter().map(|(s, _)| *s).collect();
        return Some(format!(
            "labrun does not know the python3 of Debian {:?} (it knows {}): build for one of \
             those suites",
            b.suite,
            known.join(", ")
        ));
    };
    let range = PythonRange::parse(b.python.as_deref()?).ok()?;
    (!range.admits(have)).then(|| {
        format!(
            "{}=={} supports Python {}, but Debian {}'s python3 is {}.{}: pick a suite whose \
             python3 it supports (bookworm: 3.11, trixie: 3.13, sid: 3.14), or a release of {} \
             that supports {}.{}",
            b.name, b.version, range.written, b.suite, have.0, have.1, b.name, have.0, have.1
        )
    })
}

/// A range of Python versions: comma-separated `>=X.Y`, `>X.Y`, `<=X.Y`,
/// `<X.Y`, `==X.Y` clauses, all of which must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonRange {
    written: String,
    clauses: Vec<(Op, (u32, u32))>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Ge,
    Gt,
    Le,
    Lt,
    Eq,
}

impl PythonRange {
    pub fn parse(text: &str) -> Result<PythonRange, String> {
        let mut clauses = Vec::new();
        for clause in text.split(',').map(str::trim) {
            let (op, rest) = [
                (">=", Op::Ge),
                ("<=", Op::Le),
                ("==", Op::Eq),
                (">", Op::Gt),
                ("<", Op::Lt),
            ]
            .into_iter()
            .find_map(|(p, op)| clause.strip_prefix(p).map(|r| (op, r.trim())))
            .ok_or_else(|| {
                format!(
                    "{clause:?} in {text:?} is not a Python version clause: write clauses such \
                     as \">=3.9,<3.12\""
                )
            })?;
            let version = rest
                .split_once('.')
                .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
                .ok_or_else(|| format!("{rest:?} in {text:?} is not MAJOR.MINOR (e.g. 3.11)"))?;
            clauses.push((op, version));
        }
        Ok(PythonRange {
            written: text.to_string(),
            clauses,
        })
    }

    pub fn admits(&self, v: (u32, u32)) -> bool {
        self.clauses.iter().all(|(op, c)| match op {
            Op::Ge => v >= *c,
            Op::Gt => v > *c,
            Op::Le => v <= *c,
            Op::Lt => v < *c,
            Op::Eq => v == *c,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn attic() -> PythonBuild {
        PythonBuild {
            name: "attic".into(),
            version: "0.16".into(),
            sdist_sha256: "a".repeat(64),
            file: None,
            suite: "bookworm".into(),
            python: Some(">=3.4,<3.12".into()),
            entry_point: "attic".into(),
            patches: vec![super::super::PinnedPatch {
                path: "labs/patches/attic-0.16-openssl3.patch".into(),
                sha256: "b".repeat(64),
            }],
            remove_files: vec!["attic/chunker.c".into()],
            build_requires: vec![PinnedDist {
                name: "cython".into(),
                version: "0.29.37".into(),
                sha256: "c".repeat(64),
            }],
            requires: vec![PinnedDist {
                name: "msgpack-python".into(),
                version: "0.5.6".into(),
                sha256: "d".repeat(64),
            }],
            build_packages: vec!["libssl-dev".into(), "libacl1-dev".into()],
        }
    }

    #[test]
    fn a_good_block_has_no_problems() {
        assert_eq!(problems(&attic()), vec![]);
        assert_eq!(suite_problem(&attic()), None);
    }

    /// What reaches pip's or patch's command line cannot be an option or
    /// shell syntax, and each problem names its field.
    #[test]
    fn names_and_versions_are_data() {
        let mut b = attic();
        b.name = "attic; rm -rf /".into();
        b.version = ">=0.16".into();
        b.entry_point = "-c".into();
        b.requires[0].name = "--index-url=http://x".into();
        b.build_packages = vec!["libssl-dev libacl1-dev".into()];
        b.patches[0].sha256 = "B".repeat(64);
        b.remove_files = vec!["../../etc/passwd".into()];
        let fields: Vec<String> = problems(&b).into_iter().map(|p| p.field).collect();
        assert_eq!(
            fields,
            [
                "name",
                "version",
                "entry_point",
                "patches[0].sha256",
                "remove_files[0]",
                "requires[0].name",
                "build_packages[0]"
            ]
        );
    }

    #[test]
    fn versions_as_pypi_writes_them() {
        for ok in ["0.16", "2.0.0b20", "1.4.5", "1.4.5.post1", "1!2.0"] {
            assert!(is_dist_version(ok), "{ok}");
        }
        for bad in ["", "latest", "-1", ">=1", "1 2", "v1.0"] {
            assert!(!is_dist_version(bad), "{bad}");
        }
    }

    #[test]
    fn python_ranges() {
        let r = PythonRange::parse(">=3.9, <3.12").unwrap();
        assert!(r.admits((3, 11)));
        assert!(!r.admits((3, 12)));
        assert!(!r.admits((3, 8)));
        assert!(PythonRange::parse("==3.11").unwrap().admits((3, 11)));
        assert!(PythonRange::parse("3.11").is_err());
        assert!(PythonRange::parse(">=3").is_err());
        assert!(PythonRange::parse(">=3.x").is_err());
    }

    /// A release on a suite whose python3 it does not support is refused
    /// with both versions and what to do; an unknown suite is refused too.
    #[test]
    fn a_suite_outside_the_range_is_refused() {
        let mut b = attic();
        b.suite = "sid".into();
        let why = suite_problem(&b).unwrap();
        assert!(why.contains("python3 is 3.14"), "{why}");
        assert!(why.contains(">=3.4,<3.12"), "{why}");
        b.suite = "buster".into();
        let why = suite_problem(&b).unwrap();
        assert!(why.contains("does not know the python3"), "{why}");
        b.suite = "sid".into();
        b.python = None;
        assert_eq!(suite_problem(&b), None);
    }
}
