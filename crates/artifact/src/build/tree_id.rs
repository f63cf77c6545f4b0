//! The git tree id of a folder, computed natively: the id `git add -A -f &&
//! git write-tree` would print for it in a fresh repository, without git,
//! an index, attributes or ignore files.
//!
//! Why natively rather than with git itself: the id is the source's pin, so
//! it must depend on the bytes alone. `git add` consults `.gitignore` files
//! (a tracked file that matches one would be left out without `-f`),
//! `.gitattributes` (`text`/`eol` rewrite content on the way in) and the
//! host's config (`core.autocrlf`, `core.fileMode`, `core.symlinks`); each
//! would have to be switched off, and a new git setting could change the
//! answer. Git's object format is small and stable, and the tests compare
//! this module with `git write-tree` on a tree with executables, symlinks,
//! nesting and the names whose order is subtle.
//!
//! The format (git's `Documentation/technical` and `tree.c`):
//! - a file is a blob: SHA-1 of `blob <len>\0<bytes>`; its mode is `100755`
//!   when the owner may execute it, `100644` otherwise (git keeps no other
//!   permission bits);
//! - a symlink is a blob of its target's bytes, mode `120000`;
//! - a folder is a tree: SHA-1 of `tree <len>\0` and its entries, each
//!   `<mode> <name>\0<20-byte id>` with mode `40000`, sorted by name
//!   where a folder's name compares as if it ended in `/` (so `a.b` comes
//!   before the folder `a`, whose key is `a/`, and `.` < `/` < `0`);
//! - an empty folder has no entry (git stores no empty trees below the
//!   root), and a `.git` entry is never part of a tree.

use sha1::{Digest, Sha1};
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Git's id of an object: 20 bytes, written as 40 lowercase hex digits.
type ObjectId = [u8; 20];

/// The git tree id of the folder `root` (40 lowercase hex digits). Devices,
/// FIFOs and sockets have no git form: they are an error naming the path.
pub fn tree_id(root: &Path) -> io::Result<String> {
    let id = tree(root)?.unwrap_or_else(empty_tree);
    Ok(hex::encode(id))
}

/// The id of the tree of `dir`, or `None` when it holds no file at any depth.
fn tree(dir: &Path) -> io::Result<Option<ObjectId>> {
    let mut entries: Vec<(Vec<u8>, &'static str, ObjectId)> = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().as_bytes().to_vec();
        if name == b".git" {
            continue;
        }
        let path = entry.path();
        let meta = std::fs::symlink_metadata(&path)?;
        let kind = meta.file_type();
        if kind.is_symlink() {
            let target = std::fs::read_link(&path)?;
            entries.push((name, "120000", blob(target.as_os_str().as_bytes())));
        } else if kind.is_dir() {
            if let Some(id) = tree(&path)? {
                entries.push((name, "40000", id));
            }
        } else if kind.is_file() {
            let executable = meta.permissions().mode() & 0o100 != 0;
            let mode = if executable { "100755" } else { "100644" };
            entries.push((name, mode, file_blob(&path, meta.len())?));
        } else {
            return Err(io::Error::other(format!(
                "{} is not a file, folder or symlink: a git tree cannot hold it",
                path.display()
            )));
        }
    }
    if entries.is_empty() {
        return Ok(None);
    }
    entries.sort_by_key(|(name, mode, _)| sort_key(name, mode));
    let mut body = Vec::new();
    for (name, mode, id) in &entries {
        body.extend_from_slice(mode.as_bytes());
        body.push(b' ');
        body.extend_from_slice(name);
        body.push(0);
        body.extend_from_slice(id);
    }
    Ok(Some(object("tree", &[&body])))
}

/// Git's order: names compared bytewise, a folder's as if it ended in `/`.
fn sort_key(name: &[u8], mode: &str) -> Vec<u8> {
    let mut key = name.to_vec();
    if mode == "40000" {
        key.push(b'/');
    }
    key
}

fn blob(bytes: &[u8]) -> ObjectId {
    object("blob", &[bytes])
}

/// A file's blob, streamed (source files can be large); the length in the
/// header is the one read, so a file that changes meanwhile is an error.
fn file_blob(path: &Path, len: u64) -> io::Result<ObjectId> {
    let mut h = Sha1::new();
    h.update(format!("blob {len}\0").as_bytes());
    let mut file = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 1 << 16];
    let mut read = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        read += n as u64;
        h.update(&buf[..n]);
    }
    if read != len {
        return Err(io::Error::other(format!(
            "{} changed while it was read",
            path.display()
        )));
    }
    Ok(h.finalize().into())
}

fn object(kind: &str, parts: &[&[u8]]) -> ObjectId {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    let mut h = Sha1::new();
    h.update(format!("{kind} {len}\0").as_bytes());
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

/// The tree of an empty folder (git's well-known 4b825dc...).
fn empty_tree() -> ObjectId {
    object("tree", &[])
}

/// Forty lowercase hex digits: the shape of a tree or commit id.
pub(crate) fn is_object_id(s: &str) -> bool {
    s.len() == 40
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_empty_tree_is_gits() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            tree_id(dir.path()).unwrap(),
            "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
        );
    }

    #[test]
    fn a_folder_sorts_after_a_name_that_extends_it_with_a_dot() {
        assert!(sort_key(b"a.b", "100644") < sort_key(b"a", "40000"));
        assert!(sort_key(b"a", "100644") < sort_key(b"a.b", "100644"));
        assert!(sort_key(b"a", "40000") < sort_key(b"a0", "100644"));
    }
}
