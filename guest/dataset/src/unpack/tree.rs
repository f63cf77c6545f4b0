//! The tree writer: every entry lands under the destination's folder, and
//! nothing ever follows a symbolic link on the way.
//!
//! A folder is reached from the root's descriptor by a lookup that follows
//! no link: the kernel's whole-path `openat2(RESOLVE_NO_SYMLINKS)`, one call
//! however deep the folder is, or (without it, or to say what is in the
//! way) one component at a time with `openat(O_DIRECTORY | O_NOFOLLOW)`.
//! So a link an earlier entry planted (`a -> /etc`, then `a/passwd`) stops
//! the walk instead of leading out; files are created `O_CREAT | O_EXCL | O_NOFOLLOW` in the folder's
//! descriptor; links with `symlinkat` / `linkat` (which follows nothing).
//! Folders are never removed, so the descriptor of the previous entry's
//! folder stays inside the tree and is reused: archives list a folder's
//! entries together, so most entries cost no walk.
//!
//! Folders get their mode and mtime at the end (entries written into a
//! folder change its mtime, and a read-only folder would refuse them).

use super::Fault;
use super::budget::Budget;
use super::guard::{self, EntryPath};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags, Timespec, Timestamps};
use rustix::io::Errno;
use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

/// What a written entry keeps of its metadata.
#[derive(Debug, Clone, Copy)]
pub(super) struct Meta {
    /// Permission bits only: setuid, setgid and sticky are dropped.
    pub mode: u32,
    /// Seconds since the epoch, when the archive has one.
    pub mtime: Option<i64>,
}

/// The kept permission bits.
const PERMISSIONS: u32 = 0o777;
/// Mode of a folder an entry's path implies but no entry lists.
const IMPLIED_DIR_MODE: u32 = 0o755;
/// One write per this many bytes: large enough that a big file costs few
/// system calls, small enough to stay in cache.
const COPY_BUFFER: usize = 1 << 20;

pub(super) struct Tree {
    root: OwnedFd,
    /// The previous entry's folder (relative, "" for the root) and its fd.
    current: (String, OwnedFd),
    /// Whether the kernel resolves a whole path without following links
    /// (`openat2`); false once it said it cannot.
    whole_path_opens: bool,
    /// Listed folders' metadata, applied deepest first by [`Tree::finish`].
    dir_meta: Vec<(String, Meta)>,
    root_meta: Option<Meta>,
    pub counts: super::Unpacked,
    pub budget: Budget,
    buffer: Vec<u8>,
    /// System calls that opened or made a folder on the way to an entry's
    /// folder: what a test of the walk's cost counts.
    #[cfg(test)]
    folder_calls: u64,
}

impl Tree {
    /// Opens `dest` (which the caller made, empty) as the tree's root.
    pub fn open(dest: &Path, budget: Budget) -> Result<Tree, Fault> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let root = rustix::fs::open(dest, flags, Mode::empty())
            .map_err(|e| Fault::io("opening the destination folder", e))?;
        let current =
            rustix::io::dup(&root).map_err(|e| Fault::io("opening the destination folder", e))?;
        Ok(Tree {
            root,
            current: (String::new(), current),
            whole_path_opens: true,
            dir_meta: Vec::new(),
            root_meta: None,
            counts: super::Unpacked::default(),
            budget,
            buffer: vec![0; COPY_BUFFER],
            #[cfg(test)]
            folder_calls: 0,
        })
    }

    /// A regular file of `size` bytes (as declared) read from `data`.
    pub fn file(
        &mut self,
        path: &EntryPath,
        meta: Meta,
        size: u64,
        data: &mut dyn Read,
    ) -> Result<(), Fault> {
        self.budget.add_bytes(size)?;
        let (dir, name) = split_entry(path)?;
        self.enter(dir, true)?;
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let create =
            |at: BorrowedFd| rustix::fs::openat(at, name, flags, Mode::from_raw_mode(0o600));
        let fd = match create(self.current.1.as_fd()) {
            Err(Errno::EXIST) => {
                self.replace(name)?;
                create(self.current.1.as_fd())
            }
            other => other,
        }
        .map_err(|e| Fault::io("creating the file", e))?;
        let mut file = File::from(fd);
        let written = copy_exactly(data, &mut file, size, &mut self.buffer)?;
        if written < size {
            return Err(Fault::Damaged(format!(
                "its data ends after {written} of the {size} bytes its header declares"
            )));
        }
        let fd = file.as_fd();
        rustix::fs::fchmod(fd, mode(meta.mode)).map_err(|e| Fault::io("setting the mode", e))?;
        if let Some(t) = meta.mtime {
            rustix::fs::futimens(fd, &times(t)).map_err(|e| Fault::io("setting the mtime", e))?;
        }
        self.counts.files += 1;
        self.counts.bytes += size;
        Ok(())
    }

    /// A folder (the root itself for `.`).
    pub fn dir(&mut self, path: &EntryPath, meta: Meta) -> Result<(), Fault> {
        if path.is_root() {
            self.root_meta = Some(meta);
            return Ok(());
        }
        let (dir, name) = path.split();
        self.enter(dir, true)?;
        match rustix::fs::mkdirat(&self.current.1, name, mode(IMPLIED_DIR_MODE)) {
            Ok(()) => self.counts.dirs += 1,
            Err(Errno::EXIST) => match self.kind_of(name)? {
                FileType::Directory => {}
                FileType::Symlink => {
                    return Err(Fault::Unsafe(
                        "is a folder where an earlier entry made a symbolic link: writing \
                         into it would follow the link"
                            .into(),
                    ));
                }
                _ => {
                    return Err(Fault::Damaged(
                        "is a folder where an earlier entry made a file".into(),
                    ));
                }
            },
            Err(e) => return Err(Fault::io("creating the folder", e)),
        }
        self.dir_meta.push((path.as_str().to_string(), meta));
        Ok(())
    }

    /// A symbolic link to `target` (checked by the caller against the rules).
    pub fn symlink(&mut self, path: &EntryPath, target: &str, meta: Meta) -> Result<(), Fault> {
        let (dir, name) = split_entry(path)?;
        self.enter(dir, true)?;
        let make = |at: BorrowedFd| rustix::fs::symlinkat(target, at, name);
        match make(self.current.1.as_fd()) {
            Err(Errno::EXIST) => {
                self.replace(name)?;
                make(self.current.1.as_fd())
            }
            other => other,
        }
        .map_err(|e| Fault::io("creating the symbolic link", e))?;
        if let Some(t) = meta.mtime {
            rustix::fs::utimensat(&self.current.1, name, &times(t), AtFlags::SYMLINK_NOFOLLOW)
                .map_err(|e| Fault::io("setting the link's mtime", e))?;
        }
        self.counts.symlinks += 1;
        Ok(())
    }

    /// A hard link to an earlier entry `target` (a name inside the tree).
    pub fn hard_link(&mut self, path: &EntryPath, target: &EntryPath) -> Result<(), Fault> {
        let (target_dir, target_name) = target.split();
        let from = match self.walk(target_dir, false) {
            Ok(fd) => fd,
            Err(Fault::Missing) => return Err(missing_target(target)),
            Err(e) => return Err(e),
        };
        // A target that is a symbolic link is linked as the link itself
        // (flags 0 below: never followed), so its target must stay in the
        // tree from the hard link's place too.
        let target_kind = rustix::fs::statat(&from, target_name, AtFlags::SYMLINK_NOFOLLOW)
            .map(|st| FileType::from_raw_mode(st.st_mode));
        if let Ok(FileType::Symlink) = target_kind {
            let points_to = rustix::fs::readlinkat(&from, target_name, Vec::new())
                .map_err(|e| Fault::io("reading an earlier symbolic link", e))?;
            let points_to = points_to
                .to_str()
                .map_err(|_| Fault::NotUtf8("link target"))?;
            guard::hard_link_to_symlink(path, target, points_to)
                .map_err(|b| b.fault("link target"))?;
        }
        let (dir, name) = split_entry(path)?;
        self.enter(dir, true)?;
        let link =
            |at: BorrowedFd| rustix::fs::linkat(&from, target_name, at, name, AtFlags::empty());
        match link(self.current.1.as_fd()) {
            Err(Errno::EXIST) => {
                self.replace(name)?;
                link(self.current.1.as_fd())
            }
            other => other,
        }
        .map_err(|e| match e {
            Errno::NOENT => missing_target(target),
            Errno::PERM => Fault::Damaged(format!(
                "is a hard link to `{target}`, a folder (folders cannot be hard-linked)"
            )),
            e => Fault::io("creating the hard link", e),
        })?;
        self.counts.hard_links += 1;
        Ok(())
    }

    /// A device, FIFO or socket: counted, not created.
    pub fn special(&mut self) {
        self.counts.skipped_special += 1;
    }

    /// Sets the listed folders' modes and mtimes, deepest first, and
    /// returns the counts.
    pub fn finish(mut self) -> Result<super::Unpacked, (String, Fault)> {
        let mut dirs = std::mem::take(&mut self.dir_meta);
        dirs.sort_by_key(|(path, _)| std::cmp::Reverse(path.matches('/').count()));
        for (path, meta) in dirs {
            let fd = self.walk(&path, false).map_err(|e| (path.clone(), e))?;
            set_dir_meta(&fd, meta).map_err(|e| (path, e))?;
        }
        if let Some(meta) = self.root_meta {
            set_dir_meta(&self.root, meta).map_err(|e| (".".to_string(), e))?;
        }
        Ok(self.counts)
    }

    /// Makes `dir` the current folder (walking there, making missing
    /// folders if `create`), unless it already is.
    fn enter(&mut self, dir: &str, create: bool) -> Result<(), Fault> {
        if self.current.0 != dir {
            let fd = self.walk(dir, create)?;
            self.current = (dir.to_string(), fd);
        }
        Ok(())
    }

    /// The folder `dir` (relative to the root), reached without following
    /// any link. Missing folders are made when `create`; otherwise
    /// [`Fault::Missing`].
    ///
    /// The kernel resolves the whole path in one call and refuses any link
    /// on the way (`openat2`, `RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH`), so
    /// reaching a folder costs one call however deep it is, and an archive
    /// that keeps switching between deep folders costs time in proportion
    /// to its entries, not to their depth times their number. Where folders
    /// are missing, the deepest one there is found the same way (one call
    /// per missing folder) and the rest are made below it. Without
    /// `openat2` (Linux before 5.6, or a filter that refuses it), and to
    /// tell what stands in the way when something does, the walk goes one
    /// folder at a time from the root.
    fn walk(&mut self, dir: &str, create: bool) -> Result<OwnedFd, Fault> {
        if self.whole_path_opens && !dir.is_empty() {
            let mut there = dir.len();
            loop {
                self.count_folder_call();
                let reached = match there {
                    0 => rustix::io::dup(&self.root),
                    _ => open_beneath(&self.root, &dir[..there]),
                };
                match reached {
                    Ok(fd) if there == dir.len() => return Ok(fd),
                    Ok(fd) => {
                        let below = if there == 0 { 0 } else { there + 1 };
                        return self.walk_from(fd, dir, below, create);
                    }
                    Err(Errno::NOENT) if create => there = dir[..there].rfind('/').unwrap_or(0),
                    Err(Errno::NOENT) => return Err(Fault::Missing),
                    Err(Errno::NOSYS | Errno::PERM | Errno::INVAL | Errno::TOOBIG) => {
                        self.whole_path_opens = false;
                        break;
                    }
                    // A link or a file on the way (or a rename racing the
                    // lookup): the walk below says which.
                    Err(_) => break,
                }
            }
        }
        let root = rustix::io::dup(&self.root).map_err(|e| Fault::io("opening a folder", e))?;
        self.walk_from(root, dir, 0, create)
    }

    /// From `fd`, the folder at `dir[start..]`, one component at a time
    /// with `O_NOFOLLOW` (making missing ones when `create`). `dir[..start]`
    /// is where `fd` is, for the messages.
    fn walk_from(
        &mut self,
        mut fd: OwnedFd,
        dir: &str,
        start: usize,
        create: bool,
    ) -> Result<OwnedFd, Fault> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        if start >= dir.len() {
            return Ok(fd);
        }
        let mut prefix_len = start;
        for part in dir[start..].split('/') {
            prefix_len += if prefix_len == start { 0 } else { 1 } + part.len();
            self.count_folder_call();
            let next = match rustix::fs::openat(&fd, part, flags, Mode::empty()) {
                Err(Errno::NOENT) if create => {
                    self.count_folder_call();
                    match rustix::fs::mkdirat(&fd, part, mode(IMPLIED_DIR_MODE)) {
                        Ok(()) => self.counts.dirs += 1,
                        Err(Errno::EXIST) => {}
                        Err(e) => return Err(Fault::io("creating a folder", e)),
                    }
                    self.count_folder_call();
                    rustix::fs::openat(&fd, part, flags, Mode::empty())
                }
                other => other,
            };
            fd = match next {
                Ok(next) => next,
                Err(Errno::NOENT) => return Err(Fault::Missing),
                Err(Errno::LOOP | Errno::NOTDIR) => {
                    let prefix = &dir[..prefix_len];
                    let is_link = rustix::fs::statat(&fd, part, AtFlags::SYMLINK_NOFOLLOW)
                        .map(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink)
                        .unwrap_or(false);
                    return Err(if is_link {
                        Fault::Unsafe(format!(
                            "would be written through `{prefix}`, a symbolic link an earlier \
                             entry made"
                        ))
                    } else {
                        Fault::Damaged(format!(
                            "is inside `{prefix}`, which an earlier entry made a file, not a folder"
                        ))
                    });
                }
                Err(e) => return Err(Fault::io("opening a folder", e)),
            };
        }
        Ok(fd)
    }

    /// One more system call that opened or made a folder (counted in tests).
    fn count_folder_call(&mut self) {
        #[cfg(test)]
        {
            self.folder_calls += 1;
        }
    }

    /// The type of `name` in the current folder, not following a link.
    fn kind_of(&self, name: &str) -> Result<FileType, Fault> {
        rustix::fs::statat(&self.current.1, name, AtFlags::SYMLINK_NOFOLLOW)
            .map(|st| FileType::from_raw_mode(st.st_mode))
            .map_err(|e| Fault::io("looking at an earlier entry", e))
    }

    /// A later entry of the same name replaces an earlier file or link, as
    /// tar does; a folder is never replaced (its entries would be lost).
    fn replace(&self, name: &str) -> Result<(), Fault> {
        if self.kind_of(name)? == FileType::Directory {
            return Err(Fault::Damaged(
                "has the name of a folder an earlier entry made".into(),
            ));
        }
        rustix::fs::unlinkat(&self.current.1, name, AtFlags::empty())
            .map_err(|e| Fault::io("replacing an earlier entry of the same name", e))
    }
}

/// The entry's folder and name; the root is no file or link.
fn split_entry(path: &EntryPath) -> Result<(&str, &str), Fault> {
    if path.is_root() {
        return Err(Fault::Damaged(
            "names the tree's root but is not a folder".into(),
        ));
    }
    Ok(path.split())
}

/// The folder `dir` under `root`, resolved by the kernel in one call that
/// fails on any symbolic link on the way (and on anything leading above
/// `root`).
fn open_beneath(root: &OwnedFd, dir: &str) -> Result<OwnedFd, Errno> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let resolve = ResolveFlags::NO_SYMLINKS | ResolveFlags::BENEATH;
    rustix::fs::openat2(root, dir, flags, Mode::empty(), resolve)
}

fn missing_target(target: &EntryPath) -> Fault {
    Fault::Damaged(format!(
        "is a hard link to `{target}`, which no earlier entry made"
    ))
}

fn mode(bits: u32) -> Mode {
    Mode::from_raw_mode(bits & PERMISSIONS)
}

fn times(mtime: i64) -> Timestamps {
    Timestamps {
        last_access: Timespec {
            tv_sec: 0,
            tv_nsec: rustix::fs::UTIME_OMIT,
        },
        last_modification: Timespec {
            tv_sec: mtime,
            tv_nsec: 0,
        },
    }
}

fn set_dir_meta(fd: &OwnedFd, meta: Meta) -> Result<(), Fault> {
    rustix::fs::fchmod(fd, mode(meta.mode)).map_err(|e| Fault::io("setting a folder's mode", e))?;
    if let Some(t) = meta.mtime {
        rustix::fs::futimens(fd, &times(t))
            .map_err(|e| Fault::io("setting a folder's mtime", e))?;
    }
    Ok(())
}

/// Copies up to `size` bytes in large writes; returns how many came. A
/// reader with more than `size` bytes is damaged (a zip entry larger than
/// its header says): refused after `size`, so the bound holds.
fn copy_exactly(
    data: &mut dyn Read,
    out: &mut File,
    size: u64,
    buffer: &mut [u8],
) -> Result<u64, Fault> {
    let mut done = 0u64;
    loop {
        let want = buffer.len().min((size - done) as usize);
        let mut filled = 0;
        while filled < want {
            match data.read(&mut buffer[filled..want]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Fault::Read(e)),
            }
        }
        if filled > 0 {
            out.write_all(&buffer[..filled])
                .map_err(|e| Fault::io_std("writing the file", e))?;
            done += filled as u64;
        }
        if filled < want || done == size {
            break;
        }
    }
    if done == size {
        let mut probe = [0u8; 1];
        let more = loop {
            match data.read(&mut probe) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Fault::Read(e)),
            }
        };
        if more > 0 {
            return Err(Fault::Damaged(format!(
                "its data is longer than the {size} bytes its header declares"
            )));
        }
    }
    Ok(done)
}

impl super::sink::Sink for Tree {
    fn budget(&mut self) -> &mut Budget {
        &mut self.budget
    }

    fn file(
        &mut self,
        path: &EntryPath,
        meta: Meta,
        size: u64,
        data: &mut dyn Read,
    ) -> Result<(), Fault> {
        Tree::file(self, path, meta, size, data)
    }

    fn dir(&mut self, path: &EntryPath, meta: Meta) -> Result<(), Fault> {
        Tree::dir(self, path, meta)
    }

    fn symlink(&mut self, path: &EntryPath, target: &str, meta: Meta) -> Result<(), Fault> {
        Tree::symlink(self, path, target, meta)
    }

    fn hard_link(&mut self, path: &EntryPath, target: &EntryPath) -> Result<(), Fault> {
        Tree::hard_link(self, path, target)
    }

    fn special(&mut self) {
        Tree::special(self)
    }
}

#[cfg(test)]
mod tests {
    use super::super::UnpackLimits;
    use super::super::guard::entry_path;
    use super::*;

    /// Entries alternating between two deep branches: each entry's folder
    /// is reached in a few system calls, not one per level from the root
    /// (2,000 entries 4,000 deep took 9 s that way, and the entry bound
    /// allowed days).
    #[test]
    fn entries_alternating_between_deep_branches_are_not_walked_from_the_root() {
        const DEPTH: usize = 400;
        const ENTRIES: u64 = 2_000;
        let dest = tempfile::tempdir().unwrap();
        let limits = UnpackLimits {
            max_bytes: 1 << 20,
            max_entries: 1 << 20,
        };
        let mut tree = Tree::open(dest.path(), Budget::new(limits)).unwrap();
        let meta = Meta {
            mode: 0o644,
            mtime: None,
        };
        for i in 0..ENTRIES {
            let branch = if i % 2 == 0 { "a" } else { "b" };
            let name = format!("{branch}{}/f{i}", "/d".repeat(DEPTH - 1));
            let path = entry_path(name.as_bytes()).unwrap();
            tree.file(&path, meta, 1, &mut &b"x"[..]).unwrap();
        }
        let made = tree.counts.dirs;
        assert_eq!(made, 2 * DEPTH as u64);
        // One call per entry, and a few per folder made (the call that
        // finds it missing, then looking, making and opening it).
        let bound = 2 * ENTRIES + 4 * made;
        assert!(
            tree.folder_calls <= bound,
            "{} folder calls for {ENTRIES} entries and {made} folders (bound {bound})",
            tree.folder_calls
        );
        let deepest = dest.path().join(format!("b{}", "/d".repeat(DEPTH - 1)));
        assert!(deepest.join(format!("f{}", ENTRIES - 1)).is_file());
    }

    /// Without `openat2` (an old kernel, a filter), the walk one folder at
    /// a time makes the same folders and refuses the same link.
    #[test]
    fn without_whole_path_lookups_the_walk_makes_folders_and_stops_at_links() {
        let dest = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let limits = UnpackLimits {
            max_bytes: 1 << 20,
            max_entries: 1 << 20,
        };
        let mut tree = Tree::open(dest.path(), Budget::new(limits)).unwrap();
        tree.whole_path_opens = false;
        let meta = Meta {
            mode: 0o644,
            mtime: None,
        };
        let path = |s: &str| entry_path(s.as_bytes()).unwrap();
        for name in ["a/b/c/f", "x/y", "a/b/c/g"] {
            tree.file(&path(name), meta, 1, &mut &b"x"[..]).unwrap();
        }
        let target = outside.path().to_str().unwrap();
        tree.symlink(&path("a/l"), target, meta).unwrap();
        let through = tree.file(&path("a/l/evil"), meta, 1, &mut &b"x"[..]);
        assert!(
            matches!(&through, Err(Fault::Unsafe(r)) if r.contains("`a/l`")),
            "{through:?}"
        );
        assert!(!tree.whole_path_opens);
        assert_eq!(tree.counts.dirs, 4);
        assert!(dest.path().join("a/b/c/g").is_file());
        assert!(!outside.path().join("evil").exists());
    }
}
