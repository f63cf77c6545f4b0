//! Opening a run: a folder is read in place; a pack is checked entry by
//! entry and unpacked into a private temporary folder, then every file is
//! held against the manifest. Nothing in a pack can write outside that
//! folder: only regular files and folders, relative paths of plain names,
//! each file and the whole run bounded in size.

use super::error::PackError;
use super::manifest::{Hashing, MANIFEST_FILE, Manifest, is_plain_name, sha256_hex};
use labrun_dataset::unpack::TarRecords;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// How much a pack may unpack to. A run's evidence is text and small
/// binaries; the bounds stop a damaged or hostile pack from filling the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_file_bytes: u64,
    pub max_total_bytes: u64,
    pub max_entries: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_file_bytes: 256 << 20,
            max_total_bytes: 4 << 30,
            max_entries: 200_000,
        }
    }
}

/// A run ready to read: `dir()` holds `raw/` (and what else the run had).
#[derive(Debug)]
pub struct OpenedRun {
    dir: PathBuf,
    pack: Option<PackSource>,
    /// Keeps a pack's unpacked folder alive; removed on drop.
    _unpacked: Option<tempfile::TempDir>,
}

#[derive(Debug)]
struct PackSource {
    path: PathBuf,
    run: String,
    manifest_sha256: String,
}

impl OpenedRun {
    /// The folder to read the run from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The pack the run came from, if it came from one.
    pub fn pack(&self) -> Option<&Path> {
        self.pack.as_ref().map(|p| p.path.as_path())
    }

    /// The SHA-256 of a pack's manifest: the run's address.
    pub fn manifest_sha256(&self) -> Option<&str> {
        self.pack.as_ref().map(|p| p.manifest_sha256.as_str())
    }

    /// Where a report of this run goes unless told otherwise: a folder run's
    /// own folder; for a pack (never changed) a folder named after the run
    /// beside it.
    pub fn default_output_dir(&self) -> PathBuf {
        match &self.pack {
            None => self.dir.clone(),
            Some(p) => match p.path.parent() {
                Some(parent) => parent.join(&p.run),
                None => PathBuf::from(&p.run),
            },
        }
    }

    /// Copies files written under `dir()` into `out`, keeping their paths
    /// relative to the run; returns the new paths. When `out` is `dir()`
    /// itself nothing is copied.
    pub fn publish(&self, written: &[PathBuf], out: &Path) -> Result<Vec<PathBuf>, PackError> {
        if out == self.dir {
            return Ok(written.to_vec());
        }
        let mut published = Vec::with_capacity(written.len());
        for from in written {
            let Ok(rel) = from.strip_prefix(&self.dir) else {
                published.push(from.clone());
                continue;
            };
            let to = out.join(rel);
            let write_err = |source| PackError::Write {
                path: to.clone(),
                source,
            };
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(write_err)?;
            }
            let bytes = std::fs::read(from).map_err(|source| PackError::Read {
                path: from.clone(),
                source,
            })?;
            crate::export::write_atomically(&to, &bytes).map_err(|e| match e {
                crate::ReportError::Write { path, source } => PackError::Write { path, source },
                other => PackError::Write {
                    path: to.clone(),
                    source: std::io::Error::other(other.to_string()),
                },
            })?;
            published.push(to);
        }
        Ok(published)
    }
}

/// Opens a run folder, or a pack (any file) with the default [`Limits`].
pub fn open(path: &Path) -> Result<OpenedRun, PackError> {
    open_with(path, &Limits::default())
}

/// [`open`] with other bounds (tests use small ones).
pub fn open_with(path: &Path, limits: &Limits) -> Result<OpenedRun, PackError> {
    if !path.is_file() {
        // A folder, or nothing: the evidence reader says what is missing.
        return Ok(OpenedRun {
            dir: path.to_path_buf(),
            pack: None,
            _unpacked: None,
        });
    }
    Unpacker::new(path, limits)?.run()
}

struct Unpacker<'a> {
    pack: &'a Path,
    limits: &'a Limits,
    temp: tempfile::TempDir,
    /// Set by the first entry, the manifest.
    manifest: Option<(Manifest, String, PathBuf)>,
    /// Path -> (size, sha256) of every file unpacked.
    seen: BTreeMap<String, (u64, String)>,
    total: u64,
}

impl<'a> Unpacker<'a> {
    fn new(pack: &'a Path, limits: &'a Limits) -> Result<Self, PackError> {
        let temp = tempfile::Builder::new()
            .prefix("labrun-pack-")
            .tempdir()
            .map_err(|source| PackError::Write {
                path: std::env::temp_dir(),
                source,
            })?;
        Ok(Unpacker {
            pack,
            limits,
            temp,
            manifest: None,
            seen: BTreeMap::new(),
            total: 0,
        })
    }

    fn run(mut self) -> Result<OpenedRun, PackError> {
        let file = std::fs::File::open(self.pack).map_err(|source| PackError::Read {
            path: self.pack.to_path_buf(),
            source,
        })?;
        // Header records (long names, PAX headers) are bounded before the
        // tar crate reads them whole.
        let mut archive = tar::Archive::new(TarRecords::new(flate2::read::GzDecoder::new(file)));
        let entries = archive.entries().map_err(|e| self.not_a_pack(e))?;
        for (index, entry) in entries.enumerate() {
            let entry = entry.map_err(|e| self.not_a_pack(e))?;
            if index >= self.limits.max_entries {
                return Err(self.refused(
                    &String::from_utf8_lossy(&entry.path_bytes()),
                    format!("a pack holds at most {} entries", self.limits.max_entries),
                ));
            }
            self.unpack(entry)?;
        }
        let Some((manifest, digest, root)) = self.manifest.take() else {
            return Err(self.not_a_pack("it is empty"));
        };
        self.check(&manifest)?;
        Ok(OpenedRun {
            dir: root,
            pack: Some(PackSource {
                path: self.pack.to_path_buf(),
                run: manifest.run,
                manifest_sha256: digest,
            }),
            _unpacked: Some(self.temp),
        })
    }

    fn unpack<R: Read>(&mut self, mut entry: tar::Entry<'_, R>) -> Result<(), PackError> {
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let kind = entry.header().entry_type();
        let is_dir = kind.is_dir();
        if !is_dir && !kind.is_file() {
            let what = match kind {
                tar::EntryType::Symlink | tar::EntryType::Link => {
                    let target = entry
                        .link_name_bytes()
                        .map(|t| String::from_utf8_lossy(&t).into_owned())
                        .unwrap_or_default();
                    format!("a link (to `{target}`)")
                }
                other => format!("a {other:?} entry"),
            };
            return Err(self.refused(
                &name,
                format!("{what}: a pack holds regular files and folders only"),
            ));
        }
        let rel = safe_relative_path(&name).map_err(|reason| self.refused(&name, reason))?;
        let size = entry.size();
        if size > self.limits.max_file_bytes {
            return Err(self.refused(
                &name,
                format!(
                    "{size} bytes, more than the {} a file of a pack may hold",
                    self.limits.max_file_bytes
                ),
            ));
        }
        let Some((_, _, root)) = &self.manifest else {
            return self.read_manifest(&name, &rel, is_dir, &mut entry);
        };
        let root = root.clone();
        if rel == MANIFEST_FILE {
            return Err(self.refused(&name, "a second manifest".into()));
        }
        let target = root.join(&rel);
        if is_dir {
            return std::fs::create_dir_all(&target).map_err(|source| PackError::Write {
                path: target,
                source,
            });
        }
        self.total += size;
        if self.total > self.limits.max_total_bytes {
            return Err(self.refused(
                &name,
                format!(
                    "the files so far unpack to {} bytes, more than the {} a pack may hold",
                    self.total, self.limits.max_total_bytes
                ),
            ));
        }
        let write_err = |source| PackError::Write {
            path: target.clone(),
            source,
        };
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(write_err)?;
        }
        let mut out = match std::fs::File::create_new(&target) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(self.refused(&name, "it appears twice".into()));
            }
            Err(e) => return Err(write_err(e)),
        };
        let mut hashing = Hashing::new();
        let mut buf = vec![0u8; 64 * 1024];
        // The header's size bounds the read; a longer body cannot slip past it.
        let mut body = (&mut entry).take(size);
        loop {
            let n = body.read(&mut buf).map_err(|e| self.not_a_pack(e))?;
            if n == 0 {
                break;
            }
            hashing.update(&buf[..n]);
            std::io::Write::write_all(&mut out, &buf[..n]).map_err(write_err)?;
        }
        let read = hashing.size;
        self.seen.insert(rel, (read, hashing.finish()));
        Ok(())
    }

    fn read_manifest<R: Read>(
        &mut self,
        name: &str,
        rel: &str,
        is_dir: bool,
        entry: &mut tar::Entry<'_, R>,
    ) -> Result<(), PackError> {
        if is_dir || rel != MANIFEST_FILE {
            return Err(self.refused(
                name,
                format!("the first entry of a pack must be its manifest, {MANIFEST_FILE}"),
            ));
        }
        let mut bytes = Vec::new();
        entry
            .take(self.limits.max_file_bytes)
            .read_to_end(&mut bytes)
            .map_err(|e| self.not_a_pack(e))?;
        let manifest = Manifest::from_bytes(&bytes).map_err(|reason| PackError::BadManifest {
            pack: self.pack.to_path_buf(),
            reason,
        })?;
        let root = self.temp.path().join(&manifest.run);
        std::fs::create_dir(&root).map_err(|source| PackError::Write {
            path: root.clone(),
            source,
        })?;
        self.manifest = Some((manifest, sha256_hex(&bytes), root));
        Ok(())
    }

    /// Every file the manifest names, with its size and digest, and nothing else.
    fn check(&mut self, manifest: &Manifest) -> Result<(), PackError> {
        let pack = self.pack.to_path_buf();
        for expected in &manifest.files {
            let Some((size, sha256)) = self.seen.remove(&expected.path) else {
                return Err(PackError::Missing {
                    pack,
                    file: expected.path.clone(),
                });
            };
            let detail = if size != expected.size {
                format!("{size} bytes where the manifest says {}", expected.size)
            } else if sha256 != expected.sha256 {
                format!(
                    "sha256 {sha256} where the manifest says {}",
                    expected.sha256
                )
            } else {
                continue;
            };
            return Err(PackError::Tampered {
                pack,
                file: expected.path.clone(),
                detail,
            });
        }
        match self.seen.keys().next() {
            Some(extra) => Err(PackError::Extra {
                pack,
                file: extra.clone(),
            }),
            None => Ok(()),
        }
    }

    fn refused(&self, entry: &str, reason: String) -> PackError {
        PackError::Refused {
            pack: self.pack.to_path_buf(),
            entry: entry.to_string(),
            reason,
        }
    }

    fn not_a_pack(&self, reason: impl ToString) -> PackError {
        PackError::NotAPack {
            path: self.pack.to_path_buf(),
            reason: reason.to_string(),
        }
    }
}

/// `a/b/c` (a folder may end in `/`): plain names only, so the path stays
/// inside the folder it is joined to.
fn safe_relative_path(name: &str) -> Result<String, String> {
    if name.starts_with('/') || name.starts_with('\\') || name.get(1..2) == Some(":") {
        return Err("an absolute path: a pack's paths are relative to the run".into());
    }
    let trimmed = name.strip_suffix('/').unwrap_or(name);
    let parts: Vec<&str> = trimmed.split('/').collect();
    if parts.contains(&"..") {
        return Err("a path with `..`, which would leave the run".into());
    }
    if trimmed.is_empty() || !parts.iter().all(|p| is_plain_name(p)) {
        return Err("not a plain relative path (empty, `.`, `\\` or NUL in a name)".into());
    }
    Ok(trimmed.to_string())
}
