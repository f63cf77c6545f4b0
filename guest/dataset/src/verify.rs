//! Compares a scanned tree with the manifest it should match.
//!
//! As in the published comparison, paths, kinds and contents (size and
//! SHA-256; a symlink's target) are compared; modes and timestamps are not
//! (a restore into a fresh directory may legitimately differ there).
//! `verify_fidelity` reports those, kind by kind, beside this verdict
//! (`metadata_check.rs`).

use crate::error::DatasetError;
use labrun_evidence::{EntryKind, Manifest, ManifestEntry, ManifestReader, VerifyOutcome};
use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fs::File;
use std::io::{self, BufReader};
use std::path::Path;

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
    let mut merge = Merge::new(exp.into_iter().map(Ok::<_, Unsorted>));
    let merged = act
        .into_iter()
        .try_for_each(|a| merge.actual(a))
        .and_then(|()| merge.finish());
    match merged {
        Ok(out) => out,
        // Both sides were sorted just above, and they yield no errors.
        Err(_) => unreachable!("sorted input"),
    }
}

/// The expected side went backwards: it is not in manifest order, so a
/// merge cannot compare it (read it whole and use [`compare`]).
#[derive(Debug)]
pub struct Unsorted;

/// Compares two trees given in manifest order (sorted by path), one entry
/// of each side at a time: what [`compare`] does, holding nothing but the
/// outcome. `expected` is pulled as the actual entries are pushed.
pub struct Merge<I, E> {
    expected: I,
    /// The next expected entry, read but not yet matched.
    head: Option<E>,
    last_expected: Option<String>,
    out: VerifyOutcome,
}

impl<I, E, Err> Merge<I, E>
where
    I: Iterator<Item = Result<E, Err>>,
    E: Borrow<ManifestEntry>,
    Err: From<Unsorted>,
{
    pub fn new(expected: I) -> Merge<I, E> {
        Merge {
            expected,
            head: None,
            last_expected: None,
            out: VerifyOutcome::default(),
        }
    }

    /// Reads the next expected entry into `head` if it is empty, checking
    /// that the entries come in order.
    fn fill(&mut self) -> Result<(), Err> {
        if self.head.is_some() {
            return Ok(());
        }
        let Some(e) = self.expected.next().transpose()? else {
            return Ok(());
        };
        let path = &e.borrow().path;
        if self.last_expected.as_ref().is_some_and(|last| last > path) {
            return Err(Unsorted.into());
        }
        self.last_expected = Some(path.clone());
        self.head = Some(e);
        Ok(())
    }

    fn note(&mut self, what: &str, path: &str) {
        if self.out.first_differences.len() < NAMED_DIFFERENCES {
            self.out.first_differences.push(format!("{what}: {path}"));
        }
    }

    /// The next entry of the actual tree (which comes in manifest order).
    pub fn actual(&mut self, a: &ManifestEntry) -> Result<(), Err> {
        if a.kind == EntryKind::File {
            self.out.files_checked += 1;
            self.out.bytes_checked += a.size;
        }
        loop {
            self.fill()?;
            let order = match &self.head {
                Some(e) => e.borrow().path.as_str().cmp(a.path.as_str()),
                None => Ordering::Greater,
            };
            match (order, self.head.take()) {
                (Ordering::Less, Some(e)) => {
                    self.out.missing += 1;
                    self.note("missing", &e.borrow().path);
                }
                (Ordering::Equal, Some(e)) => {
                    if !same_content(e.borrow(), a) {
                        self.out.changed += 1;
                        self.note("changed", &a.path);
                    }
                    return Ok(());
                }
                (_, head) => {
                    self.head = head;
                    self.out.extra += 1;
                    self.note("extra", &a.path);
                    return Ok(());
                }
            }
        }
    }

    /// What is left of `expected` is missing.
    pub fn finish(mut self) -> Result<VerifyOutcome, Err> {
        loop {
            self.fill()?;
            let Some(e) = self.head.take() else { break };
            self.out.missing += 1;
            self.note("missing", &e.borrow().path);
        }
        let out = &mut self.out;
        out.passed = out.missing == 0 && out.extra == 0 && out.changed == 0;
        Ok(self.out)
    }
}

/// Why a streamed verify stopped short of an outcome.
pub(crate) enum Stop {
    Unsorted,
    Failed(DatasetError),
}

impl From<Unsorted> for Stop {
    fn from(_: Unsorted) -> Stop {
        Stop::Unsorted
    }
}

impl From<DatasetError> for Stop {
    fn from(e: DatasetError) -> Stop {
        Stop::Failed(e)
    }
}

/// Compares the tree under `dir` with `expected` (in manifest order) as the
/// tree is scanned.
pub(crate) fn verify_stream<I, E>(dir: &Path, expected: I) -> Result<VerifyOutcome, Stop>
where
    I: Iterator<Item = Result<E, Stop>>,
    E: Borrow<ManifestEntry>,
{
    let mut merge = Merge::new(expected);
    let mut stopped = None;
    let scanned = crate::scan_stream::scan_each(dir, &mut |a| {
        merge.actual(&a).map_err(|stop| {
            stopped = Some(stop);
            // Never reported: `stopped` says why the scan stopped.
            crate::generate::aborted()
        })
    });
    if let Err(e) = scanned {
        return Err(stopped.unwrap_or(Stop::Failed(e)));
    }
    merge.finish()
}

/// The entries of the manifest file `manifest`, read as they come.
fn entries_of(
    manifest: &Path,
) -> io::Result<impl Iterator<Item = Result<ManifestEntry, Stop>> + '_> {
    let file =
        File::open(manifest).map_err(|e| DatasetError::io("opening manifest", manifest, e))?;
    let reader = ManifestReader::new(BufReader::new(file))
        .map_err(|e| DatasetError::io("reading manifest", manifest, e))?;
    Ok(reader
        .map(|e| e.map_err(|e| Stop::Failed(DatasetError::io("reading manifest", manifest, e)))))
}

/// Compares the tree under `dir` with the manifest file `manifest`, reading
/// both as they come: neither is held whole. A manifest that is not in
/// manifest order (every writer of labrun sorts, but a file may come from
/// elsewhere) is read whole and compared as [`compare`] does.
pub fn verify_against_file(dir: &Path, manifest: &Path) -> io::Result<VerifyOutcome> {
    let expected = entries_of(manifest)?;
    match verify_stream(dir, expected) {
        Ok(out) => Ok(out),
        Err(Stop::Failed(e)) => Err(e.into()),
        Err(Stop::Unsorted) => {
            let expected = crate::read_manifest(manifest)?;
            crate::verify(dir, &expected)
        }
    }
}

/// [`compare`] with the expected side read from the manifest file
/// `manifest` as it comes: of the two, only `actual` is held. A file out of
/// manifest order is read whole, as in [`verify_against_file`].
pub fn compare_against_file(manifest: &Path, actual: &Manifest) -> io::Result<VerifyOutcome> {
    let expected = entries_of(manifest)?;
    let mut act: Vec<&ManifestEntry> = actual.entries.iter().collect();
    act.sort_by(|a, b| a.path.cmp(&b.path));
    let mut merge = Merge::new(expected);
    match act
        .into_iter()
        .try_for_each(|a| merge.actual(a))
        .and_then(|()| merge.finish())
    {
        Ok(out) => Ok(out),
        Err(Stop::Failed(e)) => Err(e.into()),
        Err(Stop::Unsorted) => Ok(compare(&crate::read_manifest(manifest)?, actual)),
    }
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
