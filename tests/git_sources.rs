//! A tool built from a git repository, through the real binary: a
//! `git.repo` of `fd::0` (git's protocol on labrun's own standard input) is
//! refused by the lab's rules at once, even with standard input open and
//! never closed; and credentials written into the repository's URL appear
//! in no output of `check` and `fetch` and in no file of the cache.
//! Nothing leaves the machine: the only URL is on 127.0.0.1's port 1.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const LABRUN: &str = env!("CARGO_BIN_EXE_labrun");

/// The Go toolchain this host has, so that `fetch` gets as far as git.
fn installed_go() -> String {
    let out = Command::new("go")
        .args(["env", "GOVERSION"])
        .output()
        .expect("these tests need `go` on PATH (Debian: golang-go)");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn write_lab(dir: &Path, repo: &str) -> PathBuf {
    let lab = format!(
        r#"name: gitsource
tools:
  - name: tool
    version: "1.0"
    artifact:
      source:
        git: {{repo: "{repo}", commit: "0123456789abcdef0123456789abcdef01234567"}}
        build:
          go: {{package: ./cmd/tool, toolchain: {go}}}
      sha256: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
    commands:
      init: ["{{bin}}", init, "{{repo}}"]
      backup: ["{{bin}}", backup, "{{repo}}", "{{source}}"]
      restore: ["{{bin}}", restore, "{{repo}}", "{{target}}"]
"#,
        go = installed_go()
    );
    let path = dir.join("lab.yaml");
    std::fs::write(&path, lab).unwrap();
    path
}

fn labrun(lab: &Path, cache: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(LABRUN);
    c.arg("-f")
        .arg(lab)
        .arg("--cache")
        .arg(cache)
        .args(args)
        .env_remove("LABRUN_MIRROR")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Runs `cmd` with its standard input a pipe this test never closes, and
/// kills it if it has not ended within `limit`.
fn run_with_open_stdin(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd.stdin(Stdio::piped()).spawn().expect("labrun runs");
    let _stdin_kept_open = child.stdin.take();
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stdout = Vec::new();
            let mut stderr = Vec::new();
            child
                .stdout
                .take()
                .unwrap()
                .read_to_end(&mut stdout)
                .unwrap();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_end(&mut stderr)
                .unwrap();
            return Output {
                status,
                stdout,
                stderr,
            };
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("labrun did not end within {limit:?}: it waits on its standard input");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_remote_helper_repo_is_refused_at_once_with_stdin_open() {
    let tmp = tempfile::tempdir().unwrap();
    let lab = write_lab(tmp.path(), "fd::0");
    let cache = tmp.path().join("cache");
    for args in [&["check"][..], &["fetch", "--tools", "tool"][..]] {
        let out = run_with_open_stdin(labrun(&lab, &cache, args), Duration::from_secs(60));
        let all = text(&out);
        assert!(!out.status.success(), "{args:?}: {all}");
        assert!(
            all.contains("git.repo") && all.contains("remote helper `fd::`"),
            "{args:?}: {all}"
        );
    }
}

/// Every file below `dir`.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() && !p.is_symlink() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn credentials_in_the_repo_url_are_in_no_output_and_no_file() {
    let tmp = tempfile::tempdir().unwrap();
    let lab = write_lab(tmp.path(), "https://user:TOKEN@127.0.0.1:1/x.git");
    let cache = tmp.path().join("cache");
    let check = run_with_open_stdin(labrun(&lab, &cache, &["check"]), Duration::from_secs(60));
    let shown = text(&check);
    assert!(check.status.success(), "{shown}");
    assert!(!shown.contains("TOKEN"), "{shown}");
    assert!(
        shown.contains("https://<redacted>@127.0.0.1:1/x.git"),
        "{shown}"
    );

    let fetch = run_with_open_stdin(
        labrun(&lab, &cache, &["fetch", "--tools", "tool"]),
        Duration::from_secs(120),
    );
    let shown = text(&fetch);
    assert!(!fetch.status.success(), "{shown}");
    assert!(shown.contains("cannot be reached"), "{shown}");
    assert!(shown.contains("<redacted>@127.0.0.1:1"), "{shown}");
    assert!(!shown.contains("TOKEN"), "{shown}");
    let files = files_under(&cache);
    assert!(!files.is_empty(), "the fetch wrote no log");
    for f in files {
        let bytes = std::fs::read(&f).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("TOKEN"),
            "{} holds the token",
            f.display()
        );
    }
}
