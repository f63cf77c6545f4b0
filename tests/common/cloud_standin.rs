//! The stand-in cloud image (`images/cloud-standin/build.sh`), built once
//! per version of its recipe and kept in the test cache: a few minutes to
//! build, and the official image cannot be downloaded on the test machines.
//! tests/vm.rs and tests/nonroot.rs share it, so one build serves both.

// Each test that includes this file uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The image, built into `cache` when missing (needs root and a loop device).
pub fn image(cache: &str) -> PathBuf {
    let folder = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/images/cloud-standin"));
    let key = sha256_hex(&folder_fingerprint(folder));
    let image = PathBuf::from(format!("{cache}/cloud-standin-{}.qcow2", &key[..16]));
    if !image.exists() {
        std::fs::create_dir_all(cache).unwrap();
        let t = Instant::now();
        let partial = image.with_extension("partial.qcow2");
        let st = Command::new("bash")
            .arg(folder.join("build.sh"))
            .arg(&partial)
            .status()
            .unwrap();
        assert!(st.success(), "building the stand-in cloud image failed");
        std::fs::rename(&partial, &image).unwrap();
        eprintln!(
            "stand-in cloud image built in {:.0} s",
            t.elapsed().as_secs_f64()
        );
    }
    image
}

/// Every file's relative path and content digest, in a stable order.
fn folder_fingerprint(folder: &Path) -> Vec<u8> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, base, out);
            } else {
                let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    let mut files = Vec::new();
    walk(folder, folder, &mut files);
    files.sort();
    let mut bytes = Vec::new();
    for (rel, content) in files {
        bytes.extend_from_slice(rel.as_bytes());
        bytes.push(0);
        bytes.extend_from_slice(sha256_hex(&content).as_bytes());
        bytes.push(b'\n');
    }
    bytes
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}
