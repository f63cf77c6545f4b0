//! Helpers shared by the SSH integration tests (each test starts its own
//! OpenSSH server with `labrun_ssh::test_support::Sshd`).
#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use labrun_ssh::Session;
use labrun_ssh::test_support::Sshd;

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
