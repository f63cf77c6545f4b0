//! `labrun fetch` of a whole lab takes its dataset's archive too, by the
//! real binary and offline: a tiny tar.gz the test makes, served from a
//! `--mirror` folder or a `file:`. A right digest leaves the archive in the
//! cache under its digest and a row that says so; a wrong one fails,
//! names both digests and keeps no copy. The lab's one tool is the
//! cheapest there is: a local file used as it is (no VM, no root).

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const LABRUN: &str = env!("CARGO_BIN_EXE_labrun");
const ARCHIVE: &str = "src-1.0.tar.gz";

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A tar.gz of two small files in one top-level folder.
fn tiny_archive() -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    for (name, body) in [
        ("src-1.0/README", &b"a tree to back up\n"[..]),
        ("src-1.0/lib/main.c", &b"int main(void) { return 0; }\n"[..]),
    ] {
        let mut header = tar::Header::new_gnu();
        header.set_size(body.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, name, body).unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap()
}

/// Writes the lab: one tool whose artifact is a local file used as it is,
/// and an `archive` dataset at `archive_file` pinned to `archive_sha`.
fn write_lab(dir: &Path, archive_file: &Path, archive_sha: &str) -> PathBuf {
    let tool = dir.join("tool");
    std::fs::write(&tool, b"#!/bin/sh\nexit 0\n").unwrap();
    let tool_sha = sha256_hex(&std::fs::read(&tool).unwrap());
    let lab = format!(
        r#"name: fetch-dataset
dataset:
  kind: archive
  artifact:
    file: {archive}
    sha256: "{archive_sha}"
tools:
  - name: tool
    version: "1.0"
    artifact:
      file: {tool}
      sha256: "{tool_sha}"
      extract: raw
    commands:
      init: ["{{bin}}", init, "{{repo}}"]
      backup: ["{{bin}}", backup, "{{repo}}", "{{source}}"]
      restore: ["{{bin}}", restore, "{{repo}}", "{{target}}"]
"#,
        archive = archive_file.display(),
        tool = tool.display(),
    );
    let path = dir.join("lab.yaml");
    std::fs::write(&path, lab).unwrap();
    path
}

/// `labrun -f LAB fetch` with its cache and state in `dir`, and the mirror
/// folder if one is given (none from the environment).
fn fetch(dir: &Path, lab: &Path, mirror: Option<&Path>) -> Output {
    let mut c = Command::new(LABRUN);
    c.arg("-f")
        .arg(lab)
        .arg("--cache")
        .arg(dir.join("cache"))
        .arg("--state")
        .arg(dir.join("state"));
    if let Some(m) = mirror {
        c.arg("--mirror").arg(m);
    }
    c.arg("fetch")
        .env_remove("LABRUN_MIRROR")
        .env_remove("LABRUN_HOST")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Every file under `dir` (none when it does not exist).
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn a_whole_lab_fetch_takes_the_dataset_archive_from_the_mirror() {
    let dir = tempfile::tempdir().unwrap();
    let body = tiny_archive();
    let sha = sha256_hex(&body);
    let mirror = dir.path().join("mirror");
    std::fs::create_dir_all(&mirror).unwrap();
    std::fs::write(mirror.join(ARCHIVE), &body).unwrap();
    // The lab's own source is nowhere: only the mirror can serve it.
    let lab = write_lab(dir.path(), &dir.path().join("absent").join(ARCHIVE), &sha);

    let out = fetch(dir.path(), &lab, Some(&mirror));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");

    let cached = dir.path().join("cache/artifacts").join(&sha).join(ARCHIVE);
    assert_eq!(std::fs::read(&cached).unwrap(), body);
    assert!(
        stdout.contains(&format!(
            "dataset: from mirror {}",
            mirror.join(ARCHIVE).display()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("  file     {}", cached.display())),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("  sha256   {sha} ok")), "{stdout}");
    // The tool and the archive.
    assert!(stdout.contains("ok: 2 artifact(s) verified"), "{stdout}");

    // Fetched once, it is the cache's: the mirror is no longer needed.
    std::fs::remove_file(mirror.join(ARCHIVE)).unwrap();
    let again = fetch(dir.path(), &lab, None);
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert!(
        again.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert!(stdout.contains("dataset: from cache"), "{stdout}");
}

#[test]
fn a_dataset_archive_with_a_wrong_digest_is_refused_and_not_kept() {
    let dir = tempfile::tempdir().unwrap();
    let body = tiny_archive();
    let actual = sha256_hex(&body);
    let archive = dir.path().join(ARCHIVE);
    std::fs::write(&archive, &body).unwrap();
    // The digest of other bytes: what a lab pinned before its upstream
    // re-packed the archive.
    let pinned = sha256_hex(b"another archive");
    let lab = write_lab(dir.path(), &archive, &pinned);

    let out = fetch(dir.path(), &lab, None);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        !out.status.success(),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("dataset"), "{stderr}");
    assert!(stderr.contains(&format!("expected {pinned}")), "{stderr}");
    assert!(stderr.contains(&format!("actual   {actual}")), "{stderr}");
    assert!(!stdout.contains("artifact(s) verified"), "{stdout}");

    // No copy under either digest, nor a partial anywhere in the cache.
    let cache = dir.path().join("cache");
    let kept: Vec<PathBuf> = files_under(&cache)
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name == ARCHIVE
                || name.starts_with(".partial-")
                || std::fs::read(p).is_ok_and(|b| b == body)
        })
        .collect();
    assert_eq!(kept, Vec::<PathBuf>::new(), "stderr:\n{stderr}");
    for digest in [&pinned, &actual] {
        let d = cache.join("artifacts").join(digest);
        assert!(files_under(&d).is_empty(), "{} holds files", d.display());
    }
}
