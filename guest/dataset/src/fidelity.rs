//! The metadata-fidelity fixture: a small seeded tree (a few KiB of data)
//! holding what real trees hold and the published dataset does not: modes
//! other than 0644, fixed past mtimes (nanoseconds included) on every file
//! and directory, symlinks (to a file, to a directory, dangling), a hard
//! link pair, nested empty directories, a sparse file, names with spaces
//! and non-ASCII characters, and a `user.` xattr.
//!
//! Back it up, restore it, and [`crate::verify_fidelity`] says kind by kind
//! what the restore kept. The returned manifest is a metadata scan of what
//! is on disk, so a filesystem that could not hold something (xattrs,
//! holes) leaves it out, and the check reports that kind `not_tested`.

use crate::error::DatasetError;
use crate::scan::{self, Detail};
use crate::stream::StreamRng;
use labrun_evidence::Manifest;
use rand_chacha::rand_core::{Rng, SeedableRng};
use rustix::io::Errno;
use sha2::{Digest, Sha256};
use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{self, Seek, SeekFrom, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The xattr the fixture sets on [`XATTR_FILE`]; its value depends on the seed.
pub const XATTR_NAME: &str = "user.labrun.fidelity";
pub const XATTR_FILE: &str = "tagged.txt";

/// Directories, parents first, and their modes.
const DIRS: &[(&str, u32)] = &[
    ("a dir with spaces", 0o755),
    ("empty", 0o755),
    ("empty/nested", 0o755),
    ("links", 0o755),
    ("secret", 0o700),
];

/// Regular files: path, mode, length of their seeded text.
const FILES: &[(&str, u32, usize)] = &[
    ("a dir with spaces/café ünïcødé.txt", 0o644, 200),
    ("links/hardlink-a.txt", 0o644, 300),
    ("plain.txt", 0o644, 400),
    ("readonly.txt", 0o444, 150),
    ("run.sh", 0o755, 120),
    ("secret/private.key", 0o600, 256),
    // Group-writable: a copy that applies a 022 umask instead of the
    // source's mode makes it 0644.
    ("shared.txt", 0o664, 180),
    (XATTR_FILE, 0o644, 100),
];

/// A second name of `links/hardlink-a.txt` (one inode).
const HARD_LINK: (&str, &str) = ("links/hardlink-b.txt", "links/hardlink-a.txt");

/// Symlinks and their relative targets.
const SYMLINKS: &[(&str, &str)] = &[
    ("links/dangling", "../no such file"),
    ("links/to-dir", "../a dir with spaces"),
    ("links/to-file", "../plain.txt"),
];

/// 4 MiB apparent, one 4 KiB block of data in the middle: a hole before
/// and after it.
const SPARSE_FILE: &str = "sparse.bin";
const SPARSE_SIZE: u64 = 4 << 20;
const SPARSE_DATA_AT: u64 = 2 << 20;
const SPARSE_DATA_LEN: usize = 4096;
const SPARSE_MODE: u32 = 0o644;

/// Mtimes fall in [2001-09-09, 2017-07-14): in the past, and well inside
/// what every filesystem and archive format stores.
const MTIME_FROM: i64 = 1_000_000_000;
const MTIME_SPAN: u64 = 500_000_000;

/// Writes the fixture of `seed` under `dir` (created; it must not exist or
/// be empty) and returns a metadata scan of it. Same seed, same manifest,
/// on any filesystem that holds every kind.
pub fn write_fixture(dir: &Path, seed: u64) -> io::Result<Manifest> {
    Ok(write(dir, seed)?)
}

fn write(dir: &Path, seed: u64) -> Result<Manifest, DatasetError> {
    crate::generate::prepare_out(dir)?;
    let mut rng = fixture_rng(seed);

    for (path, _) in DIRS {
        let abs = dir.join(path);
        fs::create_dir(&abs).map_err(|e| DatasetError::io("creating directory", &abs, e))?;
    }
    for (path, mode, len) in FILES {
        let text = seeded_text(&mut rng, *len);
        write_file(&dir.join(path), *mode, |f| f.write_all(&text))?;
    }
    let mut block = vec![0u8; SPARSE_DATA_LEN];
    rng.fill_bytes(&mut block);
    write_file(&dir.join(SPARSE_FILE), SPARSE_MODE, |f| {
        // Only the middle block is written; set_len makes the holes.
        f.set_len(SPARSE_SIZE)?;
        f.seek(SeekFrom::Start(SPARSE_DATA_AT))?;
        f.write_all(&block)
    })?;
    let (link, original) = HARD_LINK;
    fs::hard_link(dir.join(original), dir.join(link))
        .map_err(|e| DatasetError::io("making a hard link at", &dir.join(link), e))?;
    for (path, target) in SYMLINKS {
        let abs = dir.join(path);
        std::os::unix::fs::symlink(target, &abs)
            .map_err(|e| DatasetError::io("making a symlink at", &abs, e))?;
    }
    set_xattr(&dir.join(XATTR_FILE), &seeded_text(&mut rng, 24))?;

    // Modes and times last: files first, then directories deepest first,
    // since creating anything in a directory moves its mtime.
    let mut files: Vec<&str> = FILES.iter().map(|(p, _, _)| *p).collect();
    files.push(SPARSE_FILE);
    for path in files {
        set_mtime(&dir.join(path), seeded_mtime(&mut rng))?;
    }
    let mut dirs: Vec<(&str, u32)> = DIRS.to_vec();
    dirs.sort_by_key(|(path, _)| std::cmp::Reverse(path.matches('/').count()));
    for (path, mode) in dirs {
        let abs = dir.join(path);
        set_mode(&abs, mode)?;
        set_mtime(&abs, seeded_mtime(&mut rng))?;
    }
    scan::scan(dir, Detail::Metadata, &mut |_, _| {})
}

/// One stream for the whole fixture, keyed apart from the dataset's.
fn fixture_rng(seed: u64) -> StreamRng {
    let mut h = Sha256::new();
    h.update(b"labrun-dataset/fidelity/v1/");
    h.update(seed.to_le_bytes());
    StreamRng::from_seed(h.finalize().into())
}

/// `len` bytes of lowercase hex, lines of 64 characters: text, as the
/// names say, and different for every seed.
fn seeded_text(rng: &mut StreamRng, len: usize) -> Vec<u8> {
    let mut raw = vec![0u8; len.div_ceil(2)];
    rng.fill_bytes(&mut raw);
    let mut text = hex::encode(raw).into_bytes();
    text.truncate(len);
    for i in (64..len).step_by(65) {
        text[i] = b'\n';
    }
    if let Some(last) = text.last_mut() {
        *last = b'\n';
    }
    text
}

fn seeded_mtime(rng: &mut StreamRng) -> rustix::fs::Timespec {
    rustix::fs::Timespec {
        tv_sec: MTIME_FROM + (rng.next_u64() % MTIME_SPAN) as i64,
        // Never 0: a restore that drops the sub-second part must show.
        tv_nsec: 1 + (rng.next_u64() % 999_999_999) as i64,
    }
}

/// Creates `path`, fills it with `fill`, then sets `mode` exactly (the
/// umask may have cleared bits at creation; 0444 only once written).
fn write_file(
    path: &Path,
    mode: u32,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> Result<(), DatasetError> {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| DatasetError::io("creating", path, e))?;
    fill(&mut f).map_err(|e| DatasetError::io("writing", path, e))?;
    f.set_permissions(Permissions::from_mode(mode))
        .map_err(|e| DatasetError::io("setting the mode of", path, e))
}

fn set_mode(path: &Path, mode: u32) -> Result<(), DatasetError> {
    fs::set_permissions(path, Permissions::from_mode(mode))
        .map_err(|e| DatasetError::io("setting the mode of", path, e))
}

/// Access time = modification time: nothing records atimes, and a fixed
/// one keeps the fixture the same whenever it is written.
fn set_mtime(path: &Path, t: rustix::fs::Timespec) -> Result<(), DatasetError> {
    let times = rustix::fs::Timestamps {
        last_access: t,
        last_modification: t,
    };
    rustix::fs::utimensat(rustix::fs::CWD, path, &times, rustix::fs::AtFlags::empty())
        .map_err(|e| DatasetError::io("setting the mtime of", path, e.into()))
}

/// A filesystem without (user) xattrs gets none: the manifest then records
/// none, and the check reports xattrs `not_tested`.
fn set_xattr(path: &Path, value: &[u8]) -> Result<(), DatasetError> {
    match rustix::fs::setxattr(path, XATTR_NAME, value, rustix::fs::XattrFlags::CREATE) {
        Ok(()) | Err(Errno::OPNOTSUPP) => Ok(()),
        Err(e) => Err(DatasetError::io("setting an xattr of", path, e.into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_text_is_hex_lines_of_the_asked_length() {
        let mut rng = fixture_rng(7);
        let text = seeded_text(&mut rng, 200);
        assert_eq!(text.len(), 200);
        assert_eq!(text[64], b'\n');
        assert_eq!(text[199], b'\n');
        assert!(text.iter().all(|b| b.is_ascii_hexdigit() || *b == b'\n'));
        assert_ne!(text, seeded_text(&mut fixture_rng(8), 200));
    }

    #[test]
    fn seeded_mtimes_are_in_the_past_with_nanoseconds() {
        let mut rng = fixture_rng(1);
        for _ in 0..100 {
            let t = seeded_mtime(&mut rng);
            assert!((MTIME_FROM..MTIME_FROM + MTIME_SPAN as i64).contains(&t.tv_sec));
            assert!((1..1_000_000_000).contains(&t.tv_nsec));
        }
    }

    #[test]
    fn the_fixture_lists_every_parent_before_its_children() {
        for (i, (path, _)) in DIRS.iter().enumerate() {
            if let Some((parent, _)) = path.rsplit_once('/') {
                assert!(DIRS[..i].iter().any(|(p, _)| *p == parent), "{path}");
            }
        }
    }
}
