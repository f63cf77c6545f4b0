//! Writes the dataset: directories first, then every file on every core,
//! hashing each chunk as it is written (nothing is read back).
//!
//! Files are written through the page cache and not fsynced one by one (that
//! would measure the disk, not produce a dataset): whoever needs the tree on
//! disk calls `sync`, as the protocol does before every timed step.

use crate::error::DatasetError;
use crate::pool::{self, Worker};
use crate::stream::{self, Keys};
use crate::tree::{self, DIR_MODE, FILE_MODE, FileSpec, Tree};
use crate::{DatasetParams, Progress};
use labrun_evidence::{EntryKind, Manifest, ManifestEntry};
use sha2::{Digest, Sha256};
use std::fs::{self, File, OpenOptions, Permissions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

pub fn generate(
    out: &Path,
    params: &DatasetParams,
    progress: Progress,
) -> Result<Manifest, DatasetError> {
    params.validate()?;
    prepare_out(out)?;
    let layout = crate::layout(params);
    check_free_space(out, layout.total_bytes())?;
    let keys = Keys::content(params.seed);
    write_tree(out, tree::tree(params), &keys, progress)
}

/// Writes `tree` under `out` (prepared, with room checked): its directories,
/// then every file on every core from its stream of `keys`. Returns the
/// tree's manifest, sorted.
pub fn write_tree(
    out: &Path,
    tree: Tree,
    keys: &Keys,
    progress: Progress,
) -> Result<Manifest, DatasetError> {
    for dir in &tree.dirs {
        make_dir(&out.join(dir))?;
    }
    let total = tree
        .files
        .iter()
        .map(|f| f.size * (1 + f.copies.len() as u64))
        .sum();
    let order = pool::biggest_first(tree.files.iter().map(|f| f.size));
    let digests = pool::run(
        &tree.files,
        &order,
        pool::threads(1),
        total,
        progress,
        |spec, worker| write_file(out, spec, keys, worker),
    )?;

    let mut manifest = Manifest::default();
    for dir in tree.dirs {
        manifest.entries.push(dir_entry(dir));
    }
    for (spec, digest) in tree.files.into_iter().zip(digests) {
        for path in std::iter::once(spec.path).chain(spec.copies) {
            manifest
                .entries
                .push(file_entry(path, spec.size, digest.clone()));
        }
    }
    manifest.sort();
    Ok(manifest)
}

pub fn file_entry(path: String, size: u64, sha256: String) -> ManifestEntry {
    ManifestEntry {
        path,
        kind: EntryKind::File,
        size,
        mode: FILE_MODE,
        sha256,
        ..ManifestEntry::default()
    }
}

pub fn dir_entry(path: String) -> ManifestEntry {
    ManifestEntry {
        path,
        kind: EntryKind::Dir,
        size: 0,
        mode: DIR_MODE,
        sha256: String::new(),
        ..ManifestEntry::default()
    }
}

/// `out` must not exist (it is created) or be an empty directory.
pub fn prepare_out(out: &Path) -> Result<(), DatasetError> {
    match fs::read_dir(out) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(DatasetError::OutNotEmpty {
                    path: out.to_path_buf(),
                });
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => fs::DirBuilder::new()
            .recursive(true)
            .create(out)
            .map_err(|e| DatasetError::io("creating directory", out, e)),
        Err(e) => Err(DatasetError::io("opening directory", out, e)),
    }
}

/// Refuses up front when the tree cannot fit, rather than filling the disk.
pub fn check_free_space(out: &Path, needed: u64) -> Result<(), DatasetError> {
    let Ok(st) = rustix::fs::statvfs(out) else {
        return Ok(()); // unknown: the writes will tell
    };
    let available = st.f_bavail.saturating_mul(st.f_frsize);
    if available < needed {
        return Err(DatasetError::NotEnoughSpace {
            path: out.to_path_buf(),
            needed,
            available,
        });
    }
    Ok(())
}

pub fn make_dir(path: &Path) -> Result<(), DatasetError> {
    fs::DirBuilder::new()
        .mode(DIR_MODE)
        .create(path)
        .map_err(|e| DatasetError::io("creating directory", path, e))?;
    // The umask may have cleared bits: the manifest promises DIR_MODE.
    fs::set_permissions(path, Permissions::from_mode(DIR_MODE))
        .map_err(|e| DatasetError::io("setting the mode of", path, e))
}

/// Creates a new file (never overwrites) with exactly FILE_MODE.
pub fn create_file(path: &Path) -> Result<File, DatasetError> {
    let f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(path)
        .map_err(|e| DatasetError::io("creating", path, e))?;
    f.set_permissions(Permissions::from_mode(FILE_MODE))
        .map_err(|e| DatasetError::io("setting the mode of", path, e))?;
    Ok(f)
}

/// Writes one file and its copies from its stream; returns its SHA-256.
pub(crate) fn write_file(
    out: &Path,
    spec: &FileSpec,
    keys: &Keys,
    worker: &mut Worker,
) -> Result<String, DatasetError> {
    let paths: Vec<_> = std::iter::once(&spec.path)
        .chain(&spec.copies)
        .map(|p| out.join(p))
        .collect();
    let mut files = paths
        .iter()
        .map(|p| create_file(p))
        .collect::<Result<Vec<_>, _>>()?;
    let mut rng = keys.stream(spec.class.tag(), spec.index);
    let content = spec.class.content();
    let mut hasher = Sha256::new();
    let mut left = spec.size;
    while left > 0 {
        if worker.aborted() {
            return Err(aborted());
        }
        let n = left.min(pool::CHUNK as u64) as usize;
        let chunk = &mut worker.buf[..n];
        stream::fill(&mut rng, content, chunk);
        hasher.update(&*chunk);
        for (f, p) in files.iter_mut().zip(&paths) {
            f.write_all(chunk)
                .map_err(|e| DatasetError::io("writing", p, e))?;
        }
        worker.add(n as u64 * paths.len() as u64);
        left -= n as u64;
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Returned by jobs that stop because another failed; never reported, since
/// the first error wins.
pub fn aborted() -> DatasetError {
    DatasetError::Io {
        action: "stopping",
        path: "".into(),
        cause: std::io::Error::other("another job failed"),
    }
}
