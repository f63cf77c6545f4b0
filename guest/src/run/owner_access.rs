//! Giving a tree's folders back to their owner before removing it. A folder
//! without its owner's write permission (an archive's 0555 folder) cannot
//! be emptied, and one without read and search permission (0000) cannot
//! even be listed, except by root: as an ordinary user the run's work tree
//! would stay behind, and the user could not delete it either.
//!
//! Never follows a link: each folder is opened from its parent's
//! descriptor with `O_NOFOLLOW`, and its mode is changed through a
//! descriptor of the folder itself (`fchmod`, or for a folder that cannot
//! be opened for reading, the `/proc/self/fd` link of an `O_PATH`
//! descriptor, which names that very folder), never by a name a link could
//! have taken since.

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};
use rustix::io::Errno;
use std::ffi::CStr;
use std::io;
use std::path::Path;

/// What the owner needs of a folder to empty and remove it.
const OWNER_ACCESS: u32 = 0o700;

/// Adds the owner's read, write and search permission to `top`, if it is a
/// folder (not a link to one), and to every folder under it that lacks one
/// of them. Holds one descriptor per level of the tree.
pub fn restore_owner_access(top: &Path) -> io::Result<()> {
    let parent = match top.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let Some(name) = top.file_name() else {
        return Ok(());
    };
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let parent = rustix::fs::open(parent, flags, Mode::empty())?;
    let name = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(name))
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let Some(top) = open_for_owner(parent.as_fd(), &name)? else {
        return Ok(());
    };
    let mut open = vec![Dir::new(top)?];
    while let Some(dir) = open.last_mut() {
        let Some(entry) = dir.read() else {
            open.pop();
            continue;
        };
        let entry = entry?;
        let name = entry.file_name();
        if name == c"." || name == c".." {
            continue;
        }
        if !matches!(entry.file_type(), FileType::Directory | FileType::Unknown) {
            continue;
        }
        let name = name.to_owned();
        if let Some(folder) = open_for_owner(dir.fd()?, &name)? {
            open.push(Dir::new(folder)?);
        }
    }
    Ok(())
}

/// `name` in `parent`, opened for reading once its owner has access, if it
/// is a folder; `None` for anything else (a link is never followed).
fn open_for_owner(parent: BorrowedFd, name: &CStr) -> io::Result<Option<OwnedFd>> {
    let stat = match rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(Errno::NOENT) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    if FileType::from_raw_mode(stat.st_mode) != FileType::Directory {
        return Ok(None);
    }
    let mode = stat.st_mode & 0o7777;
    let read = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    if mode & OWNER_ACCESS != OWNER_ACCESS {
        let with_access = Mode::from_raw_mode(mode | OWNER_ACCESS);
        match rustix::fs::openat(parent, name, read, Mode::empty()) {
            Ok(folder) => rustix::fs::fchmod(&folder, with_access)?,
            Err(Errno::ACCESS) => {
                // Not readable: a handle on the folder itself, changed
                // through the link /proc keeps to it.
                let handle = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                let folder = rustix::fs::openat(parent, name, handle, Mode::empty())?;
                let by_fd = format!("/proc/self/fd/{}", rustix::fd::AsRawFd::as_raw_fd(&folder));
                rustix::fs::chmod(by_fd.as_str(), with_access)?;
            }
            Err(Errno::LOOP | Errno::NOTDIR | Errno::NOENT) => return Ok(None),
            Err(e) => return Err(e.into()),
        }
    }
    match rustix::fs::openat(parent, name, read, Mode::empty()) {
        Ok(folder) => Ok(Some(folder)),
        // Replaced by a link or a file since: not a folder to walk.
        Err(Errno::LOOP | Errno::NOTDIR | Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}
