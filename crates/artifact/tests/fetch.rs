//! Fetching against a server on 127.0.0.1 the test controls: the happy path,
//! the cache, and each way a download can go wrong.

mod common;

use common::*;
use labrun_artifact::{
    ArtifactError, ArtifactSource, Extract, FetchOptions, Fetcher, NoProgress, Progress, Source,
};
use std::path::Path;

fn fetcher(cache: &Path, mirror: Option<&Path>) -> Fetcher {
    let mut opts = FetchOptions::new(cache.to_path_buf(), mirror.map(Path::to_path_buf));
    opts.net = quick_net();
    Fetcher::new(opts).unwrap()
}

/// Keeps notices and counts bytes, to check what the CLI would show.
#[derive(Default)]
struct Recorder {
    notices: Vec<String>,
    bytes: u64,
}

impl Progress for Recorder {
    fn start(&mut self, _: &str, _: &Source, _: Option<u64>) {}
    fn advance(&mut self, bytes: u64) {
        self.bytes += bytes;
    }
    fn finish(&mut self) {}
    fn notice(&mut self, message: &str) {
        self.notices.push(message.to_string());
    }
}

#[tokio::test]
async fn downloads_verifies_then_serves_from_cache_without_the_network() {
    let server = Server::start();
    let body = payload(300_000);
    let sha = sha256_hex(&body);
    server.route("/v1/tool_1.0_linux_amd64", vec![Reply::Body(body.clone())]);
    let cache = tempfile::tempdir().unwrap();
    let f = fetcher(cache.path(), None);
    let spec = url_spec(&server.url("/v1/tool_1.0_linux_amd64"), &sha);

    let mut rec = Recorder::default();
    let got = f.fetch("tool", &spec, &mut rec).await.unwrap();
    assert_eq!(
        got.from,
        Source::Url {
            url: server.url("/v1/tool_1.0_linux_amd64"),
            redirects: vec![]
        }
    );
    assert_eq!(got.sha256, sha);
    assert_eq!(
        got.path,
        cache
            .path()
            .join("artifacts")
            .join(&sha)
            .join("tool_1.0_linux_amd64")
    );
    assert_eq!(std::fs::read(&got.path).unwrap(), body);
    assert_eq!(rec.bytes, body.len() as u64);
    assert_eq!(server.hits("/v1/tool_1.0_linux_amd64"), 1);

    let again = f.fetch("tool", &spec, &mut NoProgress).await.unwrap();
    assert_eq!(again.from, Source::Cache);
    assert_eq!(again.path, got.path);
    assert_eq!(
        server.hits("/v1/tool_1.0_linux_amd64"),
        1,
        "a cache hit must not touch the network"
    );
}

#[tokio::test]
async fn one_flipped_byte_is_refused_named_and_not_kept() {
    let server = Server::start();
    let body = payload(50_000);
    let sha = sha256_hex(&body);
    let mut bad = body.clone();
    bad[12_345] ^= 0x01;
    server.route("/tool.bin", vec![Reply::Body(bad.clone())]);
    let cache = tempfile::tempdir().unwrap();
    let spec = url_spec(&server.url("/tool.bin"), &sha);

    let err = fetcher(cache.path(), None)
        .fetch("tool", &spec, &mut NoProgress)
        .await
        .unwrap_err();
    assert!(matches!(err, ArtifactError::DigestMismatch { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("tool:"), "{msg}");
    assert!(msg.contains(&server.url("/tool.bin")), "{msg}");
    assert!(msg.contains(&sha), "{msg}");
    assert!(msg.contains(&sha256_hex(&bad)), "{msg}");
    assert!(
        files_under(cache.path()).is_empty(),
        "{:?}",
        files_under(cache.path())
    );
    assert_eq!(
        server.hits("/tool.bin"),
        1,
        "a digest mismatch is not retried"
    );
}

#[tokio::test]
async fn a_truncated_download_is_retried_then_refused() {
    let server = Server::start();
    let body = payload(40_000);
    let sha = sha256_hex(&body);
    server.route(
        "/tool.bin",
        vec![Reply::Truncated {
            body: body[..10_000].to_vec(),
            claimed: body.len(),
        }],
    );
    let cache = tempfile::tempdir().unwrap();
    let spec = url_spec(&server.url("/tool.bin"), &sha);
    let mut rec = Recorder::default();

    let err = fetcher(cache.path(), None)
        .fetch("tool", &spec, &mut rec)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            ArtifactError::Truncated {
                received: 10_000,
                expected: 40_000,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("10000 of 40000 bytes"), "{err}");
    assert_eq!(server.hits("/tool.bin"), 3, "one try and two retries");
    assert_eq!(rec.notices.len(), 2, "{:?}", rec.notices);
    assert!(
        files_under(cache.path()).is_empty(),
        "{:?}",
        files_under(cache.path())
    );
}

#[tokio::test]
async fn a_server_error_is_retried_and_may_then_succeed() {
    let server = Server::start();
    let body = payload(1000);
    let sha = sha256_hex(&body);
    server.route(
        "/tool.bin",
        vec![Reply::Status(503), Reply::Body(body.clone())],
    );
    let cache = tempfile::tempdir().unwrap();
    let spec = url_spec(&server.url("/tool.bin"), &sha);
    let mut rec = Recorder::default();
    let got = fetcher(cache.path(), None)
        .fetch("tool", &spec, &mut rec)
        .await
        .unwrap();
    assert_eq!(std::fs::read(got.path).unwrap(), body);
    assert_eq!(server.hits("/tool.bin"), 2);
    assert!(rec.notices[0].contains("503"), "{:?}", rec.notices);
}

#[tokio::test]
async fn a_404_is_reported_clearly_and_not_retried() {
    let server = Server::start();
    let cache = tempfile::tempdir().unwrap();
    let spec = url_spec(&server.url("/v9.9.9/tool.bin"), &sha256_hex(b"x"));
    let err = fetcher(cache.path(), None)
        .fetch("tool", &spec, &mut NoProgress)
        .await
        .unwrap_err();
    assert!(
        matches!(err, ArtifactError::HttpStatus { status: 404, .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("HTTP 404") && msg.contains("/v9.9.9/tool.bin"),
        "{msg}"
    );
    assert!(msg.contains("check the URL"), "{msg}");
    assert_eq!(server.hits("/v9.9.9/tool.bin"), 1);
    assert!(files_under(cache.path()).is_empty());
}

#[tokio::test]
async fn a_refused_connection_names_the_mirror_option() {
    // A port that was just free: nothing listens there now.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cache = tempfile::tempdir().unwrap();
    let mut spec = url_spec(
        &format!("http://127.0.0.1:{port}/rel/tool_2.0.tar.gz"),
        &sha256_hex(b"x"),
    );
    spec.extract = Extract::Tar("tool".into());
    let err = fetcher(cache.path(), None)
        .fetch("tool", &spec, &mut NoProgress)
        .await
        .unwrap_err();
    assert!(matches!(err, ArtifactError::Unreachable { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("--mirror"), "{msg}");
    assert!(msg.contains("`tool_2.0.tar.gz`"), "{msg}");
    assert!(msg.to_lowercase().contains("refused"), "{msg}");
    assert!(files_under(cache.path()).is_empty());
}

#[tokio::test]
async fn the_mirror_folder_is_used_before_the_network() {
    let server = Server::start();
    let body = payload(20_000);
    let sha = sha256_hex(&body);
    server.route("/dl/tool_1.0.bz2", vec![Reply::Body(body.clone())]);
    let mirror = tempfile::tempdir().unwrap();
    std::fs::write(mirror.path().join("tool_1.0.bz2"), &body).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let mut spec = url_spec(&server.url("/dl/tool_1.0.bz2"), &sha);
    spec.extract = Extract::Bz2;

    let got = fetcher(cache.path(), Some(mirror.path()))
        .fetch("tool", &spec, &mut NoProgress)
        .await
        .unwrap();
    assert_eq!(got.from, Source::Mirror(mirror.path().join("tool_1.0.bz2")));
    assert_eq!(std::fs::read(&got.path).unwrap(), body);
    assert!(got.path.starts_with(cache.path()), "copied into the cache");
    assert_eq!(
        server.hits("/dl/tool_1.0.bz2"),
        0,
        "the server must not be asked"
    );
}

#[tokio::test]
async fn a_wrong_mirror_copy_is_an_error_and_the_mirror_is_left_alone() {
    let server = Server::start();
    let body = payload(5_000);
    server.route("/tool.bin", vec![Reply::Body(body.clone())]);
    let mirror = tempfile::tempdir().unwrap();
    std::fs::write(mirror.path().join("tool.bin"), b"something else").unwrap();
    let cache = tempfile::tempdir().unwrap();
    let spec = url_spec(&server.url("/tool.bin"), &sha256_hex(&body));

    let err = fetcher(cache.path(), Some(mirror.path()))
        .fetch("tool", &spec, &mut NoProgress)
        .await
        .unwrap_err();
    assert!(
        matches!(err, ArtifactError::DigestMismatch { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("mirror file"), "{err}");
    assert_eq!(server.hits("/tool.bin"), 0);
    assert!(
        mirror.path().join("tool.bin").exists(),
        "the operator's file stays"
    );
    assert!(files_under(cache.path()).is_empty());
}

#[tokio::test]
async fn a_damaged_cached_copy_is_replaced_by_a_fresh_verified_one() {
    let server = Server::start();
    let body = payload(8_000);
    let sha = sha256_hex(&body);
    server.route("/tool.bin", vec![Reply::Body(body.clone())]);
    let cache = tempfile::tempdir().unwrap();
    let f = fetcher(cache.path(), None);
    let spec = url_spec(&server.url("/tool.bin"), &sha);
    let got = f.fetch("tool", &spec, &mut NoProgress).await.unwrap();

    let mut damaged = body.clone();
    damaged[0] ^= 0xff;
    std::fs::write(&got.path, &damaged).unwrap();
    let mut rec = Recorder::default();
    let again = f.fetch("tool", &spec, &mut rec).await.unwrap();
    assert_eq!(
        again.from,
        Source::Url {
            url: server.url("/tool.bin"),
            redirects: vec![]
        }
    );
    assert_eq!(std::fs::read(&again.path).unwrap(), body);
    assert_eq!(server.hits("/tool.bin"), 2);
    assert!(
        rec.notices.iter().any(|n| n.contains("removed")),
        "{:?}",
        rec.notices
    );
}

#[tokio::test]
async fn a_local_file_source_is_verified_and_cached() {
    let src = tempfile::tempdir().unwrap();
    let body = payload(3_000);
    let path = src.path().join("tool-linux");
    std::fs::write(&path, &body).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let mut spec = url_spec("http://unused.invalid/x", &sha256_hex(&body));
    spec.source = ArtifactSource::File(format!("file://{}", path.display()));

    let got = fetcher(cache.path(), None)
        .fetch("tool", &spec, &mut NoProgress)
        .await
        .unwrap();
    assert_eq!(got.from, Source::File(path.clone()));
    assert_eq!(got.path.file_name().unwrap(), "tool-linux");

    spec.sha256 = sha256_hex(b"not it");
    let err = fetcher(cache.path(), None)
        .fetch("tool", &spec, &mut NoProgress)
        .await
        .unwrap_err();
    assert!(
        matches!(err, ArtifactError::DigestMismatch { .. }),
        "{err:?}"
    );
}

#[tokio::test]
async fn partials_that_killed_runs_left_are_swept_by_the_next_download() {
    let server = Server::start();
    let body = payload(4_000);
    let sha = sha256_hex(&body);
    server.route("/tool.bin", vec![Reply::Body(body.clone())]);
    let cache = tempfile::tempdir().unwrap();
    let artifacts = cache.path().join("artifacts");
    // Left by killed runs: in this artifact's folder, in another's (an old
    // pin) and in an extraction folder. Nobody holds their locks.
    let other = artifacts.join(sha256_hex(b"an older pin"));
    let stale = [
        artifacts.join(&sha).join(".partial-a1"),
        other.join(".partial-b2"),
        other.join("extracted").join(".partial-c3"),
    ];
    for p in &stale {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, vec![0u8; 500_000]).unwrap();
    }
    // One another process is still writing: it holds its lock.
    let live = other.join(".partial-live");
    let held = std::fs::File::create(&live).unwrap();
    held.lock().unwrap();

    let mut rec = Recorder::default();
    let got = fetcher(cache.path(), None)
        .fetch("tool", &url_spec(&server.url("/tool.bin"), &sha), &mut rec)
        .await
        .unwrap();
    assert_eq!(std::fs::read(&got.path).unwrap(), body);
    for p in &stale {
        assert!(!p.exists(), "{} was left", p.display());
    }
    assert!(live.exists(), "a partial being written is not touched");
    assert!(
        rec.notices
            .iter()
            .any(|n| n.contains("removed 3 stale partial download(s), 1.5 MB")),
        "{:?}",
        rec.notices
    );
}
