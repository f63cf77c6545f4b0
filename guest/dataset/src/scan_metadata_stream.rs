//! The metadata scan (`scan.rs`'s [`crate::scan::Detail::Metadata`]) written
//! to a manifest file as the tree is read, for trees of millions of files
//! that the agent's memory cannot hold (`scan.rs` holds every file, then the
//! whole manifest).
//!
//! The walk ([`SortedWalk`]) yields entries in manifest order; every core
//! reads a file's metadata (`metadata.rs`) and hashes it; the entries go to
//! a [`ManifestFileWriter`] in order. Hard-link groups need the whole tree
//! (a name's group is known only once every name of its inode is found),
//! so only the names of files with more than one link are kept (rare), and
//! the file is written once more with the group numbers when any inode has
//! two or more names in the tree.

use crate::Progress;
use crate::error::DatasetError;
use crate::manifest_file::{ManifestFileWriter, WrittenManifest, read_entries};
use crate::metadata;
use crate::ordered::ordered;
use crate::pool::{self, Worker};
use crate::scan_stream::MIN_THREADS;
use crate::sorted_walk::{self, Found, SortedWalk};
use labrun_evidence::{EntryKind, ManifestEntry};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::{self, File};
use std::path::Path;

/// (device, inode): what the names of one hard-link group share.
type Inode = (u64, u64);

/// Scans `dir` with metadata into the manifest file `path`: the bytes
/// `write_manifest(path, &scan_metadata(dir))` writes, without holding the
/// tree. `progress` gets (bytes hashed, bytes of the tree's files).
pub(crate) fn scan_metadata_to_file(
    dir: &Path,
    path: &Path,
    progress: Progress,
) -> Result<WrittenManifest, DatasetError> {
    // The total a progress report needs, as the in-memory scan has it from
    // its walk; the walk's errors (an unlisted folder, a FIFO) come first,
    // as they do there.
    let total = file_bytes(dir)?;
    let mut out = ManifestFileWriter::create(path)?;
    let mut linked: Vec<(String, Inode)> = Vec::new();
    let job = |found: Found, worker: &mut Worker| match found {
        Found::Ready { entry, abs } => with_folder_metadata(entry, &abs).map(|e| (e, None)),
        Found::File { rel, abs } => hash_file(rel, &abs, worker),
    };
    let mut sink = |(entry, inode): (ManifestEntry, Option<Inode>)| {
        if let Some(inode) = inode {
            linked.push((entry.path.clone(), inode));
        }
        out.push(&entry)
    };
    ordered(
        SortedWalk::new(dir)?,
        pool::threads(MIN_THREADS),
        job,
        &mut sink,
        total,
        progress,
    )?;
    let written = out.finish()?;
    let groups = link_groups(&linked);
    if groups.is_empty() {
        return Ok(written);
    }
    drop(linked);
    write_link_groups(path, &groups)
}

/// Bytes of the regular files under `dir`, as the walk lists them.
pub(crate) fn file_bytes(dir: &Path) -> Result<u64, DatasetError> {
    let mut total = 0u64;
    for found in SortedWalk::new(dir)? {
        if let Found::File { abs, .. } = found? {
            let md = fs::symlink_metadata(&abs)
                .map_err(|e| DatasetError::io("reading the metadata of", &abs, e))?;
            total = total.saturating_add(md.len());
        }
    }
    Ok(total)
}

/// A folder's mtime and xattrs (a symlink records none, as in `scan.rs`).
fn with_folder_metadata(
    mut entry: ManifestEntry,
    abs: &Path,
) -> Result<ManifestEntry, DatasetError> {
    if entry.kind != EntryKind::Dir {
        return Ok(entry);
    }
    let md = fs::symlink_metadata(abs)
        .map_err(|e| DatasetError::io("reading the metadata of", abs, e))?;
    let recorded = metadata::dir(abs, &md)?;
    entry.mtime = recorded.mtime;
    entry.xattrs = recorded.xattrs;
    Ok(entry)
}

/// A file's entry with its metadata, and its inode when it has more than
/// one link. The size is the bytes hashed, as in `scan.rs`.
fn hash_file(
    rel: String,
    abs: &Path,
    worker: &mut Worker,
) -> Result<(ManifestEntry, Option<Inode>), DatasetError> {
    let mut file = File::open(abs).map_err(|e| DatasetError::io("opening", abs, e))?;
    let md = file
        .metadata()
        .map_err(|e| DatasetError::io("reading the metadata of", abs, e))?;
    let recorded = metadata::file(abs, &md)?;
    // Only a hint (it doubles the read-ahead window); failure changes nothing.
    let _ = rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::Sequential);
    let mut hasher = Sha256::new();
    let size = crate::scan::hash_into(&mut file, abs, u64::MAX, &mut hasher, worker)?;
    let entry = ManifestEntry {
        path: rel,
        kind: EntryKind::File,
        size,
        mode: sorted_walk::file_mode(&md),
        sha256: hex::encode(hasher.finalize()),
        mtime: recorded.mtime,
        xattrs: recorded.xattrs,
        sparse: recorded.sparse,
        link_group: None,
    };
    Ok((entry, recorded.inode))
}

/// The group of each name whose inode has two or more names in the tree,
/// numbered 0, 1, ... in the order of each group's first path, as
/// `metadata::number_link_groups` numbers them (`linked` is in path order).
fn link_groups(linked: &[(String, Inode)]) -> HashMap<String, u32> {
    let mut names: HashMap<Inode, usize> = HashMap::new();
    for (_, inode) in linked {
        *names.entry(*inode).or_default() += 1;
    }
    let mut group_of_inode: HashMap<Inode, u32> = HashMap::new();
    let mut groups = HashMap::new();
    for (path, inode) in linked {
        // An inode whose other names lie outside the tree is no link in it.
        if names.get(inode).copied().unwrap_or(0) < 2 {
            continue;
        }
        let next = group_of_inode.len() as u32;
        let group = *group_of_inode.entry(*inode).or_insert(next);
        groups.insert(path.clone(), group);
    }
    groups
}

/// Writes the manifest file `path` again with the link groups, one entry
/// at a time (the new file replaces it once whole).
fn write_link_groups(
    path: &Path,
    groups: &HashMap<String, u32>,
) -> Result<WrittenManifest, DatasetError> {
    let entries = read_entries(path)?;
    let mut out = ManifestFileWriter::create(path)?;
    for entry in entries {
        let mut entry = entry?;
        entry.link_group = groups.get(&entry.path).copied();
        out.push(&entry)?;
    }
    out.finish()
}
