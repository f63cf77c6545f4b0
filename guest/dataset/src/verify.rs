//! Compares a scanned tree with the manifest it should match.
//!
//! As in the published comparison, paths, kinds and contents (size and
//! SHA-256; a symlink's target) are compared; modes and timestamps are not
//! (a restore into a fresh directory may legitimately differ there).
//! `verify_fidelity` reports those, kind by kind, beside this verdict
//! (`metadata_check.rs`).

use labrun_evidence::{EntryKind, Manifest, ManifestEntry, VerifyOutcome};
use std::cmp::Ordering;

/// How many differences are named; all are counted.
pub const NAMED_DIFFERENCES: usize = 20;

fn same_content(a: &ManifestEntry, b: &ManifestEntry) -> bool {
    a.kind == b.kind
        && match a.kind {
            EntryKind::Dir => true,
            EntryKind::File => a.size == b.size && a.sha256 == b.sha256,
            EntryKind::Symlink => a.sha256 == b.sha256,
        }
}

/// `expected` and `actual` need not be sorted.
pub fn compare(expected: &Manifest, actual: &Manifest) -> VerifyOutcome {
    let mut exp: Vec<&ManifestEntry> = expected.entries.iter().collect();
    let mut act: Vec<&ManifestEntry> = actual.entries.iter().collect();
    exp.sort_by(|a, b| a.path.cmp(&b.path));
    act.sort_by(|a, b| a.path.cmp(&b.path));

    let mut out = VerifyOutcome::default();
    for a in &act {
        if a.kind == EntryKind::File {
            out.files_checked += 1;
            out.bytes_checked += a.size;
        }
    }
    let note = |out: &mut VerifyOutcome, what: &str, path: &str| {
        if out.first_differences.len() < NAMED_DIFFERENCES {
            out.first_differences.push(format!("{what}: {path}"));
        }
    };
    let (mut i, mut j) = (0, 0);
    while i < exp.len() || j < act.len() {
        let order = match (exp.get(i), act.get(j)) {
            (Some(e), Some(a)) => e.path.cmp(&a.path),
            (Some(_), None) => Ordering::Less,
            _ => Ordering::Greater,
        };
        match order {
            Ordering::Less => {
                out.missing += 1;
                note(&mut out, "missing", &exp[i].path);
                i += 1;
            }
            Ordering::Greater => {
                out.extra += 1;
                note(&mut out, "extra", &act[j].path);
                j += 1;
            }
            Ordering::Equal => {
                if !same_content(exp[i], act[j]) {
                    out.changed += 1;
                    note(&mut out, "changed", &exp[i].path);
                }
                i += 1;
                j += 1;
            }
        }
    }
    out.passed = out.missing == 0 && out.extra == 0 && out.changed == 0;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, sha: &str) -> ManifestEntry {
        ManifestEntry {
            path: path.into(),
            kind: EntryKind::File,
            size: 1,
            mode: 0o644,
            sha256: sha.into(),
            ..ManifestEntry::default()
        }
    }

    #[test]
    fn counts_all_and_names_the_first_twenty() {
        let expected = Manifest {
            entries: (0..30).map(|i| file(&format!("f{i:02}"), "a")).collect(),
        };
        let mut actual = expected.clone();
        actual.entries.retain(|e| e.path != "f00");
        actual.entries[0].sha256 = "b".into(); // f01
        actual.entries.push(file("zz", "a"));
        for e in actual.entries.iter_mut().skip(5).take(25) {
            e.sha256 = "c".into();
        }
        let out = compare(&expected, &actual);
        assert!(!out.passed);
        assert_eq!((out.missing, out.extra), (1, 1));
        assert_eq!(out.changed, 1 + 24); // f01, and f06..f29
        assert_eq!(out.first_differences.len(), NAMED_DIFFERENCES);
        assert_eq!(out.first_differences[0], "missing: f00");
        assert_eq!(out.first_differences[1], "changed: f01");
        assert_eq!(out.files_checked, 30);
    }

    #[test]
    fn modes_are_not_compared_but_kinds_are() {
        let expected = Manifest {
            entries: vec![file("a", "x")],
        };
        let mut actual = expected.clone();
        actual.entries[0].mode = 0o600;
        assert!(compare(&expected, &actual).passed);
        actual.entries[0].kind = EntryKind::Symlink;
        assert_eq!(compare(&expected, &actual).changed, 1);
    }
}
