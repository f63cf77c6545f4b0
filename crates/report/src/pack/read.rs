//! Opening a run: a folder is read in place; a pack is checked entry by
//! entry and unpacked into a private temporary folder, then every file is
//! held against the manifest. Nothing in a pack can write outside that
//! folder: only regular files and folders, relative paths of plain names,
//! each file and the whole run bounded in size.

use super::error::PackError;
use super::limits::Limits;
use super::manifest::{Hashing, MANIFEST_FILE, Manifest, safe_relative_path, sha256_hex};
use labrun_dataset::unpack::TarRecords;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

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
    /// own folder; for a pack (never changed) a folder named after the pack
    /// file beside it ([`report_dir_of`]), never after the name its
    /// manifest gives, which a pack's maker chose.
    pub fn default_output_dir(&self) -> PathBuf {
        match &self.pack {
            None => self.dir.clone(),
            Some(p) => report_dir_of(&p.path),
        }
    }

    /// Copies files written under `dir()` into `out`, keeping their paths
    /// relative to the run; returns the new paths. When `out` is `dir()`
    /// itself nothing is copied. A folder that holds a run of its own is
    /// refused before anything is copied: its summaries are its run's.
    pub fn publish(&self, written: &[PathBuf], out: &Path) -> Result<Vec<PathBuf>, PackError> {
        if out == self.dir || same_folder(out, &self.dir) {
            return Ok(written.to_vec());
        }
        if super::is_run_folder(out) {
            return Err(PackError::OutputHoldsRun {
                path: out.to_path_buf(),
            });
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

/// The folder a report of the pack at `pack` goes to by default: beside it,
/// named after the file (`results/x.tar.gz` -> `results/x/`, as `labrun
/// runs` expects); a file of another ending gets `<name>.report/`.
pub fn report_dir_of(pack: &Path) -> PathBuf {
    let name = pack.file_name().unwrap_or_default().to_string_lossy();
    let folder = match name
        .strip_suffix(".tar.gz")
        .or_else(|| name.strip_suffix(".tgz"))
    {
        Some(stem) if !stem.is_empty() => stem.to_string(),
        _ => format!("{name}.report"),
    };
    pack.with_file_name(folder)
}

/// Both name one folder (links and `.` resolved); false if either is absent.
fn same_folder(a: &Path, b: &Path) -> bool {
    matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b)
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
    let temp = tempfile::Builder::new()
        .prefix("labrun-pack-")
        .tempdir()
        .map_err(|source| PackError::Write {
            path: std::env::temp_dir(),
            source,
        })?;
    let mut unpacker = Unpacker::new(path, limits, Sink::Folder(temp));
    let digest = unpacker.run(open_pack(path)?)?;
    let (Some((_, _, root)), Sink::Folder(temp)) = (unpacker.manifest, unpacker.sink) else {
        return Err(PackError::NotAPack {
            path: path.to_path_buf(),
            reason: "it is empty".into(),
        });
    };
    Ok(OpenedRun {
        dir: root,
        pack: Some(PackSource {
            path: path.to_path_buf(),
            manifest_sha256: digest,
        }),
        _unpacked: Some(temp),
    })
}

/// A pack read into memory, every file checked against its manifest as
/// [`open`] checks it, and those under `raw/` kept: what
/// [`crate::evidence::load_in_memory`] reads. Nothing is written to disk, so
/// reading many stored runs costs their bytes, not a folder each.
#[derive(Debug)]
pub struct PackInMemory {
    /// The run's name, as the manifest gives it.
    pub run: String,
    pub manifest_sha256: String,
    pub files: crate::evidence_file::InMemory,
}

/// Reads a pack's bytes into memory ([`PackInMemory`]); `name` names the
/// pack in messages (a file, or where a store keeps it).
pub fn read_in_memory(name: &Path, bytes: &[u8]) -> Result<PackInMemory, PackError> {
    let limits = Limits::default();
    let mut unpacker = Unpacker::new(name, &limits, Sink::Memory(Default::default()));
    let digest = unpacker.run(bytes)?;
    let (Some((manifest, _, _)), Sink::Memory(files)) = (unpacker.manifest, unpacker.sink) else {
        return Err(PackError::NotAPack {
            path: name.to_path_buf(),
            reason: "it is empty".into(),
        });
    };
    Ok(PackInMemory {
        run: manifest.run,
        manifest_sha256: digest,
        files,
    })
}

fn open_pack(path: &Path) -> Result<std::fs::File, PackError> {
    std::fs::File::open(path).map_err(|source| PackError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// Where an unpacked file's bytes go.
enum Sink {
    /// Into a private temporary folder ([`open`]).
    Folder(tempfile::TempDir),
    /// Into memory, `raw/` only ([`read_in_memory`]); every file is still
    /// hashed and checked.
    Memory(crate::evidence_file::InMemory),
}

struct Unpacker<'a> {
    pack: &'a Path,
    limits: &'a Limits,
    sink: Sink,
    /// Set by the first entry, the manifest: it, its digest, and the run's
    /// root (a folder under the temporary one; empty in memory).
    manifest: Option<(Manifest, String, PathBuf)>,
    /// Path -> (size, sha256) of every file unpacked.
    seen: BTreeMap<String, (u64, String)>,
    total: u64,
    /// One read buffer for every entry (a pack holds dozens of small files).
    buf: Vec<u8>,
}

impl<'a> Unpacker<'a> {
    fn new(pack: &'a Path, limits: &'a Limits, sink: Sink) -> Self {
        Unpacker {
            pack,
            limits,
            sink,
            manifest: None,
            seen: BTreeMap::new(),
            total: 0,
            buf: vec![0u8; 64 * 1024],
        }
    }

    /// Unpacks every entry of `file` (the pack's bytes) and checks them
    /// all; the manifest's digest.
    fn run(&mut self, file: impl Read) -> Result<String, PackError> {
        // Header records (long names, PAX headers) are bounded before the
        // tar crate reads them whole.
        let mut archive = tar::Archive::new(TarRecords::new(flate2::read::GzDecoder::new(file)));
        let entries = archive.entries().map_err(|e| self.not_a_pack(e))?;
        for (index, entry) in entries.enumerate() {
            let entry = entry.map_err(|e| self.not_a_pack(e))?;
            if let Err(reason) = self.limits.check_entries(index + 1) {
                return Err(self.refused(&String::from_utf8_lossy(&entry.path_bytes()), reason));
            }
            self.unpack(entry)?;
        }
        let Some((manifest, digest, root)) = self.manifest.take() else {
            return Err(self.not_a_pack("it is empty"));
        };
        self.check(&manifest)?;
        let digest_out = digest.clone();
        self.manifest = Some((manifest, digest, root));
        Ok(digest_out)
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
        // The manifest has a bound of its own (it is read into memory).
        let Some((_, _, root)) = &self.manifest else {
            return self.read_manifest(&name, &rel, is_dir, &mut entry);
        };
        self.limits
            .check_file(size)
            .map_err(|reason| self.refused(&name, reason))?;
        let root = root.clone();
        if rel == MANIFEST_FILE {
            return Err(self.refused(&name, "a second manifest".into()));
        }
        let target = root.join(&rel);
        if is_dir {
            return match &self.sink {
                Sink::Folder(_) => {
                    std::fs::create_dir_all(&target).map_err(|source| PackError::Write {
                        path: target,
                        source,
                    })
                }
                Sink::Memory(_) => Ok(()),
            };
        }
        self.total += size;
        self.limits
            .check_total(self.total)
            .map_err(|reason| self.refused(&name, reason))?;
        let write_err = |source| PackError::Write {
            path: target.clone(),
            source,
        };
        let mut out: Box<dyn std::io::Write> = match &self.sink {
            Sink::Folder(_) => {
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent).map_err(write_err)?;
                }
                match std::fs::File::create_new(&target) {
                    Ok(f) => Box::new(f),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        return Err(self.refused(&name, "it appears twice".into()));
                    }
                    Err(e) => return Err(write_err(e)),
                }
            }
            Sink::Memory(_) if self.seen.contains_key(&rel) => {
                return Err(self.refused(&name, "it appears twice".into()));
            }
            Sink::Memory(_) => Box::new(std::io::sink()),
        };
        // In memory only `raw/` is kept: the evidence, not the summaries
        // made from it.
        let keep = matches!(self.sink, Sink::Memory(_)) && rel.starts_with("raw/");
        let mut kept = Vec::new();
        let mut hashing = Hashing::new();
        let mut buf = std::mem::take(&mut self.buf);
        // The header's size bounds the read; a longer body cannot slip past it.
        let mut body = (&mut entry).take(size);
        let copied = loop {
            let n = match body.read(&mut buf) {
                Ok(n) => n,
                Err(e) => break Err(self.not_a_pack(e)),
            };
            if n == 0 {
                break Ok(());
            }
            hashing.update(&buf[..n]);
            if keep {
                kept.extend_from_slice(&buf[..n]);
            }
            if let Err(e) = out.write_all(&buf[..n]) {
                break Err(write_err(e));
            }
        };
        self.buf = buf;
        copied?;
        drop(out);
        if let Sink::Memory(files) = &mut self.sink
            && keep
        {
            files.files.insert(PathBuf::from(&rel), kept);
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
        self.limits
            .check_manifest(entry.size())
            .map_err(|reason| self.refused(name, reason))?;
        let mut bytes = Vec::new();
        // The header's size was checked; a longer body cannot slip past it.
        entry
            .take(self.limits.max_manifest_bytes)
            .read_to_end(&mut bytes)
            .map_err(|e| self.not_a_pack(e))?;
        let manifest = Manifest::from_bytes(&bytes).map_err(|reason| PackError::BadManifest {
            pack: self.pack.to_path_buf(),
            reason,
        })?;
        let root = match &self.sink {
            Sink::Folder(temp) => {
                let root = temp.path().join(&manifest.run);
                std::fs::create_dir(&root).map_err(|source| PackError::Write {
                    path: root.clone(),
                    source,
                })?;
                root
            }
            Sink::Memory(_) => PathBuf::new(),
        };
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
