//! Hashes a tree into a manifest: one thread walks the directories, then
//! every core (and a few more threads, to keep the disk's queue full on
//! cold-cache reads) hashes files, biggest first, in 1 MiB reads. `sha2`
//! uses the SHA-NI instructions when the CPU has them.
//!
//! [`Detail::Metadata`] also records what `metadata.rs` reads (mtimes,
//! xattrs, holes, hard links); [`Detail::Content`], the published dataset's
//! scan, makes no system call beyond those it always made.

use crate::Progress;
use crate::error::DatasetError;
use crate::metadata::{self, Recorded};
use crate::pool::{self, Worker};
use labrun_evidence::{EntryKind, Manifest, ManifestEntry};
use sha2::{Digest, Sha256};
use std::fs::{self, File};
use std::io::{ErrorKind, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Hashing threads at least: reads of small files on a cold cache wait on
/// the disk more than on the CPU, so more requests in flight than cores pay.
const MIN_THREADS: usize = 4;

/// What a scan records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Paths, kinds, sizes, modes and digests: what the published dataset's
    /// manifests hold.
    Content,
    /// Content, and the metadata fields of [`ManifestEntry`].
    Metadata,
}

struct FileToHash {
    rel: String,
    abs: PathBuf,
    size: u64,
    mode: u32,
    recorded: Recorded,
}

pub fn scan(dir: &Path, detail: Detail, progress: Progress) -> Result<Manifest, DatasetError> {
    let mut manifest = Manifest::default();
    let mut files = Vec::new();
    walk(dir, detail, &mut manifest, &mut files)?;

    let order = pool::biggest_first(files.iter().map(|f| f.size));
    let total = files.iter().map(|f| f.size).sum();
    let hashed = pool::run(
        &files,
        &order,
        pool::threads(MIN_THREADS),
        total,
        progress,
        hash_file,
    )?;
    let mut inodes = Vec::new();
    for (f, (size, sha256)) in files.into_iter().zip(hashed) {
        if let Some(inode) = f.recorded.inode {
            inodes.push((f.rel.clone(), inode));
        }
        manifest.entries.push(ManifestEntry {
            path: f.rel,
            kind: EntryKind::File,
            size,
            mode: f.mode,
            sha256,
            mtime: f.recorded.mtime,
            xattrs: f.recorded.xattrs,
            sparse: f.recorded.sparse,
            link_group: None,
        });
    }
    manifest.sort();
    metadata::number_link_groups(&mut manifest, &inodes);
    Ok(manifest)
}

fn mode_bits(md: &fs::Metadata) -> u32 {
    md.permissions().mode() & 0o7777
}

/// Collects directories and symlinks into `manifest` (they need no reading)
/// and regular files into `files`.
fn walk(
    root: &Path,
    detail: Detail,
    manifest: &mut Manifest,
    files: &mut Vec<FileToHash>,
) -> Result<(), DatasetError> {
    let mut pending: Vec<(PathBuf, String)> = vec![(root.to_path_buf(), String::new())];
    while let Some((abs_dir, rel_dir)) = pending.pop() {
        let entries =
            fs::read_dir(&abs_dir).map_err(|e| DatasetError::io("listing", &abs_dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| DatasetError::io("listing", &abs_dir, e))?;
            let abs = entry.path();
            let name = entry.file_name();
            let rel = if rel_dir.is_empty() {
                name.to_string_lossy().into_owned()
            } else {
                format!("{rel_dir}/{}", name.to_string_lossy())
            };
            let md = entry
                .metadata()
                .map_err(|e| DatasetError::io("reading the metadata of", &abs, e))?;
            let ft = md.file_type();
            if ft.is_file() {
                let recorded = match detail {
                    Detail::Content => Recorded::default(),
                    Detail::Metadata => metadata::file(&abs, &md)?,
                };
                files.push(FileToHash {
                    rel,
                    abs,
                    size: md.len(),
                    mode: mode_bits(&md),
                    recorded,
                });
            } else if ft.is_dir() {
                let recorded = match detail {
                    Detail::Content => Recorded::default(),
                    Detail::Metadata => metadata::dir(&abs, &md)?,
                };
                manifest.entries.push(ManifestEntry {
                    path: rel.clone(),
                    kind: EntryKind::Dir,
                    size: 0,
                    mode: mode_bits(&md),
                    sha256: String::new(),
                    mtime: recorded.mtime,
                    xattrs: recorded.xattrs,
                    ..ManifestEntry::default()
                });
                pending.push((abs, rel));
            } else if ft.is_symlink() {
                let target =
                    fs::read_link(&abs).map_err(|e| DatasetError::io("reading link", &abs, e))?;
                let bytes = target.as_os_str().as_bytes();
                manifest.entries.push(ManifestEntry {
                    path: rel,
                    kind: EntryKind::Symlink,
                    size: bytes.len() as u64,
                    mode: mode_bits(&md),
                    sha256: hex::encode(Sha256::digest(bytes)),
                    ..ManifestEntry::default()
                });
            } else {
                return Err(DatasetError::UnsupportedFileType { path: abs });
            }
        }
    }
    Ok(())
}

/// Returns (bytes read, SHA-256): the size is what was hashed, even if the
/// file changed since the walk.
fn hash_file(f: &FileToHash, worker: &mut Worker) -> Result<(u64, String), DatasetError> {
    let mut file = File::open(&f.abs).map_err(|e| DatasetError::io("opening", &f.abs, e))?;
    // Only a hint (it doubles the read-ahead window); failure changes nothing.
    let _ = rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::Sequential);
    let mut hasher = Sha256::new();
    let size = hash_into(&mut file, &f.abs, u64::MAX, &mut hasher, worker)?;
    Ok((size, hex::encode(hasher.finalize())))
}

/// Feeds up to `limit` bytes of `r` (all of it for `u64::MAX`) to `hasher`,
/// reporting progress; returns the bytes read.
pub fn hash_into(
    r: &mut impl Read,
    path: &Path,
    limit: u64,
    hasher: &mut Sha256,
    worker: &mut Worker,
) -> Result<u64, DatasetError> {
    let mut total = 0u64;
    while total < limit {
        if worker.aborted() {
            return Err(crate::generate::aborted());
        }
        let want = (limit - total).min(worker.buf.len() as u64) as usize;
        let n = match r.read(&mut worker.buf[..want]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(DatasetError::io("reading", path, e)),
        };
        hasher.update(&worker.buf[..n]);
        worker.add(n as u64);
        total += n as u64;
    }
    Ok(total)
}
