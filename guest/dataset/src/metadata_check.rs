//! Compares the metadata of a restored tree with what the expected
//! manifest recorded, kind by kind, without failing anything: content is
//! `verify.rs`'s job, and a restore may legitimately drop some metadata.
//! The verdicts are facts to report ("this tool keeps hard links, not
//! xattrs"), not pass or fail.
//!
//! A kind is `not_tested` when the expected tree has nothing that shows it
//! (a content-only manifest records no mtime; a filesystem without xattrs
//! gave the fixture none), so it is never reported `preserved` for nothing.

use labrun_evidence::{EntryKind, Manifest, ManifestEntry, MetadataCheck, MetadataKind};
use labrun_evidence::{MetadataStatus, Mtime};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What a copy that ignores modes gives anyway (umask 022).
const DEFAULT_FILE_MODE: u32 = 0o644;
const DEFAULT_DIR_MODE: u32 = 0o755;

type ByPath<'a> = BTreeMap<&'a str, &'a ManifestEntry>;

/// One verdict per kind, in the order of [`MetadataKind::ALL`].
/// `actual` should come from a metadata scan (`scan_metadata`).
pub fn compare_metadata(expected: &Manifest, actual: &Manifest) -> Vec<MetadataCheck> {
    let exp: ByPath = expected
        .entries
        .iter()
        .map(|e| (e.path.as_str(), e))
        .collect();
    let act: ByPath = actual
        .entries
        .iter()
        .map(|e| (e.path.as_str(), e))
        .collect();
    MetadataKind::ALL
        .iter()
        .map(|&kind| check(kind, &exp, &act))
        .collect()
}

fn check(kind: MetadataKind, exp: &ByPath, act: &ByPath) -> MetadataCheck {
    let tally = match kind {
        MetadataKind::Mode => mode(exp, act),
        MetadataKind::Mtime => mtime(exp, act, EntryKind::File),
        MetadataKind::DirMtime => mtime(exp, act, EntryKind::Dir),
        MetadataKind::Symlink => symlink(exp, act),
        MetadataKind::Hardlink => hardlink(exp, act),
        MetadataKind::EmptyDir => empty_dir(exp, act),
        MetadataKind::Sparse => sparse(exp, act),
        MetadataKind::UnicodeName => unicode_name(exp, act),
        MetadataKind::Xattr => xattr(exp, act),
    };
    tally.verdict(kind)
}

/// What one kind's comparison found.
#[derive(Debug, Default)]
struct Tally {
    /// Why nothing could be compared, when nothing could.
    untested: &'static str,
    /// Expected entries that show the kind.
    candidates: usize,
    /// Of those, the ones the restore has to compare with.
    compared: usize,
    lost: usize,
    /// The first loss, in path order.
    first: Option<String>,
}

impl Tally {
    fn untested_unless_found(why: &'static str) -> Tally {
        Tally {
            untested: why,
            ..Tally::default()
        }
    }

    fn compare(&mut self, loss: Option<String>) {
        self.compared += 1;
        if let Some(loss) = loss {
            self.lost += 1;
            self.first.get_or_insert(loss);
        }
    }

    fn verdict(self, kind: MetadataKind) -> MetadataCheck {
        let (status, detail) = if self.candidates == 0 {
            (MetadataStatus::NotTested, self.untested.to_string())
        } else if self.compared == 0 {
            (
                MetadataStatus::NotTested,
                format!(
                    "none of the {} entries that show it came back as the same kind",
                    self.candidates
                ),
            )
        } else if let Some(first) = self.first {
            let of = format!("{} of {} compared", self.lost, entries(self.compared));
            (MetadataStatus::Lost, format!("{first} ({of})"))
        } else {
            let kept = format!("{} compared", entries(self.compared));
            (MetadataStatus::Preserved, kept)
        };
        MetadataCheck {
            kind,
            status,
            detail: Some(detail),
        }
    }
}

fn entries(n: usize) -> String {
    match n {
        1 => "1 entry".to_string(),
        n => format!("{n} entries"),
    }
}

/// The entry at the same path in the restore, if it is of the same kind.
fn same_kind<'a>(act: &ByPath<'a>, e: &ManifestEntry) -> Option<&'a ManifestEntry> {
    act.get(e.path.as_str())
        .copied()
        .filter(|a| a.kind == e.kind)
}

fn kind_name(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::File => "file",
        EntryKind::Dir => "directory",
        EntryKind::Symlink => "symlink",
    }
}

fn mode(exp: &ByPath, act: &ByPath) -> Tally {
    let mut t = Tally::untested_unless_found(
        "every expected mode is 0644 (files) or 0755 (directories), which a copy that \
         ignores modes gives too",
    );
    let shown = |e: &ManifestEntry| match e.kind {
        EntryKind::File => e.mode != DEFAULT_FILE_MODE,
        EntryKind::Dir => e.mode != DEFAULT_DIR_MODE,
        EntryKind::Symlink => false,
    };
    if !exp.values().any(|e| shown(e)) {
        return t;
    }
    // Symlinks' modes mean nothing on Linux (always 0777).
    for e in exp.values().filter(|e| e.kind != EntryKind::Symlink) {
        t.candidates += 1;
        if let Some(a) = same_kind(act, e) {
            let loss = (a.mode != e.mode)
                .then(|| format!("{}: mode {:04o} -> {:04o}", e.path, e.mode, a.mode));
            t.compare(loss);
        }
    }
    t
}

fn mtime(exp: &ByPath, act: &ByPath, kind: EntryKind) -> Tally {
    let mut t = Tally::untested_unless_found(match kind {
        EntryKind::Dir => "no expected directory records an mtime (a content-only manifest)",
        _ => "no expected file records an mtime (a content-only manifest)",
    });
    for e in exp.values().filter(|e| e.kind == kind) {
        let Some(want) = e.mtime else { continue };
        t.candidates += 1;
        if let Some(a) = same_kind(act, e) {
            t.compare(mtime_loss(&e.path, want, a.mtime));
        }
    }
    t
}

fn mtime_loss(path: &str, want: Mtime, got: Option<Mtime>) -> Option<String> {
    match got {
        Some(got) if got == want => None,
        Some(got) if got.secs == want.secs => Some(format!(
            "{path}: mtime {want} -> {got} (only the sub-second part differs)"
        )),
        Some(got) => Some(format!("{path}: mtime {want} -> {got}")),
        None => Some(format!("{path}: mtime {want} -> not recorded")),
    }
}

fn symlink(exp: &ByPath, act: &ByPath) -> Tally {
    let mut t = Tally::untested_unless_found("the expected tree has no symlink");
    for e in exp.values().filter(|e| e.kind == EntryKind::Symlink) {
        t.candidates += 1;
        let loss = match act.get(e.path.as_str()) {
            None => Some(format!("{}: not restored", e.path)),
            Some(a) if a.kind != EntryKind::Symlink => Some(format!(
                "{}: a symlink came back as a {}",
                e.path,
                kind_name(a.kind)
            )),
            Some(a) if a.sha256 != e.sha256 => Some(format!("{}: the target changed", e.path)),
            Some(_) => None,
        };
        t.compare(loss);
    }
    t
}

/// Names that were one inode must still be one, and names that were
/// separate files must not have become one.
fn hardlink(exp: &ByPath, act: &ByPath) -> Tally {
    let mut t = Tally::untested_unless_found("the expected tree has no hard links");
    let mut groups: BTreeMap<u32, Vec<&ManifestEntry>> = BTreeMap::new();
    for e in exp.values().filter(|e| e.kind == EntryKind::File) {
        if let Some(g) = e.link_group {
            groups.entry(g).or_default().push(e);
        }
    }
    for names in groups.values() {
        t.candidates += names.len();
        let restored: Vec<(&str, Option<u32>)> = names
            .iter()
            .filter_map(|e| same_kind(act, e).map(|a| (e.path.as_str(), a.link_group)))
            .collect();
        let Some(&(first, first_group)) = restored.first() else {
            continue;
        };
        for &(path, group) in &restored[1..] {
            let split = first_group.is_none() || group != first_group;
            t.compare(split.then(|| format!("{first} and {path}: two inodes, were one")));
        }
    }
    if t.candidates > 0 {
        // Links the source did not have (a restore that deduplicates by
        // hard-linking identical files).
        let mut by_group: HashMap<u32, &ManifestEntry> = HashMap::new();
        for a in act.values().filter(|a| a.kind == EntryKind::File) {
            let expected = exp
                .get(a.path.as_str())
                .filter(|e| e.kind == EntryKind::File);
            let (Some(g), Some(e)) = (a.link_group, expected) else {
                continue;
            };
            match by_group.get(&g) {
                None => {
                    by_group.insert(g, e);
                }
                Some(first) if first.link_group.is_none() || first.link_group != e.link_group => {
                    let merged = format!("{} and {}: one inode, were two", first.path, e.path);
                    t.compare(Some(merged));
                }
                Some(_) => {}
            }
        }
    }
    t
}

/// Directories with no file or symlink anywhere beneath them.
fn empty_dir(exp: &ByPath, act: &ByPath) -> Tally {
    let mut t = Tally::untested_unless_found("the expected tree has no empty directory");
    let mut holding_data = BTreeSet::new();
    for e in exp.values().filter(|e| e.kind != EntryKind::Dir) {
        let mut path = e.path.as_str();
        while let Some((parent, _)) = path.rsplit_once('/') {
            holding_data.insert(parent);
            path = parent;
        }
    }
    for e in exp.values().filter(|e| e.kind == EntryKind::Dir) {
        if holding_data.contains(e.path.as_str()) {
            continue;
        }
        t.candidates += 1;
        let loss = match act.get(e.path.as_str()) {
            None => Some(format!("{}: not restored", e.path)),
            Some(a) if a.kind != EntryKind::Dir => {
                Some(format!("{}: came back as a {}", e.path, kind_name(a.kind)))
            }
            Some(_) => None,
        };
        t.compare(loss);
    }
    t
}

fn sparse(exp: &ByPath, act: &ByPath) -> Tally {
    let mut t = Tally::untested_unless_found(
        "the expected tree has no sparse file (its filesystem may not keep holes)",
    );
    for e in exp.values().filter(|e| e.sparse) {
        t.candidates += 1;
        if let Some(a) = same_kind(act, e) {
            let loss = (!a.sparse).then(|| {
                format!(
                    "{}: holes filled ({} bytes, not sparse in the restore)",
                    e.path, e.size
                )
            });
            t.compare(loss);
        }
    }
    t
}

/// Names with a space or a non-ASCII character, anywhere in the path.
fn unicode_name(exp: &ByPath, act: &ByPath) -> Tally {
    let mut t = Tally::untested_unless_found(
        "the expected tree has no name with spaces or non-ASCII characters",
    );
    let unusual = |p: &str| p.chars().any(|c| c == ' ' || !c.is_ascii());
    for e in exp.values().filter(|e| unusual(&e.path)) {
        t.candidates += 1;
        let loss = (!act.contains_key(e.path.as_str()))
            .then(|| format!("{}: no entry of this exact name in the restore", e.path));
        t.compare(loss);
    }
    t
}

fn xattr(exp: &ByPath, act: &ByPath) -> Tally {
    let mut t = Tally::untested_unless_found(
        "the expected tree records no user xattr (its filesystem may refuse them)",
    );
    let none = BTreeMap::new();
    for e in exp.values() {
        let Some(want) = &e.xattrs else { continue };
        t.candidates += 1;
        if let Some(a) = same_kind(act, e) {
            let got = a.xattrs.as_ref().unwrap_or(&none);
            t.compare(xattr_loss(&e.path, want, got));
        }
    }
    t
}

fn xattr_loss(
    path: &str,
    want: &BTreeMap<String, String>,
    got: &BTreeMap<String, String>,
) -> Option<String> {
    for (name, value) in want {
        match got.get(name) {
            None => return Some(format!("{path}: xattr {name} missing")),
            Some(v) if v != value => return Some(format!("{path}: xattr {name} changed")),
            Some(_) => {}
        }
    }
    got.keys()
        .find(|name| !want.contains_key(*name))
        .map(|name| format!("{path}: xattr {name} added"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str, kind: EntryKind, mode: u32) -> ManifestEntry {
        ManifestEntry {
            path: path.into(),
            kind,
            mode,
            ..ManifestEntry::default()
        }
    }

    fn status_of(checks: &[MetadataCheck], kind: MetadataKind) -> &MetadataCheck {
        checks.iter().find(|c| c.kind == kind).unwrap()
    }

    #[test]
    fn a_content_only_manifest_tests_nothing() {
        let m = Manifest {
            entries: vec![
                entry("d", EntryKind::Dir, 0o755),
                entry("d/f", EntryKind::File, 0o644),
            ],
        };
        let checks = compare_metadata(&m, &m);
        assert_eq!(checks.len(), MetadataKind::ALL.len());
        for c in &checks {
            assert_eq!(c.status, MetadataStatus::NotTested, "{c:?}");
            assert!(c.detail.as_deref().is_some_and(|d| !d.is_empty()));
        }
    }

    #[test]
    fn a_changed_mode_is_lost_with_the_first_path() {
        let exp = Manifest {
            entries: vec![
                entry("a", EntryKind::File, 0o600),
                entry("b", EntryKind::File, 0o644),
                entry("c", EntryKind::File, 0o644),
            ],
        };
        let mut act = exp.clone();
        act.entries[1].mode = 0o600;
        act.entries[2].mode = 0o640;
        let c = compare_metadata(&exp, &act);
        let mode = status_of(&c, MetadataKind::Mode);
        assert_eq!(mode.status, MetadataStatus::Lost);
        assert_eq!(
            mode.detail.as_deref(),
            Some("b: mode 0644 -> 0600 (2 of 3 entries compared)")
        );
        let same = compare_metadata(&exp, &exp);
        assert_eq!(
            status_of(&same, MetadataKind::Mode).status,
            MetadataStatus::Preserved
        );
    }

    #[test]
    fn no_expected_xattr_is_not_tested_even_if_the_restore_has_some() {
        // A fixture written where xattrs were refused records none.
        let exp = Manifest {
            entries: vec![entry("f", EntryKind::File, 0o600)],
        };
        let mut act = exp.clone();
        act.entries[0].xattrs = Some(BTreeMap::from([("user.x".into(), "01".into())]));
        let c = compare_metadata(&exp, &act);
        let x = status_of(&c, MetadataKind::Xattr);
        assert_eq!(x.status, MetadataStatus::NotTested);
        assert!(x.detail.as_deref().unwrap().contains("refuse"));
        assert_eq!(
            status_of(&c, MetadataKind::Mode).detail.as_deref(),
            Some("1 entry compared")
        );
    }

    #[test]
    fn sub_second_loss_is_named() {
        let t = Mtime {
            secs: 1_000_000_000,
            nanos: 5,
        };
        let loss = mtime_loss("f", t, Some(Mtime { nanos: 0, ..t })).unwrap();
        assert!(loss.contains("sub-second"), "{loss}");
        assert_eq!(mtime_loss("f", t, Some(t)), None);
    }

    #[test]
    fn hard_links_split_and_merged_are_both_lost() {
        let file = |p: &str, g: Option<u32>| ManifestEntry {
            link_group: g,
            ..entry(p, EntryKind::File, 0o644)
        };
        let exp = Manifest {
            entries: vec![file("a", Some(0)), file("b", Some(0)), file("c", None)],
        };
        let split = Manifest {
            entries: vec![file("a", None), file("b", None), file("c", None)],
        };
        let c = compare_metadata(&exp, &split);
        let h = status_of(&c, MetadataKind::Hardlink);
        assert_eq!(h.status, MetadataStatus::Lost);
        assert!(
            h.detail
                .as_deref()
                .unwrap()
                .starts_with("a and b: two inodes")
        );

        let merged = Manifest {
            entries: vec![file("a", Some(0)), file("b", Some(0)), file("c", Some(0))],
        };
        let c = compare_metadata(&exp, &merged);
        let h = status_of(&c, MetadataKind::Hardlink);
        assert_eq!(h.status, MetadataStatus::Lost);
        assert!(
            h.detail
                .as_deref()
                .unwrap()
                .starts_with("a and c: one inode")
        );

        // Group numbers may differ; the partition is what counts.
        let renumbered = Manifest {
            entries: vec![file("a", Some(7)), file("b", Some(7)), file("c", None)],
        };
        let c = compare_metadata(&exp, &renumbered);
        assert_eq!(
            status_of(&c, MetadataKind::Hardlink).status,
            MetadataStatus::Preserved
        );
    }

    #[test]
    fn empty_dirs_are_those_without_data_beneath() {
        let exp = Manifest {
            entries: vec![
                entry("e", EntryKind::Dir, 0o755),
                entry("e/n", EntryKind::Dir, 0o755),
                entry("full", EntryKind::Dir, 0o755),
                entry("full/sub", EntryKind::Dir, 0o755),
                entry("full/sub/f", EntryKind::File, 0o644),
            ],
        };
        let mut act = exp.clone();
        act.entries.remove(1);
        let c = compare_metadata(&exp, &act);
        let e = status_of(&c, MetadataKind::EmptyDir);
        assert_eq!(e.status, MetadataStatus::Lost);
        assert_eq!(
            e.detail.as_deref(),
            Some("e/n: not restored (1 of 2 entries compared)")
        );
    }

    #[test]
    fn xattrs_missing_changed_and_added() {
        let want = BTreeMap::from([("user.a".to_string(), "01".to_string())]);
        assert_eq!(xattr_loss("f", &want, &want), None);
        let none = BTreeMap::new();
        assert_eq!(
            xattr_loss("f", &want, &none).as_deref(),
            Some("f: xattr user.a missing")
        );
        let changed = BTreeMap::from([("user.a".to_string(), "02".to_string())]);
        assert!(
            xattr_loss("f", &want, &changed)
                .unwrap()
                .ends_with("changed")
        );
        let mut added = want.clone();
        added.insert("user.b".into(), "".into());
        assert!(xattr_loss("f", &want, &added).unwrap().ends_with("added"));
    }
}
