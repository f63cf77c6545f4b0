//! `labrun check` refuses what the run would refuse (issue item 15): its
//! exit status and its last line follow whether every tree can be used, so
//! a CI gate on `check` does not pass a lab whose run stops at once. Each
//! hostile dataset is made here, small, in a tempdir.

use std::path::Path;
use std::process::{Command, Output};

const TOOL: &str = r#"tools:
  - name: restic
    version: 0.14.0
    artifact:
      apt: {package: restic, version: 0.14.0-1+b5}
      sha256: 9d7e8c210736f3f15ed7cf425ab56aa5259b07d8422b958494bfd4359b5024d1
      extract: {deb-member: usr/bin/restic}
    env: {RESTIC_PASSWORD: lab-only-not-a-secret}
    secret_env: [RESTIC_PASSWORD]
    commands:
      init: ["{bin}", init, -r, "{repo}"]
      backup: {argv: ["{bin}", backup, -r, "{repo}", .], cwd: "{source}"}
      restore: ["{bin}", restore, "{snapshot}", -r, "{repo}", --target, "{target}"]
"#;

/// `labrun check` on a lab of `dataset` (YAML lines), its cache in `dir`.
fn check(dir: &Path, dataset: &str) -> Output {
    let lab = dir.join("lab.yaml");
    std::fs::write(&lab, format!("name: refuses\n{dataset}\n{TOOL}")).unwrap();
    Command::new(env!("CARGO_BIN_EXE_labrun"))
        .args(["check", "-f"])
        .arg(&lab)
        .env("LABRUN_CACHE", dir.join("cache"))
        .output()
        .expect("labrun runs")
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Refused: status 1, no "ok:" line, the tree's reason on stdout and the
/// verdict naming the tree on stderr.
fn assert_refused(out: &Output, reason: &str) {
    let all = text(out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("ok: "), "{all}");
    assert!(
        stdout.contains("tree 1: cannot be used:") && stdout.contains(reason),
        "{all}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the run would refuse tree 1 of the dataset"),
        "{all}"
    );
}

/// A tar (uncompressed) of `entries`, names written raw so a test can name
/// what a careful writer refuses; returns its SHA-256.
fn tar(path: &Path, entries: &[(&str, &[u8])]) -> String {
    let mut b = tar::Builder::new(Vec::new());
    for (name, data) in entries {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Regular);
        h.as_gnu_mut().unwrap().name[..name.len()].copy_from_slice(name.as_bytes());
        h.set_cksum();
        b.append(&h, *data).unwrap();
    }
    let bytes = b.into_inner().unwrap();
    std::fs::write(path, &bytes).unwrap();
    labrun_artifact::digest::sha256_hex(&bytes)
}

#[test]
fn a_usable_folder_ends_with_the_ok_line_and_status_0() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("a"), b"hello").unwrap();
    let out = check(
        dir.path(),
        &format!("dataset: {{kind: files, path: '{}'}}", data.display()),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("ok: ") && last.ends_with(" is valid"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_fifo_as_the_dataset_path_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let out = check(
        dir.path(),
        &format!("dataset: {{kind: files, path: '{}'}}", fifo.display()),
    );
    assert_refused(&out, "is not a folder");
}

#[test]
fn an_empty_folder_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("empty");
    std::fs::create_dir(&data).unwrap();
    let out = check(
        dir.path(),
        &format!("dataset: {{kind: files, path: '{}'}}", data.display()),
    );
    assert_refused(&out, "holds no file");
}

#[test]
fn a_name_that_is_not_utf8_is_refused() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join(std::ffi::OsStr::from_bytes(b"bad\xff")), b"1").unwrap();
    let out = check(
        dir.path(),
        &format!("dataset: {{kind: files, path: '{}'}}", data.display()),
    );
    assert_refused(&out, "not UTF-8");
}

#[test]
fn an_archive_with_a_dotdot_entry_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("bad.tar");
    let sha = tar(&archive, &[("../escape", b"x")]);
    let out = check(
        dir.path(),
        &format!(
            "dataset: {{kind: archive, artifact: {{file: '{}', sha256: {sha}}}}}",
            archive.display()
        ),
    );
    assert_refused(&out, "entry `../escape`");
}

#[test]
fn an_archive_whose_pinned_sha256_is_not_the_file_s_is_refused_as_fetch_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("good.tar");
    let sha = tar(&archive, &[("a/one.txt", b"12345")]);
    let wrong = "ab".repeat(32);
    let out = check(
        dir.path(),
        &format!(
            "dataset: {{kind: archive, artifact: {{file: '{}', sha256: {wrong}}}}}",
            archive.display()
        ),
    );
    assert_refused(&out, &format!("has SHA-256 {sha}, not the pinned {wrong}"));
}

#[test]
fn a_series_says_which_tree_the_run_would_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good");
    std::fs::create_dir(&good).unwrap();
    std::fs::write(good.join("a"), b"hello").unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = check(
        dir.path(),
        &format!(
            "dataset:\n  kind: trees\n  trees:\n    - files: '{}'\n    - files: '{}'",
            good.display(),
            empty.display()
        ),
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("ok: "),
        "{all}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the run would refuse tree 2 of the dataset"),
        "{all}"
    );
}
