//! Connecting against a real OpenSSH server: the pinned host key, client key
//! rejection, OpenSSH's own tools reading our keys, wait_until_ready through
//! the ways a booting guest fails, and keepalives.

mod common;

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use common::{CONNECT, freezable_relay, start_and_connect};
use labrun_ssh::test_support::{Sshd, SshdKeys, free_port};
use labrun_ssh::{ConnectOptions, SshError, Target};
use tokio::net::TcpListener;

fn quick_retries() -> ConnectOptions {
    ConnectOptions {
        attempt_timeout: Duration::from_secs(1),
        retry_pause: Duration::from_millis(200),
        ..ConnectOptions::default()
    }
}

#[tokio::test]
async fn a_wrong_pinned_host_key_is_refused_with_both_fingerprints_and_not_retried() {
    let sshd = Sshd::start().unwrap();
    let other = tempfile::tempdir().unwrap();
    let impostor = labrun_ssh::generate_ed25519(&other.path().join("k"), "x").unwrap();
    let target = Target {
        host_key: impostor.clone(),
        ..sshd.target()
    };

    let err = labrun_ssh::connect(&target, CONNECT).await.unwrap_err();
    let expected = labrun_ssh::fingerprint_of_line(&impostor).unwrap();
    let presented = labrun_ssh::fingerprint_of_line(&sshd.keys().host_key_line).unwrap();
    match &err {
        SshError::HostKeyMismatch {
            expected: e,
            presented: p,
            port,
            ..
        } => {
            assert_eq!(e, &expected);
            assert_eq!(p, &presented);
            assert_eq!(*port, sshd.port());
        }
        other => panic!("expected HostKeyMismatch, got {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.contains(&expected) && text.contains(&presented),
        "{text}"
    );

    // wait_until_ready gives up at once: one attempt, well before the deadline.
    let mut attempts = 0;
    let started = Instant::now();
    let err = labrun_ssh::wait_until_ready(&target, Duration::from_secs(20), &mut |n| attempts = n)
        .await
        .unwrap_err();
    assert!(matches!(err, SshError::HostKeyMismatch { .. }), "{err:?}");
    assert_eq!(attempts, 1);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn the_pinned_key_comment_does_not_matter() {
    let sshd = Sshd::start().unwrap();
    let line = &sshd.keys().host_key_line;
    let bare: String = line.split(' ').take(2).collect::<Vec<_>>().join(" ");
    for pinned in [
        bare.clone(),
        format!("{bare} another-comment"),
        format!("  {bare}\n"),
    ] {
        let target = Target {
            host_key: pinned,
            ..sshd.target()
        };
        let session = labrun_ssh::connect(&target, CONNECT).await.unwrap();
        session.close().await.unwrap();
    }
}

#[tokio::test]
async fn a_client_key_not_in_authorized_keys_is_rejected_and_not_retried() {
    let sshd = Sshd::start().unwrap();
    let other = tempfile::tempdir().unwrap();
    let stranger = other.path().join("stranger");
    labrun_ssh::generate_ed25519(&stranger, "stranger").unwrap();
    let target = Target {
        client_key: stranger.clone(),
        ..sshd.target()
    };
    let err = labrun_ssh::connect(&target, CONNECT).await.unwrap_err();
    match &err {
        SshError::AuthRejected { key, .. } => {
            assert!(key.contains("SHA256:"), "{key}");
            assert!(key.contains("stranger"), "{key}");
        }
        other => panic!("expected AuthRejected, got {other:?}"),
    }
    let mut attempts = 0;
    let err = labrun_ssh::wait_until_ready(&target, Duration::from_secs(20), &mut |n| attempts = n)
        .await
        .unwrap_err();
    assert!(matches!(err, SshError::AuthRejected { .. }), "{err:?}");
    assert_eq!(attempts, 1);
}

#[tokio::test]
async fn an_unreadable_client_key_is_a_final_key_error() {
    let target = Target {
        host: "127.0.0.1".into(),
        port: free_port().unwrap(),
        user: "root".into(),
        client_key: "/nonexistent/labrun/key".into(),
        host_key:
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
                .into(),
        via: None,
    };
    let mut attempts = 0;
    let err = labrun_ssh::wait_until_ready(&target, Duration::from_secs(10), &mut |n| attempts = n)
        .await
        .unwrap_err();
    assert!(matches!(err, SshError::Key { .. }), "{err:?}");
    assert_eq!(attempts, 0, "no connection attempt with a broken key");
}

#[tokio::test]
async fn openssh_tools_accept_the_keys_we_generate() {
    // sshd already loaded our host key and accepted our client key through
    // russh; here OpenSSH's own client and ssh-keygen read them too.
    let (sshd, session) = start_and_connect().await;
    session.close().await.unwrap();
    let keys = sshd.keys();

    let derived = Command::new("ssh-keygen")
        .arg("-y")
        .arg("-f")
        .arg(&keys.client_key)
        .output()
        .unwrap();
    assert!(derived.status.success(), "{derived:?}");
    let derived = String::from_utf8(derived.stdout).unwrap();
    let ours: Vec<&str> = keys.client_key_line.split(' ').take(2).collect();
    let theirs: Vec<&str> = derived.trim().split(' ').take(2).collect();
    assert_eq!(ours, theirs);

    let known_hosts = keys.dir().join("known_hosts");
    std::fs::write(
        &known_hosts,
        format!("[127.0.0.1]:{} {}\n", sshd.port(), keys.host_key_line),
    )
    .unwrap();
    let out = Command::new("ssh")
        .args([
            "-F",
            "/dev/null",
            "-o",
            "BatchMode=yes",
            "-o",
            "StrictHostKeyChecking=yes",
        ])
        .arg("-o")
        .arg(format!("UserKnownHostsFile={}", known_hosts.display()))
        .arg("-i")
        .arg(&keys.client_key)
        .arg("-p")
        .arg(sshd.port().to_string())
        .arg(format!("{}@127.0.0.1", keys.user))
        .arg("echo via-openssh")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ssh failed: {}\nsshd log:\n{}",
        String::from_utf8_lossy(&out.stderr),
        sshd.log()
    );
    assert_eq!(out.stdout, b"via-openssh\n");
}

#[tokio::test]
async fn connect_to_a_closed_port_is_unreachable() {
    let keys = SshdKeys::generate().unwrap();
    let target = keys.target(free_port().unwrap());
    let err = labrun_ssh::connect(&target, CONNECT).await.unwrap_err();
    assert!(matches!(err, SshError::Unreachable { .. }), "{err:?}");
    assert!(!err.is_final());
}

#[tokio::test]
async fn wait_until_ready_waits_for_a_server_that_starts_late() {
    let keys = SshdKeys::generate().unwrap();
    let port = free_port().unwrap();
    let target = keys.target(port);
    let server = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(2));
        Sshd::start_with(keys, port).unwrap()
    });
    let started = Instant::now();
    let mut attempts = 0;
    let session = labrun_ssh::wait_until_ready_with(
        &target,
        Duration::from_secs(30),
        &quick_retries(),
        &mut |n| attempts = n,
    )
    .await
    .unwrap();
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(1900), "{waited:?}");
    assert!(attempts >= 3, "refused attempts are retried: {attempts}");
    assert_eq!(session.exec("echo up").await.unwrap().stdout, b"up\n");
    let _sshd = server.join().unwrap();
}

/// Accepts TCP connections on `listener` and never says a word, like QEMU's
/// user-mode port forward before the guest's sshd listens. Holds the sockets
/// until `until` elapses, then closes them and the listener.
async fn silent_listener(listener: TcpListener, until: Duration, accepted: Arc<AtomicU32>) {
    let mut held = Vec::new();
    let deadline = tokio::time::Instant::now() + until;
    while let Ok(Ok((socket, _))) = tokio::time::timeout_at(deadline, listener.accept()).await {
        accepted.fetch_add(1, Ordering::SeqCst);
        held.push(socket);
    }
}

#[tokio::test]
async fn a_listener_that_never_speaks_is_retried_until_the_overall_timeout() {
    let keys = SshdKeys::generate().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = keys.target(listener.local_addr().unwrap().port());
    let accepted = Arc::new(AtomicU32::new(0));
    tokio::spawn(silent_listener(
        listener,
        Duration::from_secs(60),
        Arc::clone(&accepted),
    ));

    let overall = Duration::from_millis(3500);
    let started = Instant::now();
    let mut attempts = 0;
    let err = labrun_ssh::wait_until_ready_with(&target, overall, &quick_retries(), &mut |n| {
        attempts = n
    })
    .await
    .unwrap_err();
    let waited = started.elapsed();
    assert!(
        matches!(err, SshError::Timeout(d) if d == overall),
        "{err:?}"
    );
    // Each attempt is cut at 1 s; the whole wait at 3.5 s, not much later.
    assert!(attempts >= 3, "{attempts}");
    assert!(accepted.load(Ordering::SeqCst) >= 3);
    assert!(
        waited >= overall && waited < overall + Duration::from_secs(2),
        "{waited:?}"
    );

    // connect() alone is bounded by its own timeout the same way.
    let started = Instant::now();
    let err = labrun_ssh::connect(&target, Duration::from_millis(800))
        .await
        .unwrap_err();
    assert!(matches!(err, SshError::Timeout(_)), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn a_silent_listener_then_sshd_on_the_same_port_succeeds() {
    let keys = SshdKeys::generate().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let target = keys.target(port);
    let accepted = Arc::new(AtomicU32::new(0));
    let silent = tokio::spawn(silent_listener(
        listener,
        Duration::from_secs(2),
        Arc::clone(&accepted),
    ));
    // The server starts as soon as the silent phase is over.
    let server = tokio::spawn(async move {
        silent.await.unwrap();
        tokio::task::spawn_blocking(move || Sshd::start_with(keys, port).unwrap())
            .await
            .unwrap()
    });

    let mut attempts = 0;
    let session = labrun_ssh::wait_until_ready_with(
        &target,
        Duration::from_secs(30),
        &quick_retries(),
        &mut |n| attempts = n,
    )
    .await
    .unwrap();
    assert!(accepted.load(Ordering::SeqCst) >= 1);
    assert!(attempts >= 2, "{attempts}");
    assert_eq!(session.exec("echo ready").await.unwrap().stdout, b"ready\n");
    let _sshd = server.await.unwrap();
}

#[tokio::test]
async fn keepalives_keep_a_quiet_command_alive() {
    let sshd = Sshd::start().unwrap();
    // Keepalives every 300 ms, dead after 2 unanswered: a 3 s silent command
    // spans ten keepalive periods and must still finish normally.
    let options = ConnectOptions {
        keepalive_interval: Duration::from_millis(300),
        keepalive_max: 2,
        ..ConnectOptions::default()
    };
    let session = labrun_ssh::connect_with(&sshd.target(), CONNECT, &options)
        .await
        .unwrap();
    let out = session.exec("sleep 3; echo done").await.unwrap();
    assert_eq!(out.stdout, b"done\n");
    assert!(!session.is_closed());
}

#[tokio::test]
async fn keepalives_detect_a_peer_that_stopped_answering() {
    let sshd = Sshd::start().unwrap();
    let (relay_port, frozen) = freezable_relay(sshd.port()).await;
    let target = Target {
        port: relay_port,
        ..sshd.target()
    };
    let options = ConnectOptions {
        keepalive_interval: Duration::from_millis(500),
        keepalive_max: 2,
        ..ConnectOptions::default()
    };
    let session = labrun_ssh::connect_with(&target, CONNECT, &options)
        .await
        .unwrap();
    assert_eq!(
        session.exec("echo before").await.unwrap().stdout,
        b"before\n"
    );

    frozen.store(true, Ordering::SeqCst);
    let started = Instant::now();
    // Without keepalives this would wait for the full 60 s of the command.
    let result = tokio::time::timeout(Duration::from_secs(20), session.exec("sleep 60"))
        .await
        .expect("a dead peer must be noticed by the keepalives");
    let err = result.unwrap_err().to_string();
    assert!(err.contains("keepalive"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(session.is_closed());
    session.close().await.unwrap();
}
