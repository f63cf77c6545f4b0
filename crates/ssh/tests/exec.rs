//! Commands against a real OpenSSH server: output, exit codes, stderr,
//! streaming, stdin, signals, concurrency.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::start_and_connect;

#[tokio::test]
async fn exec_collects_stdout_and_exit_status_zero() {
    let (_sshd, session) = start_and_connect().await;
    // Through the user's shell: expansion and pipes work.
    let out = session
        .exec("echo hello; echo $((40 + 2)) | tr 4 X")
        .await
        .unwrap();
    assert_eq!(out.exit_code, Some(0));
    assert!(out.success());
    assert_eq!(out.stdout, b"hello\nX2\n");
    assert!(
        out.stderr.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    session.close().await.unwrap();
}

#[tokio::test]
async fn exec_reports_a_non_zero_exit_status_and_stderr_separately() {
    let (_sshd, session) = start_and_connect().await;
    let out = session
        .exec("echo to-out; echo to-err >&2; exit 3")
        .await
        .unwrap();
    assert_eq!(out.exit_code, Some(3));
    assert!(!out.success());
    assert_eq!(out.stdout, b"to-out\n");
    assert_eq!(out.stderr, b"to-err\n");
}

#[tokio::test]
async fn a_command_killed_by_a_signal_has_no_exit_code() {
    let (_sshd, session) = start_and_connect().await;
    let out = session.exec("kill -KILL $$").await.unwrap();
    assert_eq!(out.exit_code, None);
}

#[tokio::test]
async fn stdin_is_at_eof_unless_input_is_given() {
    let (_sshd, session) = start_and_connect().await;
    // Would hang for ever if stdin were left open.
    let out = session.exec("wc -c").await.unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "0");

    let input: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let out = session.exec_with_input("sha256sum", &input).await.unwrap();
    let expected = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(&input))
    };
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with(&expected),
        "{:?}",
        out
    );
}

#[tokio::test]
async fn streaming_hands_over_output_as_it_arrives() {
    let (_sshd, session) = start_and_connect().await;
    let started = Instant::now();
    let seen: Arc<Mutex<Vec<(Duration, String)>>> = Arc::default();
    let stderr_seen: Arc<Mutex<Vec<u8>>> = Arc::default();
    let mut on_stdout = {
        let seen = Arc::clone(&seen);
        move |chunk: &[u8]| {
            seen.lock().unwrap().push((
                started.elapsed(),
                String::from_utf8_lossy(chunk).into_owned(),
            ))
        }
    };
    let mut on_stderr = {
        let stderr_seen = Arc::clone(&stderr_seen);
        move |chunk: &[u8]| stderr_seen.lock().unwrap().extend_from_slice(chunk)
    };
    let code = session
        .exec_streaming(
            "echo first; sleep 1.5; echo warn >&2; echo second; exit 7",
            &mut on_stdout,
            &mut on_stderr,
        )
        .await
        .unwrap();
    let total = started.elapsed();
    assert_eq!(code, Some(7));
    let seen = seen.lock().unwrap().clone();
    let text: String = seen.iter().map(|(_, s)| s.as_str()).collect();
    assert_eq!(text, "first\nsecond\n");
    // "first" was handed over long before the command ended.
    let first_at = seen[0].0;
    assert!(seen[0].1.starts_with("first"), "{seen:?}");
    assert!(
        total - first_at >= Duration::from_millis(1000),
        "first chunk at {first_at:?}, command ended at {total:?}"
    );
    assert_eq!(&*stderr_seen.lock().unwrap(), b"warn\n");
}

#[tokio::test]
async fn commands_run_concurrently_on_one_session() {
    let (_sshd, session) = start_and_connect().await;
    let started = Instant::now();
    let (a, b, c) = tokio::join!(
        session.exec("sleep 1; echo a"),
        session.exec("sleep 1; echo b"),
        session.exec("sleep 1; echo c"),
    );
    assert_eq!(a.unwrap().stdout, b"a\n");
    assert_eq!(b.unwrap().stdout, b"b\n");
    assert_eq!(c.unwrap().stdout, b"c\n");
    // Three one-second sleeps in parallel, not in sequence.
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn session_is_shareable_across_tasks() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<labrun_ssh::Session>();
}
