//! The one file a Python build makes: an uncompressed tar of the wheels,
//! a manifest naming each with its SHA-256 and the entry point, and the
//! same digests as `SHA256SUMS` (what `sha256sum --strict -c` reads in the
//! guest before anything is installed). Entries are written in name order
//! with fixed owners, modes and times, so the same wheels make the same
//! bundle, and the lab pins the bundle's digest like a binary's.
//!
//! ```text
//! manifest.json     {name, version, suite, entry_point, wheels: [{file, sha256}]}
//! SHA256SUMS        "<sha256>  wheels/<file>" per wheel
//! wheels/<file>     each wheel
//! ```

use super::PythonBuild;
use super::wheels::Built;
use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};
use std::path::Path;

/// The manifest's name in the bundle.
pub const MANIFEST: &str = "manifest.json";
/// The digest list's name in the bundle.
pub const SUMS: &str = "SHA256SUMS";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub name: String,
    pub version: String,
    pub suite: String,
    pub entry_point: String,
    pub wheels: Vec<Wheel>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Wheel {
    pub file: String,
    pub sha256: String,
}

impl Manifest {
    pub fn new(b: &PythonBuild, built: &Built) -> Manifest {
        Manifest {
            name: b.name.clone(),
            version: b.version.clone(),
            suite: b.suite.clone(),
            entry_point: b.entry_point.clone(),
            wheels: built
                .wheels
                .iter()
                .map(|(file, sha256)| Wheel {
                    file: file.clone(),
                    sha256: sha256.clone(),
                })
                .collect(),
        }
    }

    /// `sha256sum`'s format, one wheel a line.
    pub fn sums(&self) -> String {
        self.wheels
            .iter()
            .map(|w| format!("{}  wheels/{}\n", w.sha256, w.file))
            .collect()
    }

    /// The wheels and digests in lines for the build record and evidence.
    pub fn to_text(&self) -> String {
        let mut text = format!(
            "{}=={} for Debian {}, entry point {}\n",
            self.name, self.version, self.suite, self.entry_point
        );
        for w in &self.wheels {
            text.push_str(&format!("wheel {} sha256 {}\n", w.file, w.sha256));
        }
        text
    }
}

/// Writes the bundle at `path` from the wheels in `wheels_dir`.
pub fn write(path: &Path, manifest: &Manifest, wheels_dir: &Path) -> io::Result<()> {
    let file = std::fs::File::create(path)?;
    let mut tar = tar::Builder::new(io::BufWriter::new(file));
    let json = serde_json::to_vec_pretty(manifest).map_err(io::Error::other)?;
    append(&mut tar, MANIFEST, &json)?;
    append(&mut tar, SUMS, manifest.sums().as_bytes())?;
    for w in &manifest.wheels {
        let bytes = std::fs::read(wheels_dir.join(&w.file))?;
        append(&mut tar, &format!("wheels/{}", w.file), &bytes)?;
    }
    tar.into_inner()?.flush()
}

fn append<W: Write>(tar: &mut tar::Builder<W>, name: &str, bytes: &[u8]) -> io::Result<()> {
    let mut header = tar::Header::new_ustar();
    header.set_size(bytes.len() as u64);
    header.set_mode(0o644);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(0);
    header.set_entry_type(tar::EntryType::Regular);
    tar.append_data(&mut header, name, bytes)
}

/// The manifest of a bundle, read back (for `fetch`'s listing and the
/// evidence of a run); checks that every wheel it names is there with its
/// digest.
pub fn read_manifest(path: &Path) -> io::Result<Manifest> {
    let mut archive = tar::Archive::new(std::fs::File::open(path)?);
    let mut manifest: Option<Manifest> = None;
    let mut digests = Vec::new();
    for entry in archive.entries()? {
        let mut entry = entry?;
        let name = entry.path()?.to_string_lossy().into_owned();
        if name == MANIFEST {
            let mut text = Vec::new();
            entry.by_ref().take(1 << 20).read_to_end(&mut text)?;
            manifest = Some(serde_json::from_slice(&text).map_err(io::Error::other)?);
        } else if let Some(file) = name.strip_prefix("wheels/") {
            let mut w = crate::digest::HashingWriter::new(io::sink());
            io::copy(&mut entry, &mut w)?;
            digests.push((file.to_string(), w.finish().1));
        }
    }
    let manifest = manifest.ok_or_else(|| io::Error::other("the bundle has no manifest.json"))?;
    for w in &manifest.wheels {
        if !digests.iter().any(|(f, d)| *f == w.file && *d == w.sha256) {
            return Err(io::Error::other(format!(
                "the bundle's {} is missing or differs from its manifest's digest",
                w.file
            )));
        }
    }
    Ok(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::sha256_file;

    fn manifest(dir: &Path) -> Manifest {
        std::fs::write(dir.join("a-1-py3-none-any.whl"), b"wheel a").unwrap();
        std::fs::write(dir.join("b-2-cp311-cp311-linux_x86_64.whl"), b"wheel b").unwrap();
        let wheel = |f: &str| Wheel {
            file: f.into(),
            sha256: sha256_file(&dir.join(f)).unwrap(),
        };
        Manifest {
            name: "a".into(),
            version: "1".into(),
            suite: "bookworm".into(),
            entry_point: "a".into(),
            wheels: vec![
                wheel("a-1-py3-none-any.whl"),
                wheel("b-2-cp311-cp311-linux_x86_64.whl"),
            ],
        }
    }

    /// The same wheels make the same bundle (the lab pins its digest), and
    /// it reads back with every wheel checked.
    #[test]
    fn the_same_wheels_make_the_same_bundle() {
        let dir = tempfile::tempdir().unwrap();
        let m = manifest(dir.path());
        let (one, two) = (dir.path().join("1.tar"), dir.path().join("2.tar"));
        write(&one, &m, dir.path()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        write(&two, &m, dir.path()).unwrap();
        assert_eq!(sha256_file(&one).unwrap(), sha256_file(&two).unwrap());
        assert_eq!(read_manifest(&one).unwrap(), m);
        assert!(
            m.sums()
                .starts_with(&format!("{}  wheels/a-1", m.wheels[0].sha256))
        );
    }

    #[test]
    fn a_wheel_that_differs_from_the_manifest_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = manifest(dir.path());
        let path = dir.path().join("b.tar");
        m.wheels[1].sha256 = "0".repeat(64);
        write(&path, &m, dir.path()).unwrap();
        let err = read_manifest(&path).unwrap_err().to_string();
        assert!(err.contains("b-2-cp311"), "{err}");
    }
}
