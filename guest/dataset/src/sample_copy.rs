//! Copying a sample's entries out of its tree: one entry at a time, for
//! [`crate::copy_sample`] (a held subset) and [`copy_sample_from_file`] (a
//! subset read from its manifest file, for trees too big to hold).

use crate::Progress;
use crate::error::DatasetError;
use crate::manifest_file::{WrittenManifest, read_entries};
use crate::open_folders::OpenFolders;
use crate::tree_change::set_mtime;
use crate::verify::{Merge, Stop};
use labrun_evidence::{EntryKind, ManifestEntry};
use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Creates `to`, refusing one with something in it.
pub(crate) fn prepare_empty(to: &Path) -> io::Result<()> {
    fs::create_dir_all(to).map_err(|e| at(e, "creating", to))?;
    if fs::read_dir(to)
        .map_err(|e| at(e, "listing", to))?
        .next()
        .is_some()
    {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!(
                "{} is not empty: a sample is copied into a new folder",
                to.display()
            ),
        ));
    }
    Ok(())
}

/// Copies one entry (its folder made before it); a folder's mode and mtime
/// wait for [`finish_folder`]. A link group's later names link to its
/// first (`first_of_group`, filled here). Returns the file bytes it
/// accounts for, a link's too, so that progress ends at the subset's total
/// (which counts every name).
pub(crate) fn copy_entry(
    from: &Path,
    to: &Path,
    e: &ManifestEntry,
    first_of_group: &mut HashMap<u32, String>,
) -> io::Result<u64> {
    let (src, dst) = (from.join(&e.path), to.join(&e.path));
    match e.kind {
        EntryKind::Dir => fs::create_dir(&dst).map_err(|err| at(err, "creating", &dst))?,
        EntryKind::Symlink => {
            let target = fs::read_link(&src).map_err(|err| at(err, "reading", &src))?;
            std::os::unix::fs::symlink(target, &dst).map_err(|err| at(err, "creating", &dst))?;
        }
        EntryKind::File => {
            if let Some(first) = e.link_group.and_then(|g| first_of_group.get(&g)) {
                let first = to.join(first);
                fs::hard_link(&first, &dst).map_err(|err| at(err, "linking", &dst))?;
                return Ok(e.size);
            }
            if let Some(g) = e.link_group {
                first_of_group.insert(g, e.path.clone());
            }
            // fs::copy also copies the permission bits.
            let copied = fs::copy(&src, &dst).map_err(|err| at(err, "copying", &src))?;
            let md = fs::metadata(&src).map_err(|err| at(err, "reading", &src))?;
            set_mtime(&dst, md.modified()?)?;
            return Ok(copied);
        }
    }
    Ok(0)
}

/// A copied folder's mode and mtime, once everything in it is copied (its
/// entries changed its mtime, and a read-only folder must not stop the
/// copy of what it holds).
pub(crate) fn finish_folder(from: &Path, to: &Path, path: &str) -> io::Result<()> {
    let (src, dst) = (from.join(path), to.join(path));
    let md = fs::symlink_metadata(&src).map_err(|err| at(err, "reading", &src))?;
    fs::set_permissions(
        &dst,
        fs::Permissions::from_mode(md.permissions().mode() & 0o7777),
    )
    .map_err(|err| at(err, "setting the mode of", &dst))?;
    set_mtime(&dst, md.modified()?)
}

pub(crate) fn at(e: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

/// The error of a copy that does not match its sample.
pub(crate) fn differs(from: &Path, to: &Path, first_differences: &[String]) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "the sample copied to {} differs from the sample of {} ({}): did the tree \
             change after it was scanned? Scan it again and take the sample from that",
            to.display(),
            from.display(),
            first_differences.join(", ")
        ),
    )
}

/// What the copy needs to know before it starts.
struct SubsetTotals {
    file_bytes: u64,
    /// Recorded with metadata: the copy is scanned so too.
    metadata: bool,
}

/// Reads the subset once: its bytes (for progress), whether it records
/// metadata, and that it is in manifest order (a folder before its
/// entries, which the copy needs).
fn subset_totals(subset: &Path) -> io::Result<SubsetTotals> {
    let mut totals = SubsetTotals {
        file_bytes: 0,
        metadata: false,
    };
    let mut last: Option<String> = None;
    for e in read_entries(subset)? {
        let e = e?;
        if last.as_ref().is_some_and(|last| *last > e.path) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{} is not in manifest order (sorted by path): write it with labrun",
                    subset.display()
                ),
            ));
        }
        if e.kind == EntryKind::File {
            totals.file_bytes += e.size;
        }
        totals.metadata |= e.mtime.is_some() || e.link_group.is_some();
        last = Some(e.path);
    }
    Ok(totals)
}

/// As [`crate::copy_sample`], with the subset read from its manifest file
/// `subset` (what [`crate::sample_to_file`] wrote) and the copy's manifest
/// written to `copy_manifest` (what `copy_sample` returns, byte for byte
/// as [`crate::write_manifest`] writes it), neither held: the copy is
/// scanned into its file once, and that file and the subset's are merged
/// entry by entry to check the copy (a tree that changed while it was
/// copied is an error that says so, and leaves no copy manifest).
pub fn copy_sample_from_file(
    from: &Path,
    to: &Path,
    subset: &Path,
    copy_manifest: &Path,
    progress: Progress,
) -> io::Result<WrittenManifest> {
    prepare_empty(to)?;
    let totals = subset_totals(subset)?;
    let total = totals.file_bytes;
    let mut done = 0u64;
    let mut first_of_group = HashMap::new();
    let mut open: OpenFolders<String> = OpenFolders::new();
    for e in read_entries(subset)? {
        let e = e?;
        while let Some(folder) = open.close_passed(&e.path) {
            finish_folder(from, to, &folder)?;
        }
        let copied = copy_entry(from, to, &e, &mut first_of_group)?;
        if e.kind == EntryKind::Dir {
            open.open(&e.path, e.path.clone());
        } else if e.kind == EntryKind::File {
            done += copied;
            progress(done.min(total), total);
        }
    }
    while let Some(folder) = open.close() {
        finish_folder(from, to, &folder)?;
    }
    // A subset of folders alone still reports its end.
    progress(done.min(total), total);
    let written = if totals.metadata {
        crate::scan_metadata_to_file(to, copy_manifest, &mut |_, _| {})?
    } else {
        crate::scan_to_file(to, copy_manifest)?
    };
    let outcome = match compare_files(subset, copy_manifest) {
        Ok(outcome) => outcome,
        Err(e) => {
            let _ = fs::remove_file(copy_manifest);
            return Err(e);
        }
    };
    if !outcome.passed {
        let _ = fs::remove_file(copy_manifest);
        return Err(differs(from, to, &outcome.first_differences));
    }
    Ok(written)
}

/// The content verdict of `actual` against `expected`, both manifest files
/// in manifest order, merged as they are read.
fn compare_files(expected: &Path, actual: &Path) -> io::Result<labrun_evidence::VerifyOutcome> {
    let stop = |e: DatasetError| Stop::Failed(e);
    let mut merge = Merge::new(read_entries(expected)?.map(|e| e.map_err(stop)));
    let merged = read_entries(actual)?.try_for_each(|a| {
        let a = a.map_err(stop)?;
        merge.actual(&a)
    });
    match merged.and_then(|()| merge.finish()) {
        Ok(outcome) => Ok(outcome),
        Err(Stop::Failed(e)) => Err(e.into()),
        // Both files were written in manifest order (the subset checked).
        Err(Stop::Unsorted) => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is not in manifest order", expected.display()),
        )),
    }
}
