//! File and directory transfer against a real OpenSSH server. The server runs
//! on this machine, so the "remote" files are local paths the test can check
//! directly.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Instant;

use common::{random_file, sha256_file, start_and_connect};

const LARGE: usize = 64 * 1024 * 1024;

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn large_upload_and_download_are_byte_exact() {
    let (sshd, session) = start_and_connect().await;
    let local = tempfile::tempdir().unwrap();
    let remote = tempfile::tempdir().unwrap();
    let source = local.path().join("source.bin");
    random_file(&source, LARGE);
    let source_sha = sha256_file(&source);

    let remote_file = remote.path().join("up.bin");
    let remote_str = remote_file.to_str().unwrap();
    let t = Instant::now();
    session.upload(&source, remote_str, 0o640).await.unwrap();
    let up = t.elapsed();
    assert_eq!(
        sha256_file(&remote_file),
        source_sha,
        "sshd log:\n{}",
        sshd.log()
    );
    let mode = std::fs::metadata(&remote_file)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777;
    assert_eq!(mode, 0o640);
    // Only the final file: the temporary was renamed, not left behind.
    assert_eq!(names_in(remote.path()), ["up.bin"]);

    let back = local.path().join("back.bin");
    let t = Instant::now();
    session.download(remote_str, &back).await.unwrap();
    let down = t.elapsed();
    assert_eq!(sha256_file(&back), source_sha);
    assert_eq!(names_in(local.path()), ["back.bin", "source.bin"]);

    let mib = (LARGE / (1024 * 1024)) as f64;
    eprintln!(
        "64 MiB: upload {up:.2?} ({:.0} MiB/s), download {down:.2?} ({:.0} MiB/s)",
        mib / up.as_secs_f64(),
        mib / down.as_secs_f64()
    );
}

#[tokio::test]
async fn upload_replaces_an_existing_file_and_handles_awkward_names() {
    let (_sshd, session) = start_and_connect().await;
    let local = tempfile::tempdir().unwrap();
    let remote = tempfile::tempdir().unwrap();
    let source = local.path().join("s");
    std::fs::write(&source, b"new contents").unwrap();
    let target = remote.path().join("it's a $name");
    std::fs::write(&target, b"old contents that are longer").unwrap();
    session
        .upload(&source, target.to_str().unwrap(), 0o755)
        .await
        .unwrap();
    assert_eq!(std::fs::read(&target).unwrap(), b"new contents");
    let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o755);

    // An empty file is a file too.
    let empty = local.path().join("empty");
    std::fs::write(&empty, b"").unwrap();
    let remote_empty = remote.path().join("empty");
    session
        .upload(&empty, remote_empty.to_str().unwrap(), 0o600)
        .await
        .unwrap();
    assert_eq!(std::fs::read(&remote_empty).unwrap(), b"");
    let back = local.path().join("empty-back");
    session
        .download(remote_empty.to_str().unwrap(), &back)
        .await
        .unwrap();
    assert_eq!(std::fs::read(&back).unwrap(), b"");
}

#[tokio::test]
async fn failed_transfers_say_why_and_leave_nothing_behind() {
    let (_sshd, session) = start_and_connect().await;
    let local = tempfile::tempdir().unwrap();
    let remote = tempfile::tempdir().unwrap();

    // Download of a missing file: cat's complaint is in the error, and no
    // local file (final or temporary) appears.
    let missing = remote.path().join("missing");
    let err = session
        .download(missing.to_str().unwrap(), &local.path().join("x"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("No such file"), "{err}");
    assert!(
        names_in(local.path()).is_empty(),
        "{:?}",
        names_in(local.path())
    );

    // Upload into a directory that does not exist.
    let source = local.path().join("s");
    std::fs::write(&source, b"data").unwrap();
    let nowhere = remote.path().join("no/such/dir/f");
    let err = session
        .upload(&source, nowhere.to_str().unwrap(), 0o644)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("upload to"), "{err}");
    assert!(err.contains("exit status 1"), "{err}");

    // Upload of a missing local file.
    let err = session
        .upload(&local.path().join("absent"), "/tmp/whatever", 0o644)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("absent"), "{err}");

    // Relative remote paths are refused before anything runs.
    let err = session
        .download("relative/path", &local.path().join("y"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("must be absolute"), "{err}");

    // A directory download of something missing.
    let err = session
        .download_dir(missing.to_str().unwrap(), &local.path().join("d"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("download of directory"), "{err}");

    // The session is still usable after all those failures.
    assert_eq!(session.exec("echo ok").await.unwrap().stdout, b"ok\n");
}

/// A small tree with nesting, modes, an empty file, an empty directory, a
/// symlink, awkward names and one file big enough to span many packets.
fn make_tree(root: &Path) {
    std::fs::create_dir_all(root.join("a/b/c")).unwrap();
    std::fs::create_dir_all(root.join("empty dir")).unwrap();
    std::fs::write(root.join("top.txt"), b"top\n").unwrap();
    std::fs::write(root.join("a/b/c/deep.json"), b"{\"deep\": true}\n").unwrap();
    std::fs::write(root.join("a/empty"), b"").unwrap();
    std::fs::write(root.join("a/it's odd.txt"), b"quote\n").unwrap();
    random_file(&root.join("a/b/big.bin"), 3 * 1024 * 1024 + 17);
    let script = root.join("a/run.sh");
    std::fs::write(&script, b"#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("b/c/deep.json", root.join("a/link")).unwrap();
}

/// Every path under `root` with its kind, mode and content digest.
fn describe_tree(root: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let mode = meta.permissions().mode() & 0o777;
            if meta.file_type().is_symlink() {
                out.push(format!(
                    "{rel} -> {}",
                    std::fs::read_link(&path).unwrap().display()
                ));
            } else if meta.is_dir() {
                out.push(format!("{rel}/ {mode:o}"));
                walk(root, &path, out);
            } else {
                out.push(format!("{rel} {mode:o} {}", sha256_file(&path)));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

#[tokio::test]
async fn directory_download_copies_the_whole_tree() {
    let (_sshd, session) = start_and_connect().await;
    let remote = tempfile::tempdir().unwrap();
    let local = tempfile::tempdir().unwrap();
    let src = remote.path().join("evidence");
    make_tree(&src);
    // Into a directory that does not exist yet.
    let dst = local.path().join("results/run-1");
    session
        .download_dir(src.to_str().unwrap(), &dst)
        .await
        .unwrap();
    let expected = describe_tree(&src);
    assert!(expected.len() >= 10, "{expected:?}");
    assert_eq!(describe_tree(&dst), expected);
}

#[tokio::test]
async fn directory_upload_copies_the_whole_tree() {
    let (_sshd, session) = start_and_connect().await;
    let remote = tempfile::tempdir().unwrap();
    let local = tempfile::tempdir().unwrap();
    let src = local.path().join("tools");
    make_tree(&src);
    let dst = remote.path().join("opt/labrun");
    session
        .upload_dir(&src, dst.to_str().unwrap())
        .await
        .unwrap();
    assert_eq!(describe_tree(&dst), describe_tree(&src));

    // A local path that is not a directory is refused with its name.
    let err = session
        .upload_dir(&src.join("top.txt"), dst.to_str().unwrap())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a directory"), "{err}");
}
