//! A pristine source tree for every tool cycle after the first, without
//! copying the whole dataset again: SPEC 4.1's "reset to the generated state".
//!
//! The tree a tool cycle leaves behind differs from the generated one by the
//! 5% change, whose small files and large-file regions
//! [`labrun_dataset::change_plan`] names, and by anything a tool wrote into
//! the folder it backed up (duplicacy, for one, keeps `.duplicacy/` there).
//! [`reset_tree`] undoes both:
//!
//! 1. every changed small file is copied back whole from the pristine tree,
//!    and every changed region of a large file is copied back in place; each
//!    gets its pristine mtime again;
//! 2. both trees are walked side by side, and the source is made to match in
//!    names, kinds, sizes, modes, mtimes and link targets: extra entries are
//!    removed, missing ones copied, and a file whose size, mode or mtime
//!    differs is copied whole.
//!
//! Step 2 cannot see a file whose bytes changed while its size and mtime did
//! not; the change is the only writer that does not go through a tool, and
//! step 1 undoes it whether it ran, ran in part, or not at all. Inode change
//! times (ctime) cannot be set back, and do not need to be: every tool cycle
//! starts with an empty repository and an empty home, so no tool has a cache
//! that could compare them.
//!
//! Cost: the changed bytes (about 5%) and one `lstat` per entry of each
//! tree, instead of a full copy and a full delete per tool cycle.

use labrun_dataset::ChangePlan;
use std::collections::BTreeMap;
use std::ffi::{CString, OsString};
use std::fs::{self, File, FileType, Metadata, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
use std::path::Path;

/// What a reset wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResetStats {
    /// Files (whole or in part), directories and links written.
    pub entries_written: u64,
    pub bytes_written: u64,
    /// Entries that were not in the pristine tree, removed (a removed
    /// folder counts once).
    pub entries_removed: u64,
}

/// Buffer of the region copies.
const CHUNK: usize = 1 << 20;

/// Makes `source` identical to `pristine` (see the module docs); `touched`
/// is the change that may have been applied to it since.
pub fn reset_tree(pristine: &Path, source: &Path, touched: &ChangePlan) -> io::Result<ResetStats> {
    let mut stats = ResetStats::default();
    for rel in &touched.small_files {
        let (p, s) = (pristine.join(rel), source.join(rel));
        let want = at(fs::symlink_metadata(&p), "reading", &p)?;
        // Anything else than the same file of another content is step 2's.
        if same_shape(&want, &s) {
            stats.bytes_written += at(fs::copy(&p, &s), "copying back", &s)?;
            stats.entries_written += 1;
            set_mtime(&s, &want)?;
        }
    }
    for region in &touched.regions {
        let (p, s) = (pristine.join(&region.path), source.join(&region.path));
        let want = at(fs::symlink_metadata(&p), "reading", &p)?;
        if same_shape(&want, &s) {
            at(
                copy_region(&p, &s, region.offset, region.len),
                "copying back a region of",
                &s,
            )?;
            stats.bytes_written += region.len;
            stats.entries_written += 1;
            set_mtime(&s, &want)?;
        }
    }
    let root = at(fs::symlink_metadata(pristine), "reading", pristine)?;
    reconcile_dir(pristine, source, &root, &mut stats)?;
    Ok(stats)
}

/// `path` is a regular file of `want`'s size.
fn same_shape(want: &Metadata, path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && want.is_file() && m.len() == want.len())
}

fn copy_region(from: &Path, to: &Path, offset: u64, len: u64) -> io::Result<()> {
    let input = File::open(from)?;
    let output = OpenOptions::new().write(true).open(to)?;
    // A hole of the pristine file (the vm-image change writes into holes)
    // becomes a hole again: copying its zeros would allocate them.
    if is_hole(&input, offset, len) && punch_hole(&output, offset, len).is_ok() {
        return Ok(());
    }
    let mut buf = vec![0u8; CHUNK.min(len as usize)];
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(buf.len() as u64) as usize;
        input.read_exact_at(&mut buf[..n], offset + done)?;
        output.write_all_at(&buf[..n], offset + done)?;
        done += n as u64;
    }
    Ok(())
}

/// No data in `offset..offset+len` of `file` (false when unknown).
fn is_hole(file: &File, offset: u64, len: u64) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(start) = libc::off_t::try_from(offset) else {
        return false;
    };
    // SAFETY: a plain lseek on a descriptor this function borrows.
    let next_data = unsafe { libc::lseek(file.as_raw_fd(), start, libc::SEEK_DATA) };
    if next_data < 0 {
        // ENXIO: no data from `offset` to the end of the file.
        return io::Error::last_os_error().raw_os_error() == Some(libc::ENXIO);
    }
    next_data as u64 >= offset.saturating_add(len)
}

fn punch_hole(file: &File, offset: u64, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let (Ok(start), Ok(length)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len))
    else {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    };
    let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
    // SAFETY: fallocate on a descriptor this function borrows.
    if unsafe { libc::fallocate(file.as_raw_fd(), mode, start, length) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Step 2 for one directory (the source side exists and is a directory);
/// the directory's own mode and mtime last, after its entries changed.
fn reconcile_dir(
    pristine: &Path,
    source: &Path,
    want: &Metadata,
    stats: &mut ResetStats,
) -> io::Result<()> {
    let expected = entries(pristine)?;
    for (name, kind) in entries(source)? {
        let keep = expected.get(&name).is_some_and(|k| same_kind(*k, kind));
        if !keep {
            let extra = source.join(&name);
            at(remove_entry(&extra, kind), "removing", &extra)?;
            stats.entries_removed += 1;
        }
    }
    for name in expected.keys() {
        let (p, s) = (pristine.join(name), source.join(name));
        let want = at(fs::symlink_metadata(&p), "reading", &p)?;
        let have = match fs::symlink_metadata(&s) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                copy_entry(&p, &s, &want, stats)?;
                continue;
            }
            Err(e) => return at(Err(e), "reading", &s),
        };
        let ft = want.file_type();
        if ft.is_dir() {
            reconcile_dir(&p, &s, &want, stats)?;
        } else if ft.is_symlink() {
            if at(fs::read_link(&p), "reading", &p)? != at(fs::read_link(&s), "reading", &s)? {
                at(fs::remove_file(&s), "removing", &s)?;
                copy_entry(&p, &s, &want, stats)?;
            } else if !same_mtime(&want, &have) {
                set_mtime(&s, &want)?;
            }
        } else if have.len() != want.len()
            || have.mode() != want.mode()
            || !same_mtime(&want, &have)
        {
            // Replaced, not rewritten: a tool may have made it read-only.
            at(fs::remove_file(&s), "removing", &s)?;
            copy_entry(&p, &s, &want, stats)?;
        }
    }
    let have = at(fs::symlink_metadata(source), "reading", source)?;
    if have.mode() != want.mode() {
        let mode = fs::Permissions::from_mode(want.mode() & 0o7777);
        at(
            fs::set_permissions(source, mode),
            "setting the mode of",
            source,
        )?;
    }
    if !same_mtime(want, &have) {
        set_mtime(source, want)?;
    }
    Ok(())
}

/// Names and kinds in a directory (from the directory itself, no `stat`).
fn entries(dir: &Path) -> io::Result<BTreeMap<OsString, FileType>> {
    let list = || -> io::Result<BTreeMap<OsString, FileType>> {
        fs::read_dir(dir)?
            .map(|e| {
                let e = e?;
                Ok((e.file_name(), e.file_type()?))
            })
            .collect()
    };
    at(list(), "listing", dir)
}

/// Names the path in an error, keeping its kind (a full disk stays one).
fn at<T>(result: io::Result<T>, what: &str, path: &Path) -> io::Result<T> {
    result.map_err(|e| io::Error::new(e.kind(), format!("{what} {}: {e}", path.display())))
}

fn same_kind(a: FileType, b: FileType) -> bool {
    (a.is_dir(), a.is_file(), a.is_symlink()) == (b.is_dir(), b.is_file(), b.is_symlink())
}

fn same_mtime(a: &Metadata, b: &Metadata) -> bool {
    (a.mtime(), a.mtime_nsec()) == (b.mtime(), b.mtime_nsec())
}

fn remove_entry(path: &Path, kind: FileType) -> io::Result<()> {
    if kind.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    }
}

/// Copies `from` (described by `want`) to `to` with its mode and mtime,
/// folders recursively; `to` must not exist.
fn copy_entry(from: &Path, to: &Path, want: &Metadata, stats: &mut ResetStats) -> io::Result<()> {
    let ft = want.file_type();
    if ft.is_dir() {
        at(fs::create_dir(to), "creating", to)?;
        for name in entries(from)?.keys() {
            let child = from.join(name);
            let child_meta = at(fs::symlink_metadata(&child), "reading", &child)?;
            copy_entry(&child, &to.join(name), &child_meta, stats)?;
        }
        let mode = fs::Permissions::from_mode(want.mode() & 0o7777);
        at(fs::set_permissions(to, mode), "setting the mode of", to)?;
    } else if ft.is_symlink() {
        let target = at(fs::read_link(from), "reading", from)?;
        at(std::os::unix::fs::symlink(target, to), "creating", to)?;
    } else if ft.is_file() {
        // fs::copy also gives `to` the permission bits of `from`.
        stats.bytes_written += at(fs::copy(from, to), "copying", to)?;
    } else {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "{} is neither a file, a folder nor a link: the dataset never makes one",
                from.display()
            ),
        ));
    }
    stats.entries_written += 1;
    set_mtime(to, want)
}

/// Sets `path`'s mtime (not following a link) to `want`'s, nanoseconds
/// included; leaves the access time alone.
fn set_mtime(path: &Path, want: &Metadata) -> io::Result<()> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    let times = [
        libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_OMIT,
        },
        libc::timespec {
            tv_sec: want.mtime(),
            tv_nsec: want.mtime_nsec(),
        },
    ];
    // SAFETY: `c` is a valid NUL-terminated string and `times` an array of
    // two timespecs, both alive for the call, as utimensat(2) requires.
    let rc = unsafe {
        libc::utimensat(
            libc::AT_FDCWD,
            c.as_ptr(),
            times.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        at(
            Err(io::Error::last_os_error()),
            "setting the mtime of",
            path,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use labrun_dataset::DatasetParams;
    use std::path::PathBuf;

    /// Every entry's kind, mode, size, mtime, link target and SHA-256, by path.
    fn snapshot(root: &Path) -> BTreeMap<PathBuf, String> {
        let mut out = BTreeMap::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(p) = stack.pop() {
            let m = fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(root).unwrap().to_path_buf();
            let detail = if m.is_dir() {
                for e in fs::read_dir(&p).unwrap() {
                    stack.push(e.unwrap().path());
                }
                String::new()
            } else if m.is_symlink() {
                fs::read_link(&p).unwrap().display().to_string()
            } else {
                use sha2::Digest;
                hex::encode(sha2::Sha256::digest(fs::read(&p).unwrap()))
            };
            out.insert(
                rel,
                format!(
                    "{:o} {} {}.{} {detail}",
                    m.mode(),
                    if m.is_dir() { 0 } else { m.len() },
                    m.mtime(),
                    m.mtime_nsec()
                ),
            );
        }
        out
    }

    fn cp_a(from: &Path, to: &Path) {
        let ok = std::process::Command::new("cp")
            .arg("-a")
            .arg(from)
            .arg(to)
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }

    struct Trees {
        _dir: tempfile::TempDir,
        pristine: PathBuf,
        source: PathBuf,
        params: DatasetParams,
    }

    fn trees() -> Trees {
        trees_of(DatasetParams::published(5, 0.001))
    }

    fn trees_of(params: DatasetParams) -> Trees {
        let dir = tempfile::tempdir().unwrap();
        let (pristine, source) = (dir.path().join("pristine"), dir.path().join("source"));
        labrun_dataset::generate(&pristine, &params, &mut |_, _| {}).unwrap();
        // A link too, though the dataset makes none: the walk must keep it.
        std::os::unix::fs::symlink("small", pristine.join("link")).unwrap();
        cp_a(&pristine, &source);
        Trees {
            _dir: dir,
            pristine,
            source,
            params,
        }
    }

    /// A file of the tree that the change does not touch.
    fn untouched_file(t: &Trees, plan: &ChangePlan) -> String {
        let m = labrun_dataset::scan(&t.pristine).unwrap();
        m.entries
            .iter()
            .filter(|e| e.kind == labrun_evidence::EntryKind::File && e.size > 0)
            .map(|e| e.path.clone())
            .find(|p| !plan.small_files.contains(p) && !plan.regions.iter().any(|r| &r.path == p))
            .unwrap()
    }

    #[test]
    fn after_the_change_and_a_messy_tool_the_tree_is_pristine_again() {
        let t = trees();
        let plan = labrun_dataset::change_plan(&t.params, 6);
        let before = snapshot(&t.pristine);
        assert_eq!(snapshot(&t.source), before, "cp -a keeps everything");

        // The change, then what a tool could leave behind.
        labrun_dataset::apply_change(&t.source, &t.params, 6, &mut |_, _| {}).unwrap();
        fs::create_dir_all(t.source.join(".duplicacy/cache")).unwrap();
        fs::write(t.source.join(".duplicacy/preferences"), "{}").unwrap();
        fs::write(t.source.join("stray.tmp"), "x").unwrap();
        let other = untouched_file(&t, &plan);
        fs::write(t.source.join(&other), "shorter").unwrap();
        fs::set_permissions(
            t.source.join(&plan.small_files[0]),
            fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        fs::remove_file(t.source.join(&plan.regions[0].path)).unwrap();
        let gone_dir = plan.small_files[1].rsplit_once('/').unwrap().0.to_string();
        fs::remove_dir_all(t.source.join(&gone_dir)).unwrap();
        fs::remove_file(t.source.join("link")).unwrap();
        std::os::unix::fs::symlink("elsewhere", t.source.join("link")).unwrap();
        assert_ne!(snapshot(&t.source), before);

        let stats = reset_tree(&t.pristine, &t.source, &plan).unwrap();
        assert_eq!(snapshot(&t.source), before);
        assert_eq!(stats.entries_removed, 2, "{stats:?}");
        assert!(stats.bytes_written > 0, "{stats:?}");
        // The dataset library agrees: same paths, modes and digests.
        assert_eq!(
            labrun_dataset::scan(&t.source).unwrap(),
            labrun_dataset::scan(&t.pristine).unwrap()
        );
    }

    #[test]
    fn only_the_changed_bytes_are_written() {
        let t = trees();
        let plan = labrun_dataset::change_plan(&t.params, 6);
        labrun_dataset::apply_change(&t.source, &t.params, 6, &mut |_, _| {}).unwrap();
        let stats = reset_tree(&t.pristine, &t.source, &plan).unwrap();
        assert_eq!(snapshot(&t.source), snapshot(&t.pristine));
        let small: u64 = plan
            .small_files
            .iter()
            .map(|p| fs::metadata(t.pristine.join(p)).unwrap().len())
            .sum();
        let regions: u64 = plan.regions.iter().map(|r| r.len).sum();
        assert_eq!(stats.bytes_written, small + regions);
        assert_eq!(
            stats.entries_written as usize,
            plan.small_files.len() + plan.regions.len()
        );
        assert_eq!(stats.entries_removed, 0);
        let total = labrun_dataset::layout(&t.params).total_bytes();
        assert!(stats.bytes_written * 5 < total, "{stats:?} of {total}");
    }

    #[test]
    fn a_tree_the_change_never_reached_is_left_as_it_is() {
        let t = trees();
        let plan = labrun_dataset::change_plan(&t.params, 6);
        reset_tree(&t.pristine, &t.source, &plan).unwrap();
        assert_eq!(snapshot(&t.source), snapshot(&t.pristine));
        // Twice in a row, and after the change twice: the same tree.
        labrun_dataset::apply_change(&t.source, &t.params, 6, &mut |_, _| {}).unwrap();
        reset_tree(&t.pristine, &t.source, &plan).unwrap();
        reset_tree(&t.pristine, &t.source, &plan).unwrap();
        assert_eq!(snapshot(&t.source), snapshot(&t.pristine));
    }

    #[test]
    fn each_profile_is_pristine_again_and_a_sparse_image_keeps_its_holes() {
        use labrun_dataset::DatasetProfile;
        for (profile, scale) in [
            (DatasetProfile::TinyFiles, 0.001),
            (DatasetProfile::Media, 0.001),
            (DatasetProfile::VmImage, 0.002),
        ] {
            let t = trees_of(DatasetParams {
                seed: 5,
                scale,
                profile,
            });
            let plan = labrun_dataset::change_plan(&t.params, 6);
            labrun_dataset::apply_change(&t.source, &t.params, 6, &mut |_, _| {}).unwrap();
            assert_ne!(snapshot(&t.source), snapshot(&t.pristine), "{profile}");
            reset_tree(&t.pristine, &t.source, &plan).unwrap();
            assert_eq!(snapshot(&t.source), snapshot(&t.pristine), "{profile}");
            if profile == DatasetProfile::VmImage {
                let used = |root: &Path| {
                    fs::metadata(root.join("images/disk.img")).unwrap().blocks() * 512
                };
                // Within a few file-system blocks (ext4's extent tree may
                // take one more block after a hole is punched); a filled
                // hole left allocated is 64 KiB.
                let (source, pristine) = (used(&t.source), used(&t.pristine));
                assert!(
                    source.abs_diff(pristine) <= 16 * 1024,
                    "{source} vs {pristine}"
                );
            }
        }
    }

    #[test]
    fn a_missing_pristine_tree_is_an_error_not_an_empty_source() {
        let t = trees();
        let plan = labrun_dataset::change_plan(&t.params, 6);
        fs::remove_dir_all(&t.pristine).unwrap();
        assert!(reset_tree(&t.pristine, &t.source, &plan).is_err());
        assert!(t.source.join(&plan.small_files[0]).is_file());
    }
}
