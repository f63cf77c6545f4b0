//! Manifest files: where they go by default, and writing them so a reader
//! never sees half of one.

use crate::error::DatasetError;
use labrun_evidence::Manifest;
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

/// Writes `manifest` (sorted by the caller) to `path` via a temporary file
/// and a rename, so the file is either the old one or the whole new one.
pub fn write_manifest(path: &Path, manifest: &Manifest) -> Result<(), DatasetError> {
    let mut tmp_name = path.as_os_str().to_os_string();
    tmp_name.push(".tmp");
    let tmp = PathBuf::from(tmp_name);
    let write = || -> std::io::Result<()> {
        let file = File::create(&tmp)?;
        let mut w = BufWriter::new(&file);
        manifest.write_to(&mut w)?;
        w.flush()?;
        drop(w);
        file.sync_all()
    };
    write().map_err(|e| DatasetError::io("writing", &tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| DatasetError::io("renaming the new manifest to", path, e))
}

pub fn read_manifest(path: &Path) -> Result<Manifest, DatasetError> {
    let file = File::open(path).map_err(|e| DatasetError::io("opening manifest", path, e))?;
    Manifest::read_from(BufReader::new(file))
        .map_err(|e| DatasetError::io("reading manifest", path, e))
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
