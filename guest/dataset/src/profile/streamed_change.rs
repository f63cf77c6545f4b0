//! A file profile's change applied as a stream, holding neither the tree's
//! manifests nor the change itself (a million files and more, issue 31):
//! the files rewritten and removed come in path order as they are drawn
//! (`tiny_files::in_place_edits`), the few added ones and their folders are
//! held, sorted, and both are merged with the base manifest FILE as it is
//! read. Two passes: one checks that the tree and the base are the ones the
//! change was made for, before anything is touched; the other runs the
//! edits on every core (`ordered`) and writes the new manifest entry by
//! entry.

use super::{Edit, EditCheck, apply_change_from, file_edits, run_edit, tiny_files};
use crate::error::DatasetError;
use crate::generate::{self, dir_entry};
use crate::manifest_file::{ManifestFileWriter, WrittenManifest, read_manifest, write_manifest};
use crate::ordered::ordered;
use crate::stream::Keys;
use crate::{DatasetParams, DatasetProfile, Progress, pool, tree};
use labrun_evidence::{EntryKind, ManifestEntry, ManifestReader};
use std::cmp::Ordering;
use std::fs::{self, File};
use std::io::BufReader;
use std::path::Path;

/// Applies the change and writes the tree's new manifest to `out`, from
/// its manifest before the change, `base` (both as
/// [`super::apply_change_from`] reads and returns them).
pub(crate) fn apply_change_from_file(
    dir: &Path,
    params: &DatasetParams,
    change_seed: u64,
    base: &Path,
    out: &Path,
    progress: Progress,
) -> Result<(), DatasetError> {
    // The published and vm-image trees hold a few thousand files at most;
    // their changes have code of their own, which takes the manifest whole.
    // A base out of manifest order (not labrun's) is merged whole as well.
    let whole = |progress: Progress| {
        let base = read_manifest(base)?;
        let manifest = apply_change_from(dir, params, change_seed, &base, progress)?;
        write_manifest(out, &manifest)
    };
    if matches!(
        params.profile,
        DatasetProfile::Published | DatasetProfile::VmImage
    ) {
        return whole(progress);
    }
    params.validate()?;
    let sizes =
        (params.profile == DatasetProfile::TinyFiles).then(|| tiny_files::Sizes::of(params));
    let change = || changes(params, change_seed, sizes.as_ref());
    let Some(total) = check(dir, change(), Some(entries(base)?))? else {
        return whole(progress);
    };
    let mut w = ManifestFileWriter::create(out)?;
    let mut sink = |e: ManifestEntry| w.push(&e);
    apply(
        dir,
        params,
        change_seed,
        change(),
        Some(entries(base)?),
        total,
        &mut sink,
        progress,
    )?;
    w.finish()?;
    Ok(())
}

/// Applies the change of a file profile and writes the tree's new manifest
/// to `out` from a scan of the whole tree, as the tree is read.
pub(crate) fn apply_change_to_file(
    dir: &Path,
    params: &DatasetParams,
    change_seed: u64,
    out: &Path,
    progress: Progress,
) -> Result<WrittenManifest, DatasetError> {
    if matches!(
        params.profile,
        DatasetProfile::Published | DatasetProfile::VmImage
    ) {
        let manifest = super::apply_change(dir, params, change_seed, progress)?;
        let mut w = ManifestFileWriter::create(out)?;
        for e in &manifest.entries {
            w.push(e)?;
        }
        return w.finish();
    }
    params.validate()?;
    let sizes =
        (params.profile == DatasetProfile::TinyFiles).then(|| tiny_files::Sizes::of(params));
    let change = || changes(params, change_seed, sizes.as_ref());
    let total = check(dir, change(), None)?.unwrap_or(0);
    apply(
        dir,
        params,
        change_seed,
        change(),
        None,
        total,
        &mut |_| Ok(()),
        progress,
    )?;
    let mut w = ManifestFileWriter::create(out)?;
    crate::scan_stream::scan_each(dir, &mut |e| w.push(&e))?;
    w.finish()
}

/// One step of a change, in the tree's path order.
enum Change {
    /// An edit of `super::run_edit`.
    Edit(Edit),
    /// An entry written as it is (a folder made for an added file).
    Entry(ManifestEntry),
}

impl Change {
    fn path(&self) -> &str {
        match self {
            Change::Edit(e) => e.path(),
            Change::Entry(e) => &e.path,
        }
    }
}

/// The change in path order: for tiny-files the files rewritten and
/// removed as they are drawn, merged with the added files and their folders
/// (held: 0.1% of the tree); for media, its added photos (a few hundred).
fn changes<'a>(
    params: &DatasetParams,
    change_seed: u64,
    sizes: Option<&'a tiny_files::Sizes>,
) -> impl Iterator<Item = Change> + Send + 'a {
    let (in_place, added): (Box<dyn Iterator<Item = Edit> + Send + 'a>, Vec<Edit>) = match sizes {
        Some(sizes) => (
            Box::new(tiny_files::in_place_edits(params, change_seed, sizes)),
            tiny_files::added_edits(params, change_seed),
        ),
        None => (
            Box::new(std::iter::empty()),
            file_edits(params, change_seed),
        ),
    };
    let dirs = tree::parent_dirs(added.iter().map(Edit::path));
    let mut held: Vec<Change> = dirs
        .into_iter()
        .map(|d| Change::Entry(dir_entry(d)))
        .chain(added.into_iter().map(Change::Edit))
        .collect();
    held.sort_by(|a, b| a.path().cmp(b.path()));
    held.dedup_by(|a, b| a.path() == b.path());
    // The files drawn are never added ones, nor folders: no path is on both.
    merge(in_place.map(Change::Edit), held.into_iter()).map(|m| match m {
        Merged::Base(c) | Merged::Change(c, _) => c,
    })
}

type Entries = Box<dyn Iterator<Item = Result<ManifestEntry, DatasetError>> + Send>;

fn entries(base: &Path) -> Result<Entries, DatasetError> {
    let file = File::open(base).map_err(|e| DatasetError::io("opening manifest", base, e))?;
    let reader = ManifestReader::new(BufReader::new(file))
        .map_err(|e| DatasetError::io("reading manifest", base, e))?;
    let base = base.to_path_buf();
    Ok(Box::new(reader.map(move |e| {
        e.map_err(|e| DatasetError::io("reading manifest", &base, e))
    })))
}

fn no_entries() -> Entries {
    Box::new(std::iter::empty())
}

/// Checks before anything is touched, as `apply_change_from` does: the
/// tree is the one the change was made for (`EditCheck`), and every file
/// the change rewrites in place is a file of the base, or absent from the
/// tree. Returns the bytes the change writes, or `None` when the base is
/// not in manifest order (which the merge needs).
fn check(
    dir: &Path,
    changes: impl Iterator<Item = Change>,
    base: Option<Entries>,
) -> Result<Option<u64>, DatasetError> {
    let has_base = base.is_some();
    let (mut edits, mut total, mut last) = (EditCheck::default(), 0, String::new());
    let mut not_in_base: Option<String> = None;
    let mut in_order = |e: Result<ManifestEntry, DatasetError>| -> Result<bool, DatasetError> {
        let e = e?;
        let sorted = last <= e.path;
        last = e.path;
        Ok(sorted)
    };
    for m in merge(base.unwrap_or_else(no_entries), changes.map(Ok)) {
        let (change, replaced) = match m {
            Merged::Base(e) => {
                if !in_order(e)? {
                    return Ok(None);
                }
                continue;
            }
            Merged::Change(change, replaced) => (change?, replaced),
        };
        let in_base = match replaced {
            Some(e) => {
                let e = e?;
                let file = e.kind == EntryKind::File;
                if !in_order(Ok(e))? {
                    return Ok(None);
                }
                file
            }
            None => false,
        };
        let Change::Edit(edit) = change else { continue };
        edits.edit(dir, &edit)?;
        total += edit.size();
        let rewritten = matches!(edit, Edit::Rewrite { .. });
        if has_base
            && rewritten
            && !in_base
            && not_in_base.is_none()
            && dir.join(edit.path()).exists()
        {
            not_in_base = Some(edit.path().to_string());
        }
    }
    if let Some(path) = not_in_base {
        return Err(DatasetError::BaseManifestMismatch { path });
    }
    edits.finish()?;
    Ok(Some(total))
}

/// Runs the change on every core, and passes the new manifest's entries
/// (the base's, with the change's in their place) to `sink` in order.
#[allow(clippy::too_many_arguments)]
fn apply(
    dir: &Path,
    params: &DatasetParams,
    change_seed: u64,
    changes: impl Iterator<Item = Change> + Send,
    base: Option<Entries>,
    total: u64,
    sink: &mut dyn FnMut(ManifestEntry) -> Result<(), DatasetError>,
    progress: Progress,
) -> Result<(), DatasetError> {
    let keys = Keys::change_of(params.profile, params.seed, change_seed);
    // The folder of an added file comes before it: made as it is drawn,
    // it is there when the file is written.
    let changes = changes.map(|c| {
        if let Change::Entry(e) = &c {
            let abs = dir.join(&e.path);
            if e.kind == EntryKind::Dir && fs::symlink_metadata(&abs).is_err() {
                generate::make_dir(&abs)?;
            }
        }
        Ok(c)
    });
    let items = merge(base.unwrap_or_else(no_entries), changes).map(|m| match m {
        Merged::Base(e) => e.map(Work::Keep),
        Merged::Change(c, _) => c.map(|c| match c {
            Change::Entry(e) => Work::Keep(e),
            Change::Edit(edit) => Work::Edit(edit),
        }),
    });
    let job = |work: Work, worker: &mut pool::Worker| match work {
        Work::Keep(e) => Ok(Some(e)),
        Work::Edit(edit) => run_edit(dir, &edit, &keys, worker),
    };
    let mut pass = |e: Option<ManifestEntry>| e.map_or(Ok(()), &mut *sink);
    ordered(items, pool::threads(1), job, &mut pass, total, progress)
}

/// What a worker does with an entry of the new manifest.
enum Work {
    Keep(ManifestEntry),
    Edit(Edit),
}

/// An item of [`merge`]: the base's, or a change with the base's item it
/// replaces.
enum Merged<B, C> {
    Base(B),
    Change(C, Option<B>),
}

/// Anything with a path to merge by; an error sorts first, so that it
/// comes out at once.
trait Pathed {
    fn path(&self) -> &str;
}

impl Pathed for Change {
    fn path(&self) -> &str {
        Change::path(self)
    }
}

impl Pathed for ManifestEntry {
    fn path(&self) -> &str {
        &self.path
    }
}

impl<T: Pathed, E> Pathed for Result<T, E> {
    fn path(&self) -> &str {
        self.as_ref().map_or("", Pathed::path)
    }
}

/// Two streams in path order as one: a change replaces the base's item of
/// its path.
fn merge<B: Pathed, C: Pathed>(
    base: impl Iterator<Item = B>,
    changes: impl Iterator<Item = C>,
) -> impl Iterator<Item = Merged<B, C>> {
    let (mut base, mut changes) = (base.peekable(), changes.peekable());
    std::iter::from_fn(move || {
        let order = match (base.peek(), changes.peek()) {
            (None, None) => return None,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(b), Some(c)) => b.path().cmp(c.path()),
        };
        match order {
            Ordering::Less => base.next().map(Merged::Base),
            Ordering::Equal => {
                let replaced = base.next();
                changes.next().map(|c| Merged::Change(c, replaced))
            }
            Ordering::Greater => changes.next().map(|c| Merged::Change(c, None)),
        }
    })
}
