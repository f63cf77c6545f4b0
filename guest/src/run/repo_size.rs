//! A repository's size on disk when the plan has no `repo_size` command:
//! the space allocated to it (`st_blocks * 512`, as `du` counts), walking the
//! tree without following symlinks and counting hard-linked files once.

use std::collections::HashSet;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

pub fn allocated_bytes(root: &Path) -> io::Result<u64> {
    let mut seen = HashSet::new();
    let mut total = 0u64;
    let mut stack = vec![root.to_path_buf()];
    while let Some(path) = stack.pop() {
        let meta = std::fs::symlink_metadata(&path)?;
        if meta.nlink() > 1 && !meta.is_dir() && !seen.insert((meta.dev(), meta.ino())) {
            continue;
        }
        total += meta.blocks() * 512;
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path)? {
                stack.push(entry?.path());
            }
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_allocated_space_once_per_inode() {
        let dir = tempfile::tempdir().unwrap();
        let empty = allocated_bytes(dir.path()).unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        std::fs::write(dir.path().join("d/a"), vec![7u8; 1 << 20]).unwrap();
        let one = allocated_bytes(dir.path()).unwrap();
        assert!(one >= empty + (1 << 20), "{empty} -> {one}");
        assert!(one < empty + (1 << 20) + (256 << 10), "{empty} -> {one}");

        std::fs::hard_link(dir.path().join("d/a"), dir.path().join("b")).unwrap();
        std::os::unix::fs::symlink("/usr", dir.path().join("link")).unwrap();
        let linked = allocated_bytes(dir.path()).unwrap();
        // The hard link adds no data, the symlink is not followed into /usr.
        assert!(linked < one + (64 << 10), "{one} -> {linked}");
    }

    #[test]
    fn a_sparse_file_counts_what_is_allocated() {
        let dir = tempfile::tempdir().unwrap();
        let f = std::fs::File::create(dir.path().join("sparse")).unwrap();
        f.set_len(1 << 30).unwrap();
        assert!(allocated_bytes(dir.path()).unwrap() < 1 << 20);
    }

    #[test]
    fn a_missing_repository_is_an_error() {
        assert!(allocated_bytes(Path::new("/nonexistent/repo")).is_err());
    }
}
