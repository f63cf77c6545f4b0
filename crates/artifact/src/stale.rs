//! Temporary files and folders in the cache that a killed process left
//! behind, and sweeping them.
//!
//! A download, a copy or an extraction writes to a `.partial-*` file (apt to
//! a `.apt-*` folder) that is removed when dropped. SIGKILL, a crash or a
//! power cut skip the drop, and nothing else would ever remove the file: a
//! few interrupted multi-hundred-MB downloads fill the cache.
//!
//! Each temporary is therefore held under an advisory lock (`flock`, through
//! `std::fs::File::lock`) for its whole life. The kernel drops the lock when
//! the holder dies however it dies, so "nobody holds its lock" means
//! "nobody is writing it": such a temporary is stale and is removed before
//! the next one is made in that folder. The folder itself is locked while a
//! temporary is created and locked, and while it is swept, so a sweep never
//! sees a new temporary in the instant before its lock is taken.

use std::fmt;
use std::fs::{File, TryLockError};
use std::io;
use std::path::{Path, PathBuf};
use tempfile::{NamedTempFile, TempDir};

/// What one or more sweeps removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Swept {
    pub entries: usize,
    pub bytes: u64,
}

impl Swept {
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    pub(crate) fn add(&mut self, other: Swept) {
        self.entries += other.entries;
        self.bytes += other.bytes;
    }
}

impl fmt::Display for Swept {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "removed {} stale partial download(s), {:.1} MB, that interrupted runs left in the cache",
            self.entries,
            self.bytes as f64 / 1e6
        )
    }
}

/// A temporary folder, locked like a partial file (for apt's downloads).
pub(crate) struct LockedTempDir {
    // Dropped first: the folder is removed while its lock is still held.
    dir: TempDir,
    _lock: File,
}

impl LockedTempDir {
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// A new, locked temporary file named `<prefix>*` in `dir`, after removing
/// the stale ones with that prefix there.
pub(crate) fn temp_file_in(dir: &Path, prefix: &str) -> io::Result<(NamedTempFile, Swept)> {
    let _folder = lock_folder(dir)?;
    let swept = sweep_locked_folder(dir, prefix);
    let temp = tempfile::Builder::new().prefix(prefix).tempfile_in(dir)?;
    // Nobody else can hold it: it was created a moment ago under the
    // folder's lock. A failure here is an I/O error worth reporting.
    temp.as_file().lock()?;
    Ok((temp, swept))
}

/// A new, locked temporary folder named `<prefix>*` in `parent`, after
/// removing the stale ones with that prefix there.
pub(crate) fn temp_dir_in(parent: &Path, prefix: &str) -> io::Result<(LockedTempDir, Swept)> {
    let _folder = lock_folder(parent)?;
    let swept = sweep_locked_folder(parent, prefix);
    let dir = tempfile::Builder::new().prefix(prefix).tempdir_in(parent)?;
    let lock = File::open(dir.path())?;
    lock.lock()?;
    Ok((LockedTempDir { dir, _lock: lock }, swept))
}

/// Removes the stale `<prefix>*` entries of `dir` (a missing folder has none).
pub(crate) fn sweep(dir: &Path, prefix: &str) -> Swept {
    match lock_folder(dir) {
        Ok(_folder) => sweep_locked_folder(dir, prefix),
        Err(_) => Swept::default(),
    }
}

/// Sweeps every artifact folder of the cache (`<root>/<sha256>/` and its
/// `extracted/`) of partial files, and `root` of apt's temporary folders:
/// a partial of an artifact the lab no longer names would otherwise stay.
pub(crate) fn sweep_cache(root: &Path, partial_prefix: &str, apt_prefix: &str) -> Swept {
    let mut swept = sweep(root, apt_prefix);
    let Ok(entries) = std::fs::read_dir(root) else {
        return swept;
    };
    for entry in entries.filter_map(Result::ok) {
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if hidden || !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let folder = entry.path();
        swept.add(sweep(&folder, partial_prefix));
        swept.add(sweep(&folder.join("extracted"), partial_prefix));
    }
    swept
}

/// The folder's lock, held while its temporaries are swept or one is made.
/// Short-lived, so waiting for it is fine.
fn lock_folder(dir: &Path) -> io::Result<File> {
    let folder = File::open(dir)?;
    folder.lock()?;
    Ok(folder)
}

/// With the folder locked: removes each `<prefix>*` entry nobody holds.
/// Errors are skipped (a sweep is housekeeping; it must never stop a fetch).
fn sweep_locked_folder(dir: &Path, prefix: &str) -> Swept {
    let mut swept = Swept::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return swept;
    };
    for entry in entries.filter_map(Result::ok) {
        if !entry.file_name().to_string_lossy().starts_with(prefix) {
            continue;
        }
        let path = entry.path();
        if let Some(bytes) = remove_if_unheld(&path) {
            swept.entries += 1;
            swept.bytes += bytes;
        }
    }
    swept
}

/// Removes `path` (a file or a folder) if its lock is free; its size then.
fn remove_if_unheld(path: &Path) -> Option<u64> {
    let probe = File::open(path).ok()?;
    match probe.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return None,
        Err(TryLockError::Error(_)) => return None,
    }
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.is_dir() {
        let bytes = size_of_tree(path);
        std::fs::remove_dir_all(path).ok()?;
        Some(bytes)
    } else {
        std::fs::remove_file(path).ok()?;
        Some(meta.len())
    }
}

fn size_of_tree(dir: &Path) -> u64 {
    let mut total = 0;
    let mut pending: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.filter_map(Result::ok) {
            match e.metadata() {
                Ok(m) if m.is_dir() => pending.push(e.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_partial_stays_and_an_unheld_one_goes() {
        let dir = tempfile::tempdir().unwrap();
        let (live, _) = temp_file_in(dir.path(), ".partial-").unwrap();
        std::fs::write(live.path(), b"in progress").unwrap();
        // Left by a killed process: the file is there, nobody holds it.
        let dead = dir.path().join(".partial-dead");
        std::fs::write(&dead, vec![0u8; 1000]).unwrap();
        let other = dir.path().join("tool.bin");
        std::fs::write(&other, b"a real file").unwrap();

        let swept = sweep(dir.path(), ".partial-");
        assert_eq!(
            swept,
            Swept {
                entries: 1,
                bytes: 1000
            }
        );
        assert!(!dead.exists());
        assert!(live.path().exists(), "a partial being written is kept");
        assert!(other.exists(), "only partials are swept");
    }

    #[test]
    fn making_a_partial_sweeps_the_stale_ones_first() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".partial-old"), vec![1u8; 10]).unwrap();
        let (_temp, swept) = temp_file_in(dir.path(), ".partial-").unwrap();
        assert_eq!(swept.entries, 1);
        assert!(swept.to_string().contains("removed 1 stale"), "{swept}");
    }

    #[test]
    fn a_stale_apt_folder_goes_with_its_contents() {
        let root = tempfile::tempdir().unwrap();
        let (live, _) = temp_dir_in(root.path(), ".apt-").unwrap();
        let dead = root.path().join(".apt-dead");
        std::fs::create_dir_all(dead.join("partial")).unwrap();
        std::fs::write(dead.join("partial/x.deb"), vec![0u8; 500]).unwrap();
        let swept = sweep_cache(root.path(), ".partial-", ".apt-");
        assert_eq!(
            swept,
            Swept {
                entries: 1,
                bytes: 500
            }
        );
        assert!(!dead.exists());
        assert!(live.path().exists());
    }
}
