//! Applying a [`TreeChange`] to a copy of its tree: every path checked
//! first, then removals and renames, then the writes on every core (new
//! content hashed as it is written), then the seeded mtimes of the folders.

use super::{ADDED_MODE, Tag, TreeChange, stream_of};
use crate::Progress;
use crate::change::{self, ChangedRegion};
use crate::error::DatasetError;
use crate::pool::{self, Worker};
use crate::scan::{self, hash_into};
use crate::stream::Content;
use labrun_evidence::{ChangeSpec, EntryKind, Manifest, ManifestEntry, Mtime};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::{self, File, FileTimes, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// One write of the change, run on the pool.
enum Job<'a> {
    Rewrite {
        path: &'a str,
        index: u64,
        size: u64,
    },
    Region {
        region: &'a ChangedRegion,
        index: u64,
    },
    Add {
        path: &'a str,
        index: u64,
        size: u64,
    },
}

impl Job<'_> {
    fn path(&self) -> &str {
        match self {
            Job::Rewrite { path, .. } | Job::Add { path, .. } => path,
            Job::Region { region, .. } => &region.path,
        }
    }

    fn bytes(&self) -> u64 {
        match self {
            Job::Rewrite { size, .. } | Job::Add { size, .. } => *size,
            Job::Region { region, .. } => region.len,
        }
    }
}

/// Applies `change` to the tree under `dir` (a copy of the tree it was
/// planned from) and returns the tree's manifest after it (a content scan of
/// the whole tree; see [`apply_tree_change_from`] to skip it).
pub fn apply_tree_change(
    dir: &Path,
    change: &TreeChange,
    spec: &ChangeSpec,
    progress: Progress,
) -> io::Result<Manifest> {
    let written = change.summary().bytes_written;
    let total = written + change.tree_bytes;
    apply(
        dir,
        change,
        spec,
        &mut |done, _| progress(done.min(written), total),
        forget,
    )?;
    Ok(scan::scan(dir, scan::Detail::Content, &mut |done, _| {
        progress((written + done).min(total), total)
    })?)
}

/// As [`apply_tree_change`], but hands the tree's entries after the change
/// to `sink` in manifest order as they are read, holding none of them: a
/// tree of millions of files changes in bounded memory.
pub fn apply_tree_change_each(
    dir: &Path,
    change: &TreeChange,
    spec: &ChangeSpec,
    sink: &mut dyn FnMut(ManifestEntry) -> Result<(), DatasetError>,
    progress: Progress,
) -> io::Result<()> {
    // The tree's bytes after the change are about the pristine tree's: a
    // total for the rescan's progress without walking the tree first.
    let written = change.summary().bytes_written;
    let total = written + change.tree_bytes;
    apply(
        dir,
        change,
        spec,
        &mut |done, _| progress(done.min(written), total),
        forget,
    )?;
    Ok(crate::scan_stream::scan_each_with_progress(
        dir,
        sink,
        change.tree_bytes,
        &mut |done, _| progress((written + done).min(total), total),
    )?)
}

/// As [`apply_tree_change`], but updates `base` (the content manifest of
/// the tree before the change, as [`crate::scan`] makes it) with the
/// digests of the written files instead of reading the whole tree again.
pub fn apply_tree_change_from(
    dir: &Path,
    change: &TreeChange,
    spec: &ChangeSpec,
    base: &Manifest,
    progress: Progress,
) -> io::Result<Manifest> {
    if base
        .entries
        .iter()
        .any(|e| e.mtime.is_some() || e.link_group.is_some() || e.xattrs.is_some())
    {
        return Err(invalid(
            "the base manifest records metadata (mtimes, hard links or xattrs), which the \
             change alters: use apply_tree_change, which scans the tree after the change"
                .into(),
        ));
    }
    let mut by_path: HashMap<&str, &ManifestEntry> =
        base.entries.iter().map(|e| (e.path.as_str(), e)).collect();
    for path in change
        .rewritten
        .iter()
        .chain(change.regions.iter().map(|r| &r.path))
        .chain(&change.removed)
        .chain(change.renamed.iter().map(|(from, _)| from))
    {
        if by_path
            .get(path.as_str())
            .is_none_or(|e| e.kind != EntryKind::File)
        {
            return Err(DatasetError::BaseManifestMismatch { path: path.clone() }.into());
        }
    }
    let digests: HashMap<String, String> = apply(dir, change, spec, progress, |path, digest| {
        (path.to_string(), digest)
    })?
    .into_iter()
    .collect();
    let mut entries: Vec<ManifestEntry> = Vec::with_capacity(base.entries.len());
    for path in &change.removed {
        by_path.remove(path.as_str());
    }
    let renamed: HashMap<&str, &str> = change
        .renamed
        .iter()
        .map(|(from, to)| (from.as_str(), to.as_str()))
        .collect();
    for e in by_path.into_values() {
        let mut e = e.clone();
        if let Some(to) = renamed.get(e.path.as_str()) {
            e.path = (*to).to_string();
        }
        if let Some(digest) = digests.get(e.path.as_str()) {
            e.sha256 = digest.clone();
        }
        entries.push(e);
    }
    for (path, size) in &change.added {
        entries.push(ManifestEntry {
            path: path.clone(),
            kind: EntryKind::File,
            size: *size,
            mode: ADDED_MODE,
            sha256: digests.get(path.as_str()).cloned().unwrap_or_default(),
            ..ManifestEntry::default()
        });
    }
    let mut manifest = Manifest { entries };
    manifest.sort();
    Ok(manifest)
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

/// What [`apply`] keeps of a written file when the tree is scanned after
/// it: nothing (a change of millions of files writes hundreds of thousands).
fn forget(_path: &str, _digest: String) {}

/// Applies the change; returns what `keep` makes of each written file's
/// path and new SHA-256, in no particular order.
fn apply<R: Send>(
    dir: &Path,
    change: &TreeChange,
    spec: &ChangeSpec,
    progress: Progress,
    keep: impl Fn(&str, String) -> R + Sync,
) -> io::Result<Vec<R>> {
    spec.validate().map_err(invalid)?;
    if spec.seed != change.seed {
        return Err(invalid(format!(
            "the change was planned with seed {}, and is applied with seed {}: plan it with \
             the spec it is applied with",
            change.seed, spec.seed
        )));
    }
    check_tree(dir, change)?;

    for rel in &change.removed {
        let path = dir.join(rel);
        fs::remove_file(&path).map_err(|e| DatasetError::io("removing", &path, e))?;
    }
    for (from, to) in &change.renamed {
        let (from, to) = (dir.join(from), dir.join(to));
        fs::rename(&from, &to).map_err(|e| DatasetError::io("renaming", &from, e))?;
    }
    let mut jobs: Vec<Job> = Vec::new();
    for (i, (path, &size)) in change
        .rewritten
        .iter()
        .zip(&change.rewritten_sizes)
        .enumerate()
    {
        jobs.push(Job::Rewrite {
            path,
            index: i as u64,
            size,
        });
    }
    for (i, region) in change.regions.iter().enumerate() {
        jobs.push(Job::Region {
            region,
            index: i as u64,
        });
    }
    for (i, (path, size)) in change.added.iter().enumerate() {
        jobs.push(Job::Add {
            path,
            index: i as u64,
            size: *size,
        });
    }
    let order = pool::biggest_first(jobs.iter().map(Job::bytes));
    let total = jobs.iter().map(Job::bytes).sum();
    let mtime = system_time(change.mtime);
    let kept = pool::run(
        &jobs,
        &order,
        pool::threads(1),
        total,
        progress,
        |job, w| run_job(dir, job, change.seed, mtime, w).map(|digest| keep(job.path(), digest)),
    )?;
    // Folders last: the writes above do not change a folder's mtime, but
    // the removals, renames and creations did.
    for rel in change.changed_dirs() {
        let path = dir.join(rel);
        set_mtime(&path, mtime)?;
    }
    Ok(kept)
}

/// Checks every path the change names before it writes anything: a change
/// planned from another tree must not half-apply.
fn check_tree(dir: &Path, change: &TreeChange) -> io::Result<()> {
    let mismatch = |rel: &str, detail: &str| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}: {detail}; a tree change applies only to a copy of the tree it was \
                 planned from",
                dir.join(rel).display()
            ),
        )
    };
    let target = |rel: &str, size: Option<u64>| -> io::Result<()> {
        let path = dir.join(rel);
        let md = match fs::symlink_metadata(&path) {
            Ok(md) => md,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(mismatch(rel, "no such file"));
            }
            Err(e) => return Err(DatasetError::io("reading the metadata of", &path, e).into()),
        };
        if !md.is_file() {
            return Err(mismatch(rel, "not a regular file"));
        }
        if md.nlink() > 1 {
            return Err(mismatch(
                rel,
                "one name of a hard-link group, which the change must not touch (plan the \
                 change from a metadata scan, which records hard links)",
            ));
        }
        match size {
            Some(size) if md.len() != size => Err(mismatch(
                rel,
                &format!("{} bytes, expected {size}", md.len()),
            )),
            _ => Ok(()),
        }
    };
    let absent = |rel: &str| match fs::symlink_metadata(dir.join(rel)) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Ok(_) => Err(mismatch(rel, "already exists")),
        Err(e) => Err(DatasetError::io("reading the metadata of", &dir.join(rel), e).into()),
    };
    for (rel, &size) in change.rewritten.iter().zip(&change.rewritten_sizes) {
        target(rel, Some(size))?;
    }
    for r in &change.regions {
        target(&r.path, None)?;
        let size = fs::symlink_metadata(dir.join(&r.path))?.len();
        if r.offset.saturating_add(r.len) > size {
            return Err(mismatch(
                &r.path,
                &format!("{size} bytes, too short for the region"),
            ));
        }
    }
    for (rel, &size) in change.removed.iter().zip(&change.removed_sizes) {
        target(rel, Some(size))?;
    }
    for (from, to) in &change.renamed {
        target(from, None)?;
        absent(to)?;
    }
    for (rel, _) in &change.added {
        absent(rel)?;
    }
    Ok(())
}

fn run_job(
    dir: &Path,
    job: &Job,
    seed: u64,
    mtime: SystemTime,
    worker: &mut Worker,
) -> Result<String, DatasetError> {
    let mut hasher = Sha256::new();
    let (rel, file) = match *job {
        Job::Rewrite { path, index, size } => {
            let abs = dir.join(path);
            let mut file = OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(&abs)
                .map_err(|e| DatasetError::io("opening", &abs, e))?;
            let mut rng = stream_of(seed, Tag::Rewrite, index);
            change::write_stream(
                &mut file,
                &abs,
                &mut rng,
                Content::Random,
                size,
                &mut hasher,
                worker,
            )?;
            (path, file)
        }
        Job::Add { path, index, size } => {
            let abs = dir.join(path);
            let mut file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&abs)
                .map_err(|e| DatasetError::io("creating", &abs, e))?;
            // Set, not left to the umask: the manifest records the mode.
            file.set_permissions(fs::Permissions::from_mode(ADDED_MODE))
                .map_err(|e| DatasetError::io("setting the mode of", &abs, e))?;
            let mut rng = stream_of(seed, Tag::Added, index);
            change::write_stream(
                &mut file,
                &abs,
                &mut rng,
                Content::Random,
                size,
                &mut hasher,
                worker,
            )?;
            (path, file)
        }
        Job::Region { region, index } => {
            let abs = dir.join(&region.path);
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .open(&abs)
                .map_err(|e| DatasetError::io("opening", &abs, e))?;
            // Hash the untouched prefix, write (and hash) the region, hash
            // the rest: one pass over the file.
            let prefix = hash_into(&mut file, &abs, region.offset, &mut hasher, worker)?;
            if prefix != region.offset {
                return Err(DatasetError::Io {
                    action: "changing",
                    path: abs,
                    cause: io::Error::other("the file shrank while it was being changed"),
                });
            }
            let mut rng = stream_of(seed, Tag::Region, index);
            change::write_stream(
                &mut file,
                &abs,
                &mut rng,
                Content::Random,
                region.len,
                &mut hasher,
                worker,
            )?;
            hash_into(&mut file, &abs, u64::MAX, &mut hasher, worker)?;
            (region.path.as_str(), file)
        }
    };
    let abs = dir.join(rel);
    file.set_times(FileTimes::new().set_modified(mtime))
        .map_err(|e| DatasetError::io("setting the mtime of", &abs, e))?;
    Ok(hex::encode(hasher.finalize()))
}

fn system_time(m: Mtime) -> SystemTime {
    let nanos = Duration::from_nanos(u64::from(m.nanos));
    if m.secs >= 0 {
        SystemTime::UNIX_EPOCH + Duration::from_secs(m.secs as u64) + nanos
    } else {
        SystemTime::UNIX_EPOCH - Duration::from_secs(m.secs.unsigned_abs()) + nanos
    }
}

/// Sets a file's or folder's mtime, leaving its access time alone.
pub(crate) fn set_mtime(path: &Path, mtime: SystemTime) -> io::Result<()> {
    let set = || File::open(path)?.set_times(FileTimes::new().set_modified(mtime));
    set().map_err(|e| DatasetError::io("setting the mtime of", path, e).into())
}
