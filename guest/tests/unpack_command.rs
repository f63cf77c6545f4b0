//! `labrun-agent unpack` as a user (or the host) runs it: one JSON line of
//! counts on success, a message and a non-zero exit otherwise.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

fn agent(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_labrun-agent"))
        .args(args)
        .output()
        .unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A small tree packed by the system's tar (gzip), as a user would.
fn packed(tmp: &Path) -> std::path::PathBuf {
    let src = tmp.join("src");
    fs::create_dir_all(src.join("a/b")).unwrap();
    fs::write(src.join("a/b/f"), b"hello").unwrap();
    fs::write(src.join("g"), b"12345678").unwrap();
    std::os::unix::fs::symlink("b/f", src.join("a/l")).unwrap();
    let archive = tmp.join("tree.tgz");
    let o = Command::new("tar")
        .args(["-czf", s(&archive), "-C", s(&src), "."])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    archive
}

#[test]
fn unpack_prints_its_counts_as_one_json_line() {
    let tmp = tempfile::tempdir().unwrap();
    let archive = packed(tmp.path());
    let dest = tmp.path().join("out");
    let o = agent(&["unpack", s(&archive), s(&dest)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8(o.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["files"], 2);
    assert_eq!(v["dirs"], 2);
    assert_eq!(v["symlinks"], 1);
    assert_eq!(v["bytes"], 13);
    assert_eq!(v["skipped_special"], 0);
    assert_eq!(fs::read(dest.join("a/l")).unwrap(), b"hello");
}

#[test]
fn unpack_refuses_with_a_message_and_a_non_zero_exit() {
    let tmp = tempfile::tempdir().unwrap();
    let archive = packed(tmp.path());
    let err = |o: &Output| {
        assert!(!o.status.success());
        assert!(o.stdout.is_empty(), "no counts on failure");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };

    let o = agent(&[
        "unpack",
        s(&archive),
        s(&tmp.path().join("o1")),
        "--format",
        "zip",
    ]);
    let msg = err(&o);
    assert!(
        msg.contains("zip archive") && msg.contains("tar.gz"),
        "{msg}"
    );

    let o = agent(&[
        "unpack",
        s(&archive),
        s(&tmp.path().join("o2")),
        "--max-bytes",
        "10",
    ]);
    let msg = err(&o);
    assert!(
        msg.contains("more than 10 bytes") && msg.contains("--max-bytes"),
        "{msg}"
    );

    let o = agent(&[
        "unpack",
        s(&archive),
        s(&tmp.path().join("o3")),
        "--max-entries",
        "2",
    ]);
    assert!(err(&o).contains("--max-entries"));

    let odd = tmp.path().join("tree.bin");
    fs::copy(&archive, &odd).unwrap();
    let o = agent(&["unpack", s(&odd), s(&tmp.path().join("o4"))]);
    assert!(err(&o).contains("--format"));
    let o = agent(&[
        "unpack",
        s(&odd),
        s(&tmp.path().join("o4")),
        "--format",
        "tar-gz",
    ]);
    assert!(o.status.success());
}
