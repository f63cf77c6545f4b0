//! A server that sends more than it announced, never stops, or trickles:
//! each download ends, within the policy's size and time, with nothing kept.

mod common;

use common::*;
use labrun_artifact::{ArtifactError, FetchOptions, Fetcher, NetPolicy, NoProgress};
use std::path::Path;
use std::time::Duration;

fn fetcher(cache: &Path, net: NetPolicy) -> Fetcher {
    let mut opts = FetchOptions::new(cache.to_path_buf(), None);
    opts.net = net;
    Fetcher::new(opts).unwrap()
}

/// Without the bounds these downloads never end: the test fails instead.
const TEST_LIMIT: Duration = Duration::from_secs(60);

/// One fetch with `net`, failing the test if it is not over in TEST_LIMIT.
async fn fetch_bounded(
    cache: &Path,
    net: NetPolicy,
    spec: &labrun_artifact::ArtifactSpec,
) -> Result<labrun_artifact::FetchedArtifact, ArtifactError> {
    tokio::time::timeout(
        TEST_LIMIT,
        fetcher(cache, net).fetch("tool", spec, &mut NoProgress),
    )
    .await
    .expect("bounded")
}

#[tokio::test]
async fn bytes_past_the_content_length_are_not_taken() {
    let server = Server::start();
    let body = payload(20_000);
    server.route(
        "/tool.bin",
        vec![Reply::Overlong {
            body: body.clone(),
            extra: 1 << 20,
        }],
    );
    let cache = tempfile::tempdir().unwrap();
    let spec = url_spec(&server.url("/tool.bin"), &sha256_hex(&body));
    let got = fetch_bounded(cache.path(), quick_net(), &spec)
        .await
        .unwrap();
    assert_eq!(std::fs::read(&got.path).unwrap(), body);
}

#[tokio::test]
async fn an_endless_body_is_cut_at_the_size_bound() {
    let server = Server::start();
    server.route("/tool.bin", vec![Reply::Endless]);
    let cache = tempfile::tempdir().unwrap();
    let spec = url_spec(&server.url("/tool.bin"), &sha256_hex(b"x"));
    let net = NetPolicy {
        max_bytes: 4 << 20,
        ..quick_net()
    };
    let err = fetch_bounded(cache.path(), net, &spec).await.unwrap_err();
    assert!(
        matches!(err, ArtifactError::TooLarge { limit, .. } if limit == 4 << 20),
        "{err:?}"
    );
    assert!(err.to_string().contains("more than 4194304 bytes"), "{err}");
    assert_eq!(server.hits("/tool.bin"), 1, "not retried");
    assert!(
        files_under(cache.path()).is_empty(),
        "{:?}",
        files_under(cache.path())
    );
}

#[tokio::test]
async fn an_announced_size_over_the_bound_is_refused_before_any_byte() {
    let server = Server::start();
    let body = payload(100_000);
    server.route("/tool.bin", vec![Reply::Body(body.clone())]);
    let cache = tempfile::tempdir().unwrap();
    let spec = url_spec(&server.url("/tool.bin"), &sha256_hex(&body));
    let net = NetPolicy {
        max_bytes: 50_000,
        ..quick_net()
    };
    let err = fetcher(cache.path(), net)
        .fetch("tool", &spec, &mut NoProgress)
        .await
        .unwrap_err();
    assert!(matches!(err, ArtifactError::TooLarge { .. }), "{err:?}");
    assert!(files_under(cache.path()).is_empty());
}

#[tokio::test]
async fn a_trickling_server_is_cut_at_the_time_bound() {
    let server = Server::start();
    // A byte every 100 ms never trips the 5 s read timeout.
    server.route(
        "/tool.bin",
        vec![Reply::Trickle {
            every: Duration::from_millis(100),
        }],
    );
    let cache = tempfile::tempdir().unwrap();
    let spec = url_spec(&server.url("/tool.bin"), &sha256_hex(b"x"));
    let net = NetPolicy {
        max_duration: Duration::from_secs(2),
        ..quick_net()
    };
    let started = std::time::Instant::now();
    let err = fetch_bounded(cache.path(), net, &spec).await.unwrap_err();
    assert!(
        matches!(err, ArtifactError::TooSlow { received, .. } if received > 0),
        "{err:?}"
    );
    assert!(err.to_string().contains("within 2s"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10), "not retried");
    assert_eq!(server.hits("/tool.bin"), 1);
    assert!(files_under(cache.path()).is_empty());
}
