//! A first look at a folder of the user's, before anything is hashed or
//! copied: its size and file count (for `check` and the push's estimate),
//! and every reason it cannot be a dataset, each naming the first entry it
//! concerns and what to do.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// What a folder holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Survey {
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    /// Bytes of the regular files (apparent size).
    pub bytes: u64,
}

/// Walks `dir` without following links. Refuses a folder that is missing,
/// unreadable (naming the first entry that is), empty, holds special files
/// (devices, sockets, FIFOs: a backup tool handles them its own way, which
/// is no measure of backing up data) or names that are not UTF-8 (the
/// manifests are UTF-8).
pub fn survey(dir: &Path) -> Result<Survey, String> {
    let meta = std::fs::metadata(dir).map_err(|e| {
        format!(
            "the dataset folder {} cannot be read ({e}): check the path in `dataset.path` (relative paths are read from the lab file's folder)",
            dir.display()
        )
    })?;
    if !meta.is_dir() {
        return Err(format!(
            "the dataset path {} is not a folder: name the folder to back up",
            dir.display()
        ));
    }
    let mut s = Survey::default();
    let mut special: Vec<PathBuf> = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| unreadable(&d, &e))?;
        for entry in entries {
            let entry = entry.map_err(|e| unreadable(&d, &e))?;
            let path = entry.path();
            if entry.file_name().to_str().is_none() {
                return Err(format!(
                    "{} has a name that is not UTF-8: labrun's manifests name every file in UTF-8; rename it (e.g. `convmv`) or leave it out of the folder",
                    path.display()
                ));
            }
            let meta = entry.metadata().map_err(|e| unreadable(&path, &e))?;
            let ft = meta.file_type();
            if ft.is_dir() {
                s.dirs += 1;
                stack.push(path);
            } else if ft.is_file() {
                // Read access now, not an hour into the run.
                std::fs::File::open(&path).map_err(|e| unreadable(&path, &e))?;
                s.files += 1;
                s.bytes += meta.len();
            } else if ft.is_symlink() {
                s.symlinks += 1;
            } else if ft.is_block_device() || ft.is_char_device() || ft.is_fifo() || ft.is_socket()
            {
                special.push(path);
            }
        }
    }
    if let Some(first) = special.first() {
        return Err(format!(
            "the folder holds {} special file(s) (devices, sockets or FIFOs), first {}: they are refused, not skipped, so that every tool backs up the same tree; point `dataset.path` at a folder without them",
            special.len(),
            first.display()
        ));
    }
    if s.files == 0 {
        return Err(format!(
            "the folder {} holds no file: there is nothing to back up",
            dir.display()
        ));
    }
    Ok(s)
}

fn unreadable(path: &Path, e: &std::io::Error) -> String {
    format!(
        "cannot read {} ({e}): every file of the dataset must be readable by the user running labrun; fix its permissions or leave it out of the folder",
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_files_folders_links_and_bytes() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("a"), b"hello").unwrap();
        std::fs::write(d.path().join("sub/b c"), b"xyz").unwrap();
        std::os::unix::fs::symlink("a", d.path().join("l")).unwrap();
        let s = survey(d.path()).unwrap();
        assert_eq!(
            s,
            Survey {
                files: 2,
                dirs: 1,
                symlinks: 1,
                bytes: 8
            }
        );
    }

    #[test]
    fn refuses_what_cannot_be_a_dataset_naming_it() {
        let d = tempfile::tempdir().unwrap();
        assert!(
            survey(&d.path().join("nope"))
                .unwrap_err()
                .contains("cannot be read")
        );
        assert!(survey(d.path()).unwrap_err().contains("holds no file"));
        std::fs::write(d.path().join("f"), b"1").unwrap();
        let fifo = d.path().join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let e = survey(d.path()).unwrap_err();
        assert!(e.contains("special file") && e.contains("pipe"), "{e}");
        std::fs::remove_file(&fifo).unwrap();
        use std::os::unix::ffi::OsStrExt;
        let bad = d.path().join(std::ffi::OsStr::from_bytes(b"bad\xff"));
        std::fs::write(&bad, b"1").unwrap();
        assert!(survey(d.path()).unwrap_err().contains("not UTF-8"));
        std::fs::remove_file(&bad).unwrap();
    }
}
