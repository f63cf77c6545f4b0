//! Removing finished trees (a tool cycle's repository and restore, the whole
//! work tree at the end) on several threads. Deleting is mostly waiting: for
//! inodes and directories to be read back after a cache drop, and for the
//! file system to free blocks; a few deletions in flight overlap that
//! waiting, where `remove_dir_all` does one entry at a time. Folders left
//! without their owner's access are given it back first
//! ([`restore_owner_access`]).

use crate::run::owner_access::restore_owner_access;
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
///
/// A removal refused for permission (as an ordinary user, in a folder an
/// archive or a tool left read-only or closed) gives the owner access to
/// every folder of the paths, never following a link, and removes again:
/// root, whom permissions never stop, pays nothing for it.
pub fn remove_trees(paths: &[PathBuf]) -> Vec<(PathBuf, io::Error)> {
    let failed = remove_once(paths);
    if !failed
        .iter()
        .any(|(_, e)| e.kind() == io::ErrorKind::PermissionDenied)
    {
        return failed;
    }
    let mut not_given = Vec::new();
    for path in paths {
        if let Err(e) = restore_owner_access(path)
            && e.kind() != io::ErrorKind::NotFound
        {
            not_given.push((path.clone(), e));
        }
    }
    let mut failed = remove_once(paths);
    // Why access could not be given back comes first: it is why the
    // removal failed again.
    not_given.append(&mut failed);
    not_given
}

/// One pass of [`remove_trees`], with the permissions as they are.
fn remove_once(paths: &[PathBuf]) -> Vec<(PathBuf, io::Error)> {
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

    /// Where the test below tells its helper, run as `nobody`, what to remove.
    const NOBODY_REMOVES: &str = "LABRUN_TEST_NOBODY_REMOVES";
    const NOBODY: u32 = 65534;

    /// The helper of the test below: as `nobody`, removes the tree it is
    /// told of. Without that, it has nothing to do.
    #[test]
    #[ignore = "run as nobody by an_ordinary_user_removes_read_only_and_closed_folders"]
    fn nobody_removes_the_tree_it_is_told_of() {
        let Some(tree) = std::env::var_os(NOBODY_REMOVES) else {
            return;
        };
        let failed = remove_trees(&[PathBuf::from(tree)]);
        assert!(failed.is_empty(), "{failed:?}");
    }

    #[test]
    #[ignore = "needs root (to give the tree to nobody and run as nobody): `make test` runs it"]
    fn an_ordinary_user_removes_read_only_and_closed_folders() {
        use std::os::unix::fs::{PermissionsExt, lchown};
        use std::os::unix::process::CommandExt;
        let dir = tempfile::tempdir().unwrap();
        let mode = |p: &Path, m: u32| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
        };
        // Outside the tree: a read-only folder a link in the tree points
        // to, which must stay as it is.
        let keep = dir.path().join("keep");
        std::fs::create_dir(&keep).unwrap();
        std::fs::write(keep.join("f"), "k").unwrap();
        // What an archive with 0555 and 0000 folders unpacks to, a few
        // levels down, and a 0555 top.
        let tree = dir.path().join("work");
        let read_only = tree.join("a/read-only");
        let closed = tree.join("a/closed");
        std::fs::create_dir_all(read_only.join("inner")).unwrap();
        std::fs::create_dir_all(closed.join("inner")).unwrap();
        std::fs::write(read_only.join("f"), "r").unwrap();
        std::fs::write(read_only.join("inner/g"), "r").unwrap();
        std::fs::write(closed.join("inner/g"), "c").unwrap();
        std::os::unix::fs::symlink(&keep, tree.join("a/link-to-keep")).unwrap();
        let mut all = vec![dir.path().to_path_buf()];
        for entry in std::fs::read_dir(&keep).unwrap() {
            all.push(entry.unwrap().path());
        }
        all.push(keep.clone());
        let mut stack = vec![tree.clone()];
        while let Some(p) = stack.pop() {
            if std::fs::symlink_metadata(&p).unwrap().is_dir() {
                stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            }
            all.push(p);
        }
        for p in &all {
            lchown(p, Some(NOBODY), Some(NOBODY)).unwrap();
        }
        for p in [&read_only.join("inner"), &closed.join("inner"), &read_only] {
            mode(p, 0o555);
        }
        mode(&closed, 0o000);
        mode(&keep, 0o555);
        mode(&tree, 0o555);
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "run::remove::tests::nobody_removes_the_tree_it_is_told_of",
                "--ignored",
                "--nocapture",
            ])
            .env(NOBODY_REMOVES, &tree)
            .uid(NOBODY)
            .gid(NOBODY)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(said.contains("1 passed"), "{said}");
        assert!(!tree.exists(), "the tree is left: {said}");
        // The link was removed, not followed.
        assert!(keep.join("f").is_file());
        let keep_mode = std::fs::metadata(&keep).unwrap().permissions().mode();
        assert_eq!(keep_mode & 0o777, 0o555);
    }
}
