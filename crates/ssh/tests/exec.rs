//! Commands against a real OpenSSH server: output, exit codes, stderr,
//! streaming, stdin, signals, concurrency.

mod common;

use std::sync::{Arc, Mutex};

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
    // The command waits (bounded, 60 s) for a mark that only the stdout
    // handler makes, when it is handed "first": unless output is handed
    // over while the command runs, the mark never comes and "second" is
    // never printed. A rendezvous, not a stopwatch, so a loaded machine
    // gives the same answer.
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("seen-first");
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let stderr_seen: Arc<Mutex<Vec<u8>>> = Arc::default();
    let mut on_stdout = {
        let (seen, mark) = (Arc::clone(&seen), mark.clone());
        move |chunk: &[u8]| {
            let text = String::from_utf8_lossy(chunk).into_owned();
            if text.contains("first") {
                std::fs::write(&mark, b"").unwrap();
            }
            seen.lock().unwrap().push(text)
        }
    };
    let mut on_stderr = {
        let stderr_seen = Arc::clone(&stderr_seen);
        move |chunk: &[u8]| stderr_seen.lock().unwrap().extend_from_slice(chunk)
    };
    let m = mark.display();
    let code = session
        .exec_streaming(
            &format!(
                "echo first; for i in $(seq 600); do [ -e {m} ] && break; sleep 0.1; done; \
                 [ -e {m} ] || exit 3; echo warn >&2; echo second; exit 7"
            ),
            &mut on_stdout,
            &mut on_stderr,
        )
        .await
        .unwrap();
    assert_eq!(code, Some(7), "{:?}", seen.lock().unwrap());
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.concat(), "first\nsecond\n");
    assert!(seen[0].starts_with("first"), "{seen:?}");
    assert_eq!(&*stderr_seen.lock().unwrap(), b"warn\n");
}

#[tokio::test]
async fn commands_run_concurrently_on_one_session() {
    let (_sshd, session) = start_and_connect().await;
    // A rendezvous, not a stopwatch: each command marks that it started,
    // then waits (bounded, 60 s) until all three have. Run one after the
    // other, the first would wait alone and print nothing; how loaded the
    // machine is does not change the answer.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let cmd = |me: &str| {
        format!(
            "touch {d}/{me}; for i in $(seq 600); do [ -e {d}/a ] && [ -e {d}/b ] && [ -e {d}/c ] && break; sleep 0.1; done; [ -e {d}/a ] && [ -e {d}/b ] && [ -e {d}/c ] && echo {me}"
        )
    };
    let [ca, cb, cc] = ["a", "b", "c"].map(cmd);
    let (a, b, c) = tokio::join!(session.exec(&ca), session.exec(&cb), session.exec(&cc));
    assert_eq!(a.unwrap().stdout, b"a\n");
    assert_eq!(b.unwrap().stdout, b"b\n");
    assert_eq!(c.unwrap().stdout, b"c\n");
}

#[test]
fn session_is_shareable_across_tasks() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<labrun_ssh::Session>();
}
