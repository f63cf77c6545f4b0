//! `labrun fetch` killed in the middle of a download, by the real binary
//! against a server on 127.0.0.1 that sends a large body slowly: SIGTERM or
//! SIGINT leave no partial file, and the partial that SIGKILL leaves is
//! removed by the next fetch.

#[path = "../crates/artifact/tests/common/mod.rs"]
mod artifact_server;

use artifact_server::{Reply, Server, payload, sha256_hex};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

const LABRUN: &str = env!("CARGO_BIN_EXE_labrun");
const PATH: &str = "/rel/tool_1.0_linux_amd64";

/// 8 MB in 16 KiB pieces every 20 ms: about 10 s, time enough to kill it.
fn slow(body: &[u8]) -> Reply {
    Reply::Slow {
        body: body.to_vec(),
        chunk: 16 * 1024,
        pause: Duration::from_millis(20),
    }
}

fn write_lab(dir: &Path, url: &str, sha: &str) -> PathBuf {
    let lab = format!(
        r#"name: interrupted
tools:
  - name: tool
    version: "1.0"
    artifact:
      url: {url}
      sha256: {sha}
      extract: raw
    commands:
      init: ["{{bin}}", init, "{{repo}}"]
      backup: ["{{bin}}", backup, "{{repo}}", "{{source}}"]
      restore: ["{{bin}}", restore, "{{repo}}", "{{target}}"]
"#
    );
    let path = dir.join("lab.yaml");
    std::fs::write(&path, lab).unwrap();
    path
}

fn fetch(lab: &Path, cache: &Path) -> Command {
    let mut c = Command::new(LABRUN);
    c.arg("-f")
        .arg(lab)
        .arg("--cache")
        .arg(cache)
        .args(["fetch", "--tools", "tool"])
        .env_remove("LABRUN_MIRROR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Every `.partial-*` file under `dir`, with its size.
fn partials(dir: &Path) -> Vec<(PathBuf, u64)> {
    artifact_server::files_under(dir)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(".partial-"))
        })
        .map(|p| {
            let len = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
            (p, len)
        })
        .collect()
}

/// Waits until the download has written bytes into its partial file.
fn wait_for_partial(child: &mut Child, cache: &Path) -> PathBuf {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some((path, len)) = partials(cache).into_iter().next()
            && len > 0
        {
            return path;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("labrun fetch ended before the download started: {status}");
        }
        assert!(Instant::now() < deadline, "no partial file appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_at_most(child: &mut Child, limit: Duration) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("labrun fetch did not stop within {limit:?} of the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn stderr_of(child: Child) -> String {
    let Output { stderr, .. } = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&stderr).into_owned()
}

fn interrupt_leaves_no_partial(signal: &str) {
    let server = Server::start();
    let body = payload(8 << 20);
    let sha = sha256_hex(&body);
    server.route(PATH, vec![slow(&body)]);
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let lab = write_lab(dir.path(), &server.url(PATH), &sha);

    let mut child = fetch(&lab, &cache).spawn().unwrap();
    wait_for_partial(&mut child, &cache);
    let sent = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(sent.success());
    let status = wait_at_most(&mut child, Duration::from_secs(20));
    let stderr = stderr_of(child);
    assert_eq!(status.code(), Some(130), "{status}; stderr:\n{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert_eq!(partials(&cache), vec![], "stderr:\n{stderr}");
}

#[test]
fn sigterm_during_a_download_leaves_no_partial_file() {
    interrupt_leaves_no_partial("TERM");
}

#[test]
fn sigint_during_a_download_leaves_no_partial_file() {
    interrupt_leaves_no_partial("INT");
}

#[test]
fn the_partial_a_sigkill_leaves_is_removed_by_the_next_fetch() {
    let server = Server::start();
    let body = payload(8 << 20);
    let sha = sha256_hex(&body);
    // First a slow reply (killed), then the whole file at once.
    server.route(PATH, vec![slow(&body), Reply::Body(body.clone())]);
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let lab = write_lab(dir.path(), &server.url(PATH), &sha);

    let mut child = fetch(&lab, &cache).spawn().unwrap();
    let partial = wait_for_partial(&mut child, &cache);
    child.kill().unwrap(); // SIGKILL: no handler, no drop runs.
    child.wait().unwrap();
    assert!(
        partial.exists(),
        "the killed download's partial is there, as after a real kill"
    );

    let out = fetch(&lab, &cache).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("removed 1 stale partial download(s)"),
        "{stderr}"
    );
    assert!(!partial.exists(), "{} is still there", partial.display());
    assert_eq!(partials(&cache), vec![]);
    let cached = cache
        .join("artifacts")
        .join(&sha)
        .join("tool_1.0_linux_amd64");
    assert_eq!(std::fs::read(cached).unwrap(), body);
    assert_eq!(server.hits(PATH), 2);
}
