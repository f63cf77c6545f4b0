//! Connecting through a jump host (`Target::via`), against real OpenSSH
//! servers on 127.0.0.1: one plays the remote hypervisor host, the other the
//! guest whose sshd QEMU forwards to that host's 127.0.0.1.

mod common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{CONNECT, freezable_relay, random_file, sha256_file};
use labrun_ssh::test_support::{Sshd, SshdKeys, free_port};
use labrun_ssh::{ConnectOptions, SshError, Target};

/// Long enough for sshd to log a disconnect on a slow, shared machine; only
/// a failing test waits this long.
const LOG_WAIT: Duration = Duration::from_secs(20);

/// `user@127.0.0.1:port`, how errors name a jump.
fn label(sshd: &Sshd) -> String {
    let label = sshd.target().label();
    assert_eq!(
        label,
        format!("{}@127.0.0.1:{}", sshd.keys().user, sshd.port())
    );
    label
}

fn quick_retries() -> ConnectOptions {
    ConnectOptions {
        attempt_timeout: Duration::from_secs(2),
        retry_pause: Duration::from_millis(200),
        ..ConnectOptions::default()
    }
}

/// A host key nobody has: what a target pins when it must be refused.
fn impostor_key() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let line = labrun_ssh::generate_ed25519(&dir.path().join("k"), "impostor").unwrap();
    (dir, line)
}

#[tokio::test]
async fn exec_upload_and_download_through_a_jump() {
    let jump = Sshd::start().unwrap();
    let guest = Sshd::start().unwrap();
    let target = guest.target().through(jump.target());
    let session = labrun_ssh::connect(&target, CONNECT)
        .await
        .unwrap_or_else(|e| panic!("{e}\njump log:\n{}", jump.log()));

    let out = session.exec("echo through; echo err >&2").await.unwrap();
    assert!(out.success(), "{out:?}");
    assert_eq!(out.stdout, b"through\n");
    assert_eq!(out.stderr, b"err\n");

    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("data");
    random_file(&local, 3 << 20);
    let remote = dir.path().join("remote-copy");
    let remote = remote.to_str().unwrap();
    session.upload(&local, remote, 0o640).await.unwrap();
    let back = dir.path().join("back");
    session.download(remote, &back).await.unwrap();
    assert_eq!(sha256_file(&local), sha256_file(&back));

    // One login on each server: the guest's through the jump's.
    assert_eq!(jump.logins(), 1, "{}", jump.log());
    assert_eq!(guest.logins(), 1, "{}", guest.log());
    session.close().await.unwrap();
}

#[tokio::test]
async fn the_session_names_itself_with_its_jump() {
    let jump = Sshd::start().unwrap();
    let guest = Sshd::start().unwrap();
    let target = guest.target().through(jump.target());
    let session = labrun_ssh::connect(&target, CONNECT).await.unwrap();
    let debug = format!("{session:?}");
    assert!(
        debug.contains(&format!("port: {}", guest.port())),
        "{debug}"
    );
    assert!(
        debug.contains(&format!("via: Some(\"{}\")", label(&jump))),
        "{debug}"
    );

    // Errors about a command name the place the same way.
    let err = session
        .download(
            "/nonexistent/labrun/file",
            &tempfile::tempdir().unwrap().path().join("x"),
        )
        .await
        .unwrap_err()
        .to_string();
    let place = format!("127.0.0.1:{} via {}", guest.port(), label(&jump));
    assert!(err.contains(&place), "{err}");
    session.close().await.unwrap();
}

#[tokio::test]
async fn the_connection_really_goes_through_the_jump() {
    // The jump host's sshd forwards to the first guest only: a connection
    // that bypassed it would reach the second guest just as well.
    let allowed = Sshd::start().unwrap();
    let forbidden = Sshd::start().unwrap();
    let jump = Sshd::start_configured(&format!("PermitOpen 127.0.0.1:{}", allowed.port())).unwrap();

    let session = labrun_ssh::connect(&allowed.target().through(jump.target()), CONNECT)
        .await
        .unwrap_or_else(|e| panic!("{e}\njump log:\n{}", jump.log()));
    assert_eq!(session.exec("echo ok").await.unwrap().stdout, b"ok\n");
    session.close().await.unwrap();

    // Directly, the second guest answers.
    labrun_ssh::connect(&forbidden.target(), CONNECT)
        .await
        .unwrap()
        .close()
        .await
        .unwrap();
    // Through the jump, it is refused by the jump, and the error says so.
    let err = labrun_ssh::connect(&forbidden.target().through(jump.target()), CONNECT)
        .await
        .unwrap_err();
    match &err {
        SshError::Unreachable { host, port, reason } => {
            assert_eq!(host, "127.0.0.1");
            assert_eq!(*port, forbidden.port());
            assert!(
                reason.starts_with(&format!("through {}: ", label(&jump))),
                "{reason}"
            );
            assert!(reason.contains("PermitOpen"), "{reason}");
        }
        other => panic!("expected Unreachable, got {other:?}"),
    }
    assert!(!err.is_final());
    assert_eq!(forbidden.logins(), 1, "only the direct login reached it");
}

#[tokio::test]
async fn nothing_listening_behind_the_jump_is_unreachable_through_it() {
    let jump = Sshd::start().unwrap();
    let keys = SshdKeys::generate().unwrap();
    let port = free_port().unwrap();
    let err = labrun_ssh::connect(&keys.target(port).through(jump.target()), CONNECT)
        .await
        .unwrap_err();
    match &err {
        SshError::Unreachable {
            port: p, reason, ..
        } => {
            assert_eq!(*p, port);
            assert!(
                reason.starts_with(&format!("through {}: ", label(&jump))),
                "{reason}"
            );
            assert!(reason.contains("could not connect"), "{reason}");
        }
        other => panic!("expected Unreachable, got {other:?}"),
    }
    assert!(!err.is_final(), "a booting guest looks like this: retried");
}

#[tokio::test]
async fn a_wrong_jump_host_key_is_refused_naming_the_jump_and_not_retried() {
    let jump = Sshd::start().unwrap();
    let guest = Sshd::start().unwrap();
    let (_dir, impostor) = impostor_key();
    let jump_target = Target {
        host_key: impostor,
        ..jump.target()
    };
    let target = guest.target().through(jump_target);

    let err = labrun_ssh::connect(&target, CONNECT).await.unwrap_err();
    match &err {
        SshError::HostKeyMismatch {
            port,
            via,
            presented,
            ..
        } => {
            assert_eq!(*port, jump.port(), "the jump is named");
            assert_eq!(via, &None);
            let jump_key = labrun_ssh::fingerprint_of_line(&jump.keys().host_key_line).unwrap();
            assert_eq!(presented, &jump_key);
        }
        other => panic!("expected HostKeyMismatch, got {other:?}"),
    }

    let mut attempts = 0;
    let err = labrun_ssh::wait_until_ready_with(
        &target,
        Duration::from_secs(30),
        &quick_retries(),
        &mut |n| attempts = n,
    )
    .await
    .unwrap_err();
    assert!(matches!(err, SshError::HostKeyMismatch { .. }), "{err:?}");
    assert_eq!(attempts, 1);
    assert_eq!(guest.logins(), 0);
}

#[tokio::test]
async fn a_wrong_target_host_key_through_the_jump_is_refused_naming_both() {
    let jump = Sshd::start().unwrap();
    let guest = Sshd::start().unwrap();
    let (_dir, impostor) = impostor_key();
    let target = Target {
        host_key: impostor,
        ..guest.target()
    }
    .through(jump.target());

    let err = labrun_ssh::connect(&target, CONNECT).await.unwrap_err();
    match &err {
        SshError::HostKeyMismatch {
            port,
            via,
            presented,
            ..
        } => {
            assert_eq!(*port, guest.port());
            assert_eq!(via.as_deref(), Some(label(&jump).as_str()));
            let guest_key = labrun_ssh::fingerprint_of_line(&guest.keys().host_key_line).unwrap();
            assert_eq!(presented, &guest_key);
        }
        other => panic!("expected HostKeyMismatch, got {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.contains(&format!("127.0.0.1:{} via {}", guest.port(), label(&jump))),
        "{text}"
    );

    let mut attempts = 0;
    let err = labrun_ssh::wait_until_ready_with(
        &target,
        Duration::from_secs(30),
        &quick_retries(),
        &mut |n| attempts = n,
    )
    .await
    .unwrap_err();
    assert!(matches!(err, SshError::HostKeyMismatch { .. }), "{err:?}");
    assert_eq!(attempts, 1);
}

#[tokio::test]
async fn a_client_key_the_jump_rejects_is_final_and_names_the_jump() {
    let jump = Sshd::start().unwrap();
    let guest = Sshd::start().unwrap();
    // The guest's key is not in the jump's authorized_keys.
    let jump_target = Target {
        client_key: guest.keys().client_key.clone(),
        ..jump.target()
    };
    let err = labrun_ssh::connect(&guest.target().through(jump_target), CONNECT)
        .await
        .unwrap_err();
    match &err {
        SshError::AuthRejected { port, via, .. } => {
            assert_eq!(*port, jump.port());
            assert_eq!(via, &None);
        }
        other => panic!("expected AuthRejected, got {other:?}"),
    }
    assert!(err.is_final());
}

#[tokio::test]
async fn wait_until_ready_through_a_jump_logs_in_to_the_jump_once() {
    let jump = Sshd::start().unwrap();
    let keys = SshdKeys::generate().unwrap();
    let port = free_port().unwrap();
    let target = keys.target(port).through(jump.target());

    // The guest's sshd starts once the third attempt has been made: the
    // first attempts meet a port nothing listens on, behind the jump.
    let (start_tx, start_rx) = std::sync::mpsc::channel::<()>();
    let server = std::thread::spawn(move || {
        start_rx.recv().unwrap();
        Sshd::start_with(keys, port).unwrap()
    });
    let start_tx = Mutex::new(Some(start_tx));
    let attempts = Arc::new(AtomicU32::new(0));
    let seen = Arc::clone(&attempts);
    let session = labrun_ssh::wait_until_ready_with(
        &target,
        Duration::from_secs(60),
        &quick_retries(),
        &mut |n| {
            seen.store(n, Ordering::SeqCst);
            if n == 3
                && let Some(tx) = start_tx.lock().unwrap().take()
            {
                tx.send(()).unwrap();
            }
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\njump log:\n{}", jump.log()));
    let guest = server.join().unwrap();

    assert!(attempts.load(Ordering::SeqCst) >= 3);
    assert_eq!(session.exec("echo up").await.unwrap().stdout, b"up\n");
    // Several attempts, and one login to the jump host for all of them.
    assert_eq!(jump.logins(), 1, "{}", jump.log());
    assert_eq!(guest.logins(), 1, "{}", guest.log());
    session.close().await.unwrap();
}

#[tokio::test]
async fn closing_the_session_closes_the_jump_connection() {
    let jump = Sshd::start().unwrap();
    let guest = Sshd::start().unwrap();
    let session = labrun_ssh::connect(&guest.target().through(jump.target()), CONNECT)
        .await
        .unwrap();
    assert_eq!(session.exec("echo hi").await.unwrap().stdout, b"hi\n");
    session.close().await.unwrap();
    // Both servers got labrun's goodbye, the guest's through the jump.
    for (name, sshd) in [("guest", &guest), ("jump", &jump)] {
        assert!(
            sshd.wait_for_log("labrun done", LOG_WAIT).await,
            "{name} sshd log:\n{}",
            sshd.log()
        );
    }
}

#[tokio::test]
async fn dropping_the_session_ends_the_jump_connection() {
    let jump = Sshd::start().unwrap();
    let guest = Sshd::start().unwrap();
    let session = labrun_ssh::connect(&guest.target().through(jump.target()), CONNECT)
        .await
        .unwrap();
    assert_eq!(session.exec("echo hi").await.unwrap().stdout, b"hi\n");
    assert!(!jump.log().contains("Closing connection to"));
    drop(session);
    // sshd logs this when a logged-in connection ends, however it ends.
    assert!(
        jump.wait_for_log("Closing connection to", LOG_WAIT).await,
        "jump sshd log:\n{}",
        jump.log()
    );
}

#[tokio::test]
async fn a_lost_jump_ends_the_session_through_it_and_says_where() {
    let jump = Sshd::start().unwrap();
    let guest = Sshd::start().unwrap();
    let jump_label = label(&jump);
    let session = labrun_ssh::connect(&guest.target().through(jump.target()), CONNECT)
        .await
        .unwrap();
    assert_eq!(session.exec("echo hi").await.unwrap().stdout, b"hi\n");
    // The hypervisor host goes away (its sshd and its connections killed).
    drop(jump);
    let err = tokio::time::timeout(Duration::from_secs(30), session.exec("sleep 60"))
        .await
        .expect("the end of the jump connection must end the session")
        .unwrap_err()
        .to_string();
    assert!(err.contains(&format!("via {jump_label}")), "{err}");
    assert!(session.is_closed());
    session.close().await.unwrap();
}

#[tokio::test]
async fn a_jump_may_itself_go_through_a_jump() {
    let outer = Sshd::start().unwrap();
    let inner = Sshd::start().unwrap();
    let guest = Sshd::start().unwrap();
    let target = guest
        .target()
        .through(inner.target().through(outer.target()));
    let session = labrun_ssh::connect(&target, CONNECT).await.unwrap();
    assert_eq!(session.exec("echo deep").await.unwrap().stdout, b"deep\n");
    let debug = format!("{session:?}");
    let route = format!("{} via {}", label(&inner), label(&outer));
    assert!(debug.contains(&route), "{debug}");
    for sshd in [&outer, &inner, &guest] {
        assert_eq!(sshd.logins(), 1, "{}", sshd.log());
    }
    session.close().await.unwrap();
    assert!(
        outer.wait_for_log("labrun done", LOG_WAIT).await,
        "{}",
        outer.log()
    );
}

/// Keepalives every 500 ms, dead after 2 unanswered: both hops.
fn short_keepalives() -> ConnectOptions {
    ConnectOptions {
        keepalive_interval: Duration::from_millis(500),
        keepalive_max: 2,
        ..ConnectOptions::default()
    }
}

#[tokio::test]
async fn keepalives_notice_a_frozen_guest_behind_a_live_jump() {
    let jump = Sshd::start().unwrap();
    let guest = Sshd::start().unwrap();
    // The jump host reaches the guest through the relay; we reach the jump
    // host directly, so only the inner connection freezes.
    let (relay_port, frozen) = freezable_relay(guest.port()).await;
    let target = Target {
        port: relay_port,
        ..guest.target()
    }
    .through(jump.target());
    let session = labrun_ssh::connect_with(&target, CONNECT, &short_keepalives())
        .await
        .unwrap();
    // A quiet command spanning several keepalive periods is not cut.
    assert_eq!(
        session.exec("sleep 2; echo quiet").await.unwrap().stdout,
        b"quiet\n"
    );

    frozen.store(true, Ordering::SeqCst);
    let err = tokio::time::timeout(Duration::from_secs(30), session.exec("sleep 60"))
        .await
        .expect("a dead guest must be noticed by the keepalives through the jump")
        .unwrap_err()
        .to_string();
    assert!(err.contains("keepalive"), "{err}");
    assert!(
        err.contains(&format!("127.0.0.1:{relay_port} via {}", label(&jump))),
        "{err}"
    );
    assert!(session.is_closed());
    session.close().await.unwrap();
    // The jump connection itself was alive; it was closed with the session.
    assert!(
        jump.wait_for_log("labrun done", LOG_WAIT).await,
        "{}",
        jump.log()
    );
}

#[tokio::test]
async fn keepalives_notice_a_frozen_jump_host() {
    let jump = Sshd::start().unwrap();
    let guest = Sshd::start().unwrap();
    let (relay_port, frozen) = freezable_relay(jump.port()).await;
    let jump_target = Target {
        port: relay_port,
        ..jump.target()
    };
    let target = guest.target().through(jump_target);
    let session = labrun_ssh::connect_with(&target, CONNECT, &short_keepalives())
        .await
        .unwrap();
    assert_eq!(
        session.exec("echo before").await.unwrap().stdout,
        b"before\n"
    );

    frozen.store(true, Ordering::SeqCst);
    let err = tokio::time::timeout(Duration::from_secs(30), session.exec("sleep 60"))
        .await
        .expect("a dead jump host must be noticed by the keepalives")
        .unwrap_err()
        .to_string();
    assert!(err.contains("keepalive"), "{err}");
    assert!(
        err.contains(&format!("via {}@127.0.0.1:{relay_port}", guest.keys().user)),
        "{err}"
    );
    assert!(session.is_closed());
    session.close().await.unwrap();
}
