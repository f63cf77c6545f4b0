//! Manifest files: where they go by default, and writing them so a reader
//! never sees half of one.

use crate::error::DatasetError;
use labrun_evidence::digest::HashingWriter;
use labrun_evidence::{EntryKind, Manifest, ManifestEntry};
use std::fs::{self, File};
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

/// `DIR.manifest.jsonl` beside `DIR`, never inside it (a manifest inside the
/// tree would be backed up and counted as an extra file).
pub fn default_manifest_path(dir: &Path) -> Result<PathBuf, DatasetError> {
    let abs = std::path::absolute(dir).map_err(|e| DatasetError::io("resolving", dir, e))?;
    let name = abs.file_name().filter(|n| *n != "..");
    match (name, abs.parent()) {
        (Some(name), Some(parent)) => {
            let mut file = name.to_os_string();
            file.push(".manifest.jsonl");
            Ok(parent.join(file))
        }
        _ => Err(DatasetError::NoDefaultManifest {
            path: dir.to_path_buf(),
        }),
    }
}

/// Refuses a manifest path inside the tree it describes.
pub fn check_outside(manifest: &Path, dir: &Path) -> Result<(), DatasetError> {
    let m =
        std::path::absolute(manifest).map_err(|e| DatasetError::io("resolving", manifest, e))?;
    let d = std::path::absolute(dir).map_err(|e| DatasetError::io("resolving", dir, e))?;
    if m.starts_with(&d) {
        return Err(DatasetError::ManifestInsideTree {
            manifest: manifest.to_path_buf(),
            dir: dir.to_path_buf(),
        });
    }
    Ok(())
}

/// Writes `manifest` (sorted by the caller) to `path` whole or not at all
/// ([`write_whole`]).
pub fn write_manifest(path: &Path, manifest: &Manifest) -> Result<(), DatasetError> {
    write_whole(path, |w| manifest.write_to(w)).map(|_| ())
}

/// Writes `path` so that a reader sees the old file or the whole new one:
/// `write` fills a temporary file beside it, hashed as it goes and synced,
/// which is then renamed over `path` (and removed if anything fails).
/// Returns the SHA-256 of the bytes written.
pub(crate) fn write_whole(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<String, DatasetError> {
    let tmp = with_suffix(path, ".tmp");
    let assemble = || -> std::io::Result<String> {
        let file = File::create(&tmp)?;
        let mut w = HashingWriter::new(BufWriter::new(&file));
        write(&mut w)?;
        w.flush()?;
        let (inner, sha256) = w.finish();
        drop(inner);
        file.sync_all()?;
        Ok(sha256)
    };
    let written = assemble()
        .map_err(|e| DatasetError::io("writing", &tmp, e))
        .and_then(|sha256| {
            fs::rename(&tmp, path)
                .map_err(|e| DatasetError::io("renaming the new manifest to", path, e))?;
            Ok(sha256)
        });
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

pub fn read_manifest(path: &Path) -> Result<Manifest, DatasetError> {
    let file = File::open(path).map_err(|e| DatasetError::io("opening manifest", path, e))?;
    Manifest::read_from(BufReader::new(file))
        .map_err(|e| DatasetError::io("reading manifest", path, e))
}

/// The entries of the manifest file `path`, one at a time (a tree of
/// millions of files is never held).
pub(crate) fn read_entries(
    path: &Path,
) -> Result<impl Iterator<Item = Result<ManifestEntry, DatasetError>> + '_, DatasetError> {
    let file = File::open(path).map_err(|e| DatasetError::io("opening manifest", path, e))?;
    let reader = labrun_evidence::ManifestReader::new(BufReader::new(file))
        .map_err(|e| DatasetError::io("reading manifest", path, e))?;
    Ok(reader.map(move |e| e.map_err(|e| DatasetError::io("reading manifest", path, e))))
}

/// A manifest written as its tree was scanned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenManifest {
    pub entries: usize,
    /// Regular files among the entries.
    pub files: u64,
    /// Bytes of regular files.
    pub file_bytes: u64,
    /// SHA-256 of the file, as [`labrun_evidence::digest::sha256_hex`] of
    /// [`Manifest::write_to`]'s bytes gives it: the tree's content address.
    pub sha256: String,
}

/// Scans `dir` into the manifest file `path` (as [`write_manifest`] of
/// [`crate::scan`] would write it, byte for byte) without holding the
/// manifest.
pub fn scan_to_file(dir: &Path, path: &Path) -> std::io::Result<WrittenManifest> {
    let mut out = ManifestFileWriter::create(path)?;
    crate::scan_each(dir, &mut |e| out.push(&e))?;
    Ok(out.finish()?)
}

/// As [`scan_to_file`], reporting (bytes hashed, bytes of the tree's files)
/// to `progress`: the tree is walked once first to find the total.
pub fn scan_to_file_with_progress(
    dir: &Path,
    path: &Path,
    progress: crate::Progress,
) -> std::io::Result<WrittenManifest> {
    let total = crate::scan_metadata_stream::file_bytes(dir)?;
    let mut out = ManifestFileWriter::create(path)?;
    crate::scan_stream::scan_each_with_progress(dir, &mut |e| out.push(&e), total, progress)?;
    Ok(out.finish()?)
}

/// Writes a manifest file entry by entry, in the order given (the caller's
/// is manifest order), holding none of it: the entries go to a side file
/// as they come, and the header, which counts them, is written before them
/// once the count is known. As [`write_manifest`], the file appears whole
/// or not at all; dropped unfinished, it leaves nothing behind.
pub struct ManifestFileWriter {
    path: PathBuf,
    body_path: PathBuf,
    body: Option<BufWriter<File>>,
    entries: usize,
    files: u64,
    file_bytes: u64,
}

impl ManifestFileWriter {
    pub fn create(path: &Path) -> Result<ManifestFileWriter, DatasetError> {
        let body_path = with_suffix(path, ".body.tmp");
        let body =
            File::create(&body_path).map_err(|e| DatasetError::io("creating", &body_path, e))?;
        Ok(ManifestFileWriter {
            path: path.to_path_buf(),
            body_path,
            body: Some(BufWriter::new(body)),
            entries: 0,
            files: 0,
            file_bytes: 0,
        })
    }

    pub fn push(&mut self, e: &ManifestEntry) -> Result<(), DatasetError> {
        self.entries += 1;
        if e.kind == EntryKind::File {
            self.files += 1;
            self.file_bytes += e.size;
        }
        let Some(body) = self.body.as_mut() else {
            return Ok(());
        };
        labrun_evidence::manifest::write_entry(body, e)
            .map_err(|err| DatasetError::io("writing", &self.body_path, err))
    }

    pub fn finish(mut self) -> Result<WrittenManifest, DatasetError> {
        if let Some(mut body) = self.body.take() {
            body.flush()
                .map_err(|e| DatasetError::io("writing", &self.body_path, e))?;
        }
        let entries = self.entries;
        let body_path = &self.body_path;
        let sha256 = write_whole(&self.path, |w| {
            labrun_evidence::manifest::write_header(&mut *w, entries)?;
            std::io::copy(&mut BufReader::new(File::open(body_path)?), w)?;
            Ok(())
        })?;
        Ok(WrittenManifest {
            entries: self.entries,
            files: self.files,
            file_bytes: self.file_bytes,
            sha256,
        })
    }
}

impl Drop for ManifestFileWriter {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.body_path);
    }
}

pub(crate) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_manifest_sits_beside_the_tree() {
        assert_eq!(
            default_manifest_path(Path::new("/srv/src/")).unwrap(),
            PathBuf::from("/srv/src.manifest.jsonl")
        );
        let cwd = std::env::current_dir().unwrap();
        let mut expected = cwd.file_name().unwrap().to_os_string();
        expected.push(".manifest.jsonl");
        assert_eq!(
            default_manifest_path(Path::new(".")).unwrap(),
            cwd.parent().unwrap().join(expected)
        );
        assert!(default_manifest_path(Path::new("/")).is_err());
    }

    #[test]
    fn a_manifest_inside_the_tree_is_refused() {
        assert!(check_outside(Path::new("/srv/src/m.jsonl"), Path::new("/srv/src")).is_err());
        assert!(check_outside(Path::new("/srv/src.manifest.jsonl"), Path::new("/srv/src")).is_ok());
    }

    #[test]
    fn write_then_read() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("m.jsonl");
        let m = Manifest::default();
        write_manifest(&p, &m).unwrap();
        assert_eq!(read_manifest(&p).unwrap(), m);
        assert!(!tmp.path().join("m.jsonl.tmp").exists());
        let err = read_manifest(&tmp.path().join("nope")).unwrap_err();
        assert!(err.to_string().contains("nope"));
    }
}
