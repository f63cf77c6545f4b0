//! Moving a work tree from one commit to another, as `git checkout` does:
//! files no longer in the commit are removed, then new and changed files are
//! written (a changed file is unlinked first, so it gets a new inode, as git
//! gives it), modes set to 0644 or 0755, and directories left empty by the
//! removals are removed. Files that did not change are not touched.

use super::{History, HistoryError};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// What a work tree holds, by path: (revision, executable). Empty for an
/// empty (or missing) folder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeIndex {
    entries: BTreeMap<String, (u64, bool)>,
}

impl TreeIndex {
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Files written and removed by one [`checkout`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckoutStats {
    pub written: u64,
    pub removed: u64,
    pub bytes_written: u64,
}

/// Moves the tree under `dir`, which holds `on_disk`, to the history's
/// current commit. Returns what the tree holds afterwards.
pub fn checkout(
    dir: &Path,
    on_disk: &TreeIndex,
    history: &History,
) -> Result<(TreeIndex, CheckoutStats), HistoryError> {
    fs::create_dir_all(dir).map_err(|e| HistoryError::io("creating", dir, e))?;
    let wanted = history.files();
    let mut stats = CheckoutStats::default();
    let mut emptied = BTreeSet::new();
    for path in on_disk.entries.keys() {
        if !wanted.contains_key(path) {
            let abs = dir.join(path);
            fs::remove_file(&abs).map_err(|e| HistoryError::io("removing", &abs, e))?;
            stats.removed += 1;
            let mut parent = Path::new(path).parent();
            while let Some(p) = parent.filter(|p| !p.as_os_str().is_empty()) {
                emptied.insert(p.to_path_buf());
                parent = p.parent();
            }
        }
    }
    let mut now = TreeIndex::default();
    for (path, file) in wanted {
        let abs = dir.join(path);
        let mode = if file.executable { 0o755 } else { 0o644 };
        match on_disk.entries.get(path) {
            Some(&(revision, executable)) if revision == file.revision => {
                if executable != file.executable {
                    fs::set_permissions(&abs, fs::Permissions::from_mode(mode))
                        .map_err(|e| HistoryError::io("changing the mode of", &abs, e))?;
                }
            }
            old => {
                if old.is_some() {
                    fs::remove_file(&abs).map_err(|e| HistoryError::io("replacing", &abs, e))?;
                } else if let Some(parent) = abs.parent() {
                    fs::create_dir_all(parent)
                        .map_err(|e| HistoryError::io("creating", parent, e))?;
                }
                let content = file.content();
                write_at_commit_time(&abs, &content, history.index())
                    .map_err(|e| HistoryError::io("writing", &abs, e))?;
                fs::set_permissions(&abs, fs::Permissions::from_mode(mode))
                    .map_err(|e| HistoryError::io("changing the mode of", &abs, e))?;
                stats.written += 1;
                stats.bytes_written += content.len() as u64;
            }
        }
        now.entries
            .insert(path.clone(), (file.revision, file.executable));
    }
    // Deepest first: "a/b/c" sorts after "a/b", so reverse order empties
    // children before their parents.
    for rel in emptied.iter().rev() {
        let abs = dir.join(rel);
        match fs::remove_dir(&abs) {
            Ok(()) => {}
            Err(e) if matches!(e.kind(), ErrorKind::DirectoryNotEmpty | ErrorKind::NotFound) => {}
            Err(e) => return Err(HistoryError::io("removing the emptied folder", &abs, e)),
        }
    }
    Ok((now, stats))
}

/// Writes a file with the modification time of commit `index`: a fixed
/// epoch plus one hour per commit. Tools that notice changes by mtime at
/// one-second resolution (duplicity) would otherwise miss a same-size edit
/// made within the second of the previous commit's; fixed times also keep a
/// run's trees reproducible.
fn write_at_commit_time(path: &Path, content: &[u8], index: u32) -> std::io::Result<()> {
    use std::io::Write;
    const EPOCH: u64 = 1_600_000_000;
    let mut f = fs::File::create(path)?;
    f.write_all(content)?;
    f.set_modified(
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(EPOCH + u64::from(index) * 3600),
    )
}

#[cfg(test)]
mod tests {
    use super::super::tests::params;
    use super::*;

    fn listing(dir: &Path) -> Vec<String> {
        let m = crate::scan(dir).unwrap();
        m.entries
            .iter()
            .map(|e| format!("{} {:?} {}", e.path, e.kind, e.sha256))
            .collect()
    }

    #[test]
    fn moving_forward_equals_writing_each_commit_afresh() {
        let tmp = tempfile::tempdir().unwrap();
        let moved = tmp.path().join("moved");
        let mut h = History::new(&params(8, 60)).unwrap();
        let mut index = TreeIndex::default();
        loop {
            let (next, stats) = checkout(&moved, &index, &h).unwrap();
            assert_eq!(next.len(), h.files().len());
            if h.index() > 1 {
                assert!(stats.written > 0 && stats.written < 60, "{stats:?}");
            }
            index = next;
            let fresh = tmp.path().join(format!("fresh-{}", h.index()));
            checkout(&fresh, &TreeIndex::default(), &h).unwrap();
            assert_eq!(listing(&moved), listing(&fresh), "commit {}", h.index());
            if !h.advance() {
                break;
            }
        }
    }

    #[test]
    fn every_file_a_commit_writes_carries_that_commits_time() {
        use std::os::unix::fs::MetadataExt;
        let tmp = tempfile::tempdir().unwrap();
        let mut h = History::new(&params(3, 40)).unwrap();
        let (index, _) = checkout(tmp.path(), &TreeIndex::default(), &h).unwrap();
        let first: Vec<(String, i64)> = mtimes(tmp.path());
        assert!(
            first
                .iter()
                .all(|(_, t)| *t == 1_600_000_000 + 3600 * i64::from(h.index()))
        );
        assert!(h.advance());
        checkout(tmp.path(), &index, &h).unwrap();
        let second = mtimes(tmp.path());
        let rewritten: Vec<_> = second
            .iter()
            .filter(|(p, t)| first.iter().any(|(q, u)| q == p && u != t))
            .collect();
        assert!(!rewritten.is_empty(), "the second commit edits some file");
        for (_, t) in rewritten {
            assert_eq!(*t, 1_600_000_000 + 3600 * i64::from(h.index()));
        }

        fn mtimes(dir: &Path) -> Vec<(String, i64)> {
            crate::scan(dir)
                .unwrap()
                .entries
                .iter()
                .filter(|e| e.kind == labrun_evidence::EntryKind::File)
                .map(|e| {
                    let m = std::fs::metadata(dir.join(&e.path)).unwrap();
                    (e.path.clone(), m.mtime())
                })
                .collect()
        }
    }
}
