//! Helpers shared by the SSH integration tests (each test starts its own
//! OpenSSH server with `labrun_ssh::test_support::Sshd`).
#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use labrun_ssh::Session;
use labrun_ssh::test_support::Sshd;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub const CONNECT: Duration = Duration::from_secs(10);

pub async fn start_and_connect() -> (Sshd, Session) {
    let sshd = Sshd::start().unwrap();
    let session = labrun_ssh::connect(&sshd.target(), CONNECT)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}\nsshd log:\n{}", sshd.log()));
    (sshd, session)
}

/// SHA-256 by coreutils' `sha256sum`: an implementation independent of the
/// code under test, and fast even in a debug build.
pub fn sha256_file(path: &Path) -> String {
    let out = std::process::Command::new("sha256sum")
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "sha256sum {}", path.display());
    String::from_utf8(out.stdout).unwrap()[..64].to_string()
}

/// `size` bytes from the kernel's random source (fast, and incompressible,
/// so no layer can cheat with compression).
pub fn random_file(path: &Path, size: usize) {
    let mut urandom = std::fs::File::open("/dev/urandom").unwrap();
    let mut out = std::fs::File::create(path).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut left = size;
    while left > 0 {
        let n = left.min(buf.len());
        urandom.read_exact(&mut buf[..n]).unwrap();
        out.write_all(&buf[..n]).unwrap();
        left -= n;
    }
}

/// A TCP relay to `upstream` that can be frozen: once frozen it forwards
/// nothing more, in either direction, but keeps both sockets open, like a
/// guest that hangs or a network that drops everything.
pub async fn freezable_relay(upstream: u16) -> (u16, Arc<AtomicBool>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let frozen = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&frozen);
    tokio::spawn(async move {
        let (client, _) = listener.accept().await.unwrap();
        let server = TcpStream::connect(("127.0.0.1", upstream)).await.unwrap();
        let (cr, cw) = client.into_split();
        let (sr, sw) = server.into_split();
        async fn pump(
            mut from: tokio::net::tcp::OwnedReadHalf,
            mut to: tokio::net::tcp::OwnedWriteHalf,
            frozen: Arc<AtomicBool>,
        ) {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = match from.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                if frozen.load(Ordering::SeqCst) {
                    // Hold the sockets, forward nothing, for ever.
                    std::future::pending::<()>().await;
                }
                if to.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
        tokio::join!(
            pump(cr, sw, Arc::clone(&flag)),
            pump(sr, cw, Arc::clone(&flag))
        );
    });
    (port, frozen)
}
