//! Connecting to a run's machine, tried again when a handshake is dropped.

use crate::bench::machine::Access;
use anyhow::Context as _;
use std::time::Duration;

/// Connecting for a run is tried this many times, 2 s apart: a busy guest's
/// sshd can drop a handshake (seen through a pool host's jump, two TCG guests
/// having just booted side by side), and one dropped handshake would fail
/// the whole variant. A wrong key, a refused login or a timeout is final.
const CONNECT_ATTEMPTS: u32 = 3;
const CONNECT_PAUSE: Duration = Duration::from_secs(2);

pub async fn connect(access: &Access) -> anyhow::Result<labrun_ssh::Session> {
    connect_target(&access.target).await.with_context(|| {
        format!(
            "connecting to {}@{}:{}",
            access.target.user, access.target.host, access.target.port
        )
    })
}

/// [`labrun_ssh::connect`], tried again after a failure that may pass (the
/// last attempt's error is the one returned).
async fn connect_target(
    target: &labrun_ssh::Target,
) -> Result<labrun_ssh::Session, labrun_ssh::SshError> {
    let mut attempt = 1;
    loop {
        match labrun_ssh::connect(target, Duration::from_secs(30)).await {
            Err(e)
                if attempt < CONNECT_ATTEMPTS
                    && !e.is_final()
                    && !matches!(e, labrun_ssh::SshError::Timeout(_)) =>
            {
                attempt += 1;
                tokio::time::sleep(CONNECT_PAUSE).await;
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_dropped_handshake_is_tried_again() {
        use labrun_ssh::test_support::Sshd;
        let sshd = Sshd::start().expect("sshd");
        // A relay to the sshd that drops its first connection at once, as
        // a busy guest's sshd did.
        let relay = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = relay.local_addr().unwrap().port();
        let to = sshd.port();
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            while let Ok((mut client, _)) = relay.accept().await {
                if count.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                    drop(client);
                    continue;
                }
                tokio::spawn(async move {
                    if let Ok(mut server) = tokio::net::TcpStream::connect(("127.0.0.1", to)).await
                    {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
            }
        });
        let session = connect_target(&sshd.keys().target(port))
            .await
            .expect("the second attempt connects");
        let out = session.exec("echo hi").await.unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "hi");
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 2);
        // A refused login is final: one attempt, at once.
        let mut wrong = sshd.keys().target(port);
        wrong.user = "nobody-here".into();
        let before = accepted.load(std::sync::atomic::Ordering::SeqCst);
        assert!(connect_target(&wrong).await.is_err());
        assert_eq!(
            accepted.load(std::sync::atomic::Ordering::SeqCst),
            before + 1
        );
    }
}
