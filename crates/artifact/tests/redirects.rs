//! Redirects from a hostile server on 127.0.0.1: every hop of a followed
//! chain is recorded, and long chains and loops are refused (not retried).
//! The https -> http refusal is tested on the decision itself
//! (`redirect::tests`): loopback has no certificate the client would trust.

mod common;

use common::*;
use labrun_artifact::redirect::RedirectRefused;
use labrun_artifact::{ArtifactError, Cache, FetchOptions, Fetcher, NoProgress, Source};
use std::path::Path;

fn fetcher(cache: &Path) -> Fetcher {
    let mut opts = FetchOptions::new(cache.to_path_buf(), None);
    opts.net = quick_net();
    Fetcher::new(opts).unwrap()
}

#[tokio::test]
async fn every_hop_of_a_redirect_chain_across_hosts_is_recorded() {
    // Two servers: two hosts as far as the client can tell (their ports differ).
    let (a, b) = (Server::start(), Server::start());
    let body = payload(30_000);
    let sha = sha256_hex(&body);
    a.route("/start/tool.bin", vec![Reply::Redirect(b.url("/hop1"))]);
    b.route("/hop1", vec![Reply::Redirect(a.url("/hop2"))]);
    a.route("/hop2", vec![Reply::Redirect(b.url("/cdn/tool.bin"))]);
    b.route("/cdn/tool.bin", vec![Reply::Body(body.clone())]);
    let cache = tempfile::tempdir().unwrap();
    let spec = url_spec(&a.url("/start/tool.bin"), &sha);

    let got = fetcher(cache.path())
        .fetch("tool", &spec, &mut NoProgress)
        .await
        .unwrap();
    let hops = vec![b.url("/hop1"), a.url("/hop2"), b.url("/cdn/tool.bin")];
    assert_eq!(
        got.from,
        Source::Url {
            url: a.url("/start/tool.bin"),
            redirects: hops.clone(),
        }
    );
    assert_eq!(std::fs::read(&got.path).unwrap(), body);
    // What `labrun fetch` prints names them all.
    let shown = got.from.to_string();
    for hop in &hops {
        assert!(shown.contains(hop.as_str()), "{shown}");
    }
    // And the cache keeps them for the evidence of runs that use the file.
    let record = Cache::new(cache.path()).download_record(&sha).unwrap();
    assert_eq!(record["url"], a.url("/start/tool.bin"));
    assert_eq!(record["redirects"], serde_json::json!(hops));
    assert_eq!(record["file"], "tool.bin");
}

#[tokio::test]
async fn too_many_redirects_are_refused_once_and_nothing_is_kept() {
    let server = Server::start();
    for i in 0..12 {
        server.route(
            &format!("/r{i}"),
            vec![Reply::Redirect(format!("/r{}", i + 1))],
        );
    }
    server.route("/r12", vec![Reply::Body(payload(10))]);
    let cache = tempfile::tempdir().unwrap();
    let spec = url_spec(&server.url("/r0"), &sha256_hex(&payload(10)));

    let err = fetcher(cache.path())
        .fetch("tool", &spec, &mut NoProgress)
        .await
        .unwrap_err();
    let ArtifactError::Redirect { refused, .. } = &err else {
        panic!("{err:?}");
    };
    assert!(
        matches!(refused, RedirectRefused::TooMany { max: 10, .. }),
        "{refused:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("more than 10 redirects") && msg.contains("/r11"),
        "{msg}"
    );
    assert_eq!(server.hits("/r0"), 1, "a refused chain is not retried");
    assert_eq!(server.hits("/r11"), 0, "the 11th redirect is not followed");
    assert!(files_under(cache.path()).is_empty());
}

#[tokio::test]
async fn a_redirect_loop_is_refused() {
    let server = Server::start();
    server.route("/a", vec![Reply::Redirect("/b".into())]);
    server.route("/b", vec![Reply::Redirect("/a".into())]);
    let cache = tempfile::tempdir().unwrap();
    let spec = url_spec(&server.url("/a"), &sha256_hex(b"x"));

    let err = fetcher(cache.path())
        .fetch("tool", &spec, &mut NoProgress)
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            ArtifactError::Redirect {
                refused: RedirectRefused::Loop { .. },
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("redirect loop"), "{err}");
    assert_eq!(server.hits("/a"), 1, "not asked again: not retried");
    assert_eq!(server.hits("/b"), 1);
    assert!(files_under(cache.path()).is_empty());
}
