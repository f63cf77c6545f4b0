//! Removing finished trees (a tool cycle's repository and restore, the whole
//! work tree at the end) on several threads. Deleting is mostly waiting: for
//! inodes and directories to be read back after a cache drop, and for the
//! file system to free blocks; a few deletions in flight overlap that
//! waiting, where `remove_dir_all` does one entry at a time.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Threads deleting at once.
const THREADS: usize = 8;
/// Enough pieces to keep every thread busy while one deletes a big one.
const PIECES: usize = 64;
/// How deep folders are split to get there (the dataset's small files are
/// three levels down).
const MAX_SPLIT_DEPTH: usize = 4;

/// Removes every path in `paths` (missing ones are fine); returns the ones
/// that could not be removed, with why.
pub fn remove_trees(paths: &[PathBuf]) -> Vec<(PathBuf, io::Error)> {
    let mut failed = Vec::new();
    // Folders split into pieces (their entries, and the entries of those,
    // until there are enough), deleted from the deepest up once their
    // pieces are gone.
    let mut split: Vec<PathBuf> = Vec::new();
    let mut pieces: Vec<PathBuf> = Vec::new();
    for path in paths {
        match std::fs::symlink_metadata(path) {
            Ok(_) => pieces.push(path.clone()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => failed.push((path.clone(), e)),
        }
    }
    for _ in 0..MAX_SPLIT_DEPTH {
        if pieces.len() >= PIECES {
            break;
        }
        let mut next = Vec::new();
        for piece in pieces {
            match list_dir(&piece) {
                Some(children) => {
                    next.extend(children);
                    split.push(piece);
                }
                None => next.push(piece),
            }
        }
        pieces = next;
    }
    let queue = Mutex::new(pieces);
    let errors = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                loop {
                    // A poisoned lock only means another deleting thread panicked.
                    let next = queue.lock().unwrap_or_else(|e| e.into_inner()).pop();
                    let Some(path) = next else { break };
                    if let Err(e) = remove_one(&path) {
                        errors
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push((path, e));
                    }
                }
            });
        }
    });
    failed.extend(errors.into_inner().unwrap_or_else(|e| e.into_inner()));
    // Deepest first: a folder split later was listed later.
    for dir in split.iter().rev() {
        if let Err(e) = std::fs::remove_dir(dir)
            && e.kind() != io::ErrorKind::NotFound
        {
            failed.push((dir.clone(), e));
        }
    }
    failed
}

/// The entries of `path` if it is a folder (not a link to one) that can be read.
fn list_dir(path: &Path) -> Option<Vec<PathBuf>> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_dir() {
        return None;
    }
    let entries = std::fs::read_dir(path).ok()?;
    entries.map(|e| e.ok().map(|e| e.path())).collect()
}

fn remove_one(path: &Path) -> io::Result<()> {
    let result = match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) => Err(e),
    };
    match result {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_nested_trees_files_and_links_but_not_what_links_point_to() {
        let dir = tempfile::tempdir().unwrap();
        let keep = dir.path().join("keep");
        std::fs::create_dir(&keep).unwrap();
        std::fs::write(keep.join("f"), "x").unwrap();
        let big = dir.path().join("big");
        for i in 0..30 {
            for j in 0..5 {
                let d = big.join(format!("d{i}/e{j}"));
                std::fs::create_dir_all(&d).unwrap();
                std::fs::write(d.join("f"), "y").unwrap();
            }
        }
        std::os::unix::fs::symlink(&keep, big.join("link-to-keep")).unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "z").unwrap();
        let failed = remove_trees(&[big.clone(), file.clone(), dir.path().join("missing")]);
        assert!(failed.is_empty(), "{failed:?}");
        assert!(!big.exists() && !file.exists());
        assert!(keep.join("f").is_file());
    }
}
