//! Packing a run folder: the manifest first, then every file in path order,
//! each with the same mode, owner and time, so packing a run twice gives the
//! same bytes and the manifest's digest names the run wherever it travels.

use super::error::PackError;
use super::limits::Limits;
use super::manifest::{
    Hashing, MANIFEST_FILE, MANIFEST_FORMAT, Manifest, ManifestEntry, check_run_name,
    safe_relative_path, sha256_hex,
};
use flate2::{Compression, GzBuilder};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// What `write` made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packed {
    pub path: PathBuf,
    pub run: String,
    pub files: usize,
    /// The files' bytes before compression.
    pub bytes: u64,
    /// The SHA-256 of the manifest inside: the run's address.
    pub manifest_sha256: String,
}

/// gzip's "unknown" operating system, so the bytes do not depend on the packer's.
const GZIP_OS_UNKNOWN: u8 = 255;
const FILE_MODE: u32 = 0o644;

/// Packs `run_dir` into `out` (written beside and renamed into place),
/// within the bounds every reader opens a pack with.
pub fn write(run_dir: &Path, out: &Path) -> Result<Packed, PackError> {
    write_with(run_dir, out, &Limits::default())
}

/// [`write`] within other bounds (tests use small ones): a run the reader
/// would refuse with these bounds is refused before anything is written.
pub fn write_with(run_dir: &Path, out: &Path, limits: &Limits) -> Result<Packed, PackError> {
    let run_dir = run_dir.canonicalize().map_err(|source| PackError::Read {
        path: run_dir.to_path_buf(),
        source,
    })?;
    if !super::is_run_folder(&run_dir) {
        return Err(PackError::NotARunFolder { path: run_dir });
    }
    let run = run_dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| PackError::Unpackable {
            path: run_dir.clone(),
            reason: "its name is not UTF-8".into(),
        })?
        .to_string();
    check_run_name(&run).map_err(|reason| PackError::Unpackable {
        path: run_dir.clone(),
        reason: format!("{reason}; rename the folder"),
    })?;
    let out_dir = parent_of(out);
    let out_dir_canonical = out_dir.canonicalize().map_err(|source| PackError::Write {
        path: out.to_path_buf(),
        source,
    })?;
    if out_dir_canonical.starts_with(&run_dir) {
        return Err(PackError::OutputInsideRun {
            path: out.to_path_buf(),
        });
    }

    let mut found = Vec::new();
    collect_files(&run_dir, "", &mut found)?;
    found.sort();
    if found.iter().any(|(p, _)| p == MANIFEST_FILE) {
        return Err(PackError::Unpackable {
            path: run_dir.join(MANIFEST_FILE),
            reason: "its name is the one the pack's own manifest takes".into(),
        });
    }
    // By the sizes the folder shows, before a byte is hashed ...
    fits(
        limits,
        &run_dir,
        found.iter().map(|(p, s)| (p.as_str(), *s)),
        0,
    )?;
    let mut files = Vec::with_capacity(found.len());
    for (rel, _) in &found {
        let (size, sha256) = hash_file(&run_dir.join(rel))?;
        files.push(ManifestEntry {
            path: rel.clone(),
            size,
            sha256,
        });
    }
    let manifest = Manifest {
        format: MANIFEST_FORMAT,
        run: run.clone(),
        files,
    };
    let manifest_bytes = manifest.to_bytes();
    // ... and by the sizes hashed (a file may have grown), with the manifest.
    let hashed = manifest.files.iter().map(|f| (f.path.as_str(), f.size));
    fits(limits, &run_dir, hashed, manifest_bytes.len() as u64)?;

    let write_err = |source| PackError::Write {
        path: out.to_path_buf(),
        source,
    };
    // Readable by all as any file written with the usual umask, not 0600.
    let temp = tempfile::Builder::new()
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .tempfile_in(out_dir)
        .map_err(write_err)?;
    let gz = GzBuilder::new()
        .mtime(0)
        .operating_system(GZIP_OS_UNKNOWN)
        .write(temp, Compression::default());
    let mut tar = tar::Builder::new(gz);
    tar.append_data(
        &mut header(manifest_bytes.len() as u64),
        MANIFEST_FILE,
        &manifest_bytes[..],
    )
    .map_err(write_err)?;
    for entry in &manifest.files {
        let path = run_dir.join(&entry.path);
        let file = std::fs::File::open(&path).map_err(|source| PackError::Read {
            path: path.clone(),
            source,
        })?;
        let mut reader = HashingReader {
            inner: file.take(entry.size),
            hashing: Hashing::new(),
        };
        tar.append_data(&mut header(entry.size), &entry.path, &mut reader)
            .map_err(write_err)?;
        if reader.hashing.size != entry.size || reader.hashing.finish() != entry.sha256 {
            return Err(PackError::Unpackable {
                path,
                reason: "it changed while it was being packed".into(),
            });
        }
    }
    let gz = tar.into_inner().map_err(write_err)?;
    let mut temp = gz.finish().map_err(write_err)?;
    temp.flush().map_err(write_err)?;
    temp.persist(out).map_err(|e| write_err(e.error))?;
    Ok(Packed {
        path: out.to_path_buf(),
        run,
        files: manifest.files.len(),
        bytes: manifest.files.iter().map(|f| f.size).sum(),
        manifest_sha256: sha256_hex(&manifest_bytes),
    })
}

/// The same header for every file: only the size differs.
fn header(size: u64) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_mode(FILE_MODE);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(0);
    header.set_size(size);
    header
}

/// The files (path, size) and a manifest of `manifest_bytes` are within
/// `limits`: the checks the reader makes, in its words.
fn fits<'a>(
    limits: &Limits,
    run_dir: &Path,
    files: impl ExactSizeIterator<Item = (&'a str, u64)>,
    manifest_bytes: u64,
) -> Result<(), PackError> {
    let too_large = |path: PathBuf, reason| PackError::TooLarge { path, reason };
    // The manifest is an entry too.
    limits
        .check_entries(files.len() + 1)
        .map_err(|r| too_large(run_dir.to_path_buf(), r))?;
    limits
        .check_manifest(manifest_bytes)
        .map_err(|r| too_large(run_dir.to_path_buf(), r))?;
    let mut total = 0u64;
    for (rel, size) in files {
        limits
            .check_file(size)
            .map_err(|r| too_large(run_dir.join(rel), r))?;
        total = total.saturating_add(size);
    }
    limits
        .check_total(total)
        .map_err(|r| too_large(run_dir.to_path_buf(), r))
}

fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Every regular file under `dir`, as `/`-separated paths relative to the
/// run (each one the reader takes) with its size.
fn collect_files(dir: &Path, prefix: &str, into: &mut Vec<(String, u64)>) -> Result<(), PackError> {
    let read_err = |source| PackError::Read {
        path: dir.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(read_err)? {
        let entry = entry.map_err(read_err)?;
        let path = entry.path();
        let name = entry
            .file_name()
            .into_string()
            .map_err(|_| PackError::Unpackable {
                path: path.clone(),
                reason: "its name is not UTF-8".into(),
            })?;
        let rel = format!("{prefix}{name}");
        safe_relative_path(&rel).map_err(|reason| PackError::Unpackable {
            path: path.clone(),
            reason: format!("its path is {reason}, which a pack's reader refuses"),
        })?;
        let read_err = |source| PackError::Read {
            path: path.clone(),
            source,
        };
        let kind = entry.file_type().map_err(read_err)?;
        if kind.is_dir() {
            collect_files(&path, &format!("{rel}/"), into)?;
        } else if kind.is_file() {
            into.push((rel, entry.metadata().map_err(read_err)?.len()));
        } else {
            let reason = if kind.is_symlink() {
                "it is a symbolic link"
            } else {
                "it is not a regular file"
            };
            return Err(PackError::Unpackable {
                path,
                reason: reason.into(),
            });
        }
    }
    Ok(())
}

fn hash_file(path: &Path) -> Result<(u64, String), PackError> {
    let read_err = |source| PackError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(read_err)?;
    let mut hashing = Hashing::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf).map_err(read_err)?;
        if n == 0 {
            break;
        }
        hashing.update(&buf[..n]);
    }
    let size = hashing.size;
    Ok((size, hashing.finish()))
}

struct HashingReader<R> {
    inner: R,
    hashing: Hashing,
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hashing.update(&buf[..n]);
        Ok(n)
    }
}
