//! A tree's entries in manifest order (sorted by path, byte for byte), found
//! as the walk goes: nothing holds the whole tree.
//!
//! A directory is listed, its names sorted, and its subtrees visited in
//! turn, so only the listings on the way down to the current folder are
//! held. Sorting one folder's names is not enough by itself: the manifest
//! sorts whole paths, and `/` sorts after `.` and `-`, so `a.b` comes
//! before `a/x`. A folder `a` therefore takes two places in its parent's
//! order: its own entry at key `a`, and its children at key `a/`.

use crate::error::DatasetError;
use labrun_evidence::{EntryKind, ManifestEntry};
use sha2::{Digest, Sha256};
use std::ffi::OsString;
use std::fs::{self, FileType};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// What the walk yields, in manifest order.
pub(crate) enum Found {
    /// A directory or symlink: complete without reading any content. `abs`
    /// for a metadata scan, which reads a folder's mtime and xattrs.
    Ready { entry: ManifestEntry, abs: PathBuf },
    /// A regular file, to be hashed.
    File { rel: String, abs: PathBuf },
}

/// One name of a listed folder, at its place in the manifest's order.
struct Listed {
    /// The name as the manifest spells it (lossy for names that are not
    /// UTF-8, as the in-memory scan spells them), with `/` after a subtree.
    key: String,
    name: OsString,
    /// `None`: the subtree of the folder `name`, not an entry.
    file_type: Option<FileType>,
}

/// A folder being visited: its listing, last name first (popped in order).
struct Frame {
    rel: String,
    abs: PathBuf,
    rest: Vec<Listed>,
}

pub(crate) struct SortedWalk {
    stack: Vec<Frame>,
}

impl SortedWalk {
    pub(crate) fn new(root: &Path) -> Result<SortedWalk, DatasetError> {
        let frame = list(root.to_path_buf(), String::new())?;
        Ok(SortedWalk { stack: vec![frame] })
    }

    fn step(&mut self) -> Option<Result<Found, DatasetError>> {
        loop {
            let frame = self.stack.last_mut()?;
            let Some(next) = frame.rest.pop() else {
                self.stack.pop();
                continue;
            };
            let rel = if frame.rel.is_empty() {
                next.name.to_string_lossy().into_owned()
            } else {
                format!("{}/{}", frame.rel, next.name.to_string_lossy())
            };
            let abs = frame.abs.join(&next.name);
            let Some(ft) = next.file_type else {
                match list(abs, rel) {
                    Ok(frame) => self.stack.push(frame),
                    Err(e) => return Some(Err(e)),
                }
                continue;
            };
            return Some(entry(rel, abs, ft));
        }
    }
}

impl Iterator for SortedWalk {
    type Item = Result<Found, DatasetError>;

    /// After an error, nothing more: a tree that cannot be read whole is
    /// not scanned in part.
    fn next(&mut self) -> Option<Self::Item> {
        let item = self.step();
        if matches!(item, Some(Err(_))) {
            self.stack.clear();
        }
        item
    }
}

/// The manifest's order of one folder's names (see the module's note).
fn list(abs: PathBuf, rel: String) -> Result<Frame, DatasetError> {
    let entries = fs::read_dir(&abs).map_err(|e| DatasetError::io("listing", &abs, e))?;
    let mut rest = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| DatasetError::io("listing", &abs, e))?;
        let name = entry.file_name();
        // The type from the listing itself where the file system gives it
        // (no stat); a lstat otherwise. Never follows a link.
        let ft = entry
            .file_type()
            .map_err(|e| DatasetError::io("reading the metadata of", &entry.path(), e))?;
        let key = name.to_string_lossy().into_owned();
        if ft.is_dir() {
            rest.push(Listed {
                key: format!("{key}/"),
                name: name.clone(),
                file_type: None,
            });
        }
        rest.push(Listed {
            key,
            name,
            file_type: Some(ft),
        });
    }
    // Descending, so that popping yields ascending. Stable: names that are
    // not UTF-8 and read alike keep the listing's order, as a stable sort
    // of the whole manifest would.
    rest.sort_by(|a, b| b.key.cmp(&a.key));
    Ok(Frame { rel, abs, rest })
}

fn mode_bits(md: &fs::Metadata) -> u32 {
    md.permissions().mode() & 0o7777
}

/// The entry of one name: folders and links complete, files to hash.
fn entry(rel: String, abs: PathBuf, ft: FileType) -> Result<Found, DatasetError> {
    if ft.is_file() {
        return Ok(Found::File { rel, abs });
    }
    let md = fs::symlink_metadata(&abs)
        .map_err(|e| DatasetError::io("reading the metadata of", &abs, e))?;
    if ft.is_dir() {
        let entry = ManifestEntry {
            path: rel,
            kind: EntryKind::Dir,
            size: 0,
            mode: mode_bits(&md),
            sha256: String::new(),
            ..ManifestEntry::default()
        };
        Ok(Found::Ready { entry, abs })
    } else if ft.is_symlink() {
        let target = fs::read_link(&abs).map_err(|e| DatasetError::io("reading link", &abs, e))?;
        let bytes = target.as_os_str().as_bytes();
        let entry = ManifestEntry {
            path: rel,
            kind: EntryKind::Symlink,
            size: bytes.len() as u64,
            mode: mode_bits(&md),
            sha256: hex::encode(Sha256::digest(bytes)),
            ..ManifestEntry::default()
        };
        Ok(Found::Ready { entry, abs })
    } else {
        Err(DatasetError::UnsupportedFileType { path: abs })
    }
}

/// The file's mode as its `stat` gives it (the in-memory scan's source).
pub(crate) fn file_mode(md: &fs::Metadata) -> u32 {
    mode_bits(md)
}
