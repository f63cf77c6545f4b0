//! SSH to the machine under test, with russh.
//!
//! The host key is always pinned: labrun generated it before boot (VM) or the
//! lab names it (existing machine). A server presenting another key is
//! refused with [`SshError::HostKeyMismatch`].
//!
//! STATUS: API contract only; the implementation lands with the VM issue.
//! Signatures here are what `labrun-vm` and the bench code against.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where and how to connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub host: String,
    pub port: u16,
    pub user: String,
    /// OpenSSH-format private key file (ed25519).
    pub client_key: PathBuf,
    /// The one host key accepted, as an OpenSSH public key line
    /// (`ssh-ed25519 AAAA... [comment]`).
    pub host_key: String,
}

#[derive(Debug, thiserror::Error)]
pub enum SshError {
    #[error("cannot reach {host}:{port}: {reason}")]
    Unreachable {
        host: String,
        port: u16,
        reason: String,
    },
    #[error(
        "the SSH server at {host}:{port} presented host key {presented}, but labrun pinned {expected}; refusing to connect (if the machine was rebuilt, run `labrun down` and `labrun up` again)"
    )]
    HostKeyMismatch {
        host: String,
        port: u16,
        expected: String,
        presented: String,
    },
    #[error("{host}:{port} refused key {key}: check the authorized key in the guest")]
    AuthRejected { host: String, port: u16, key: String },
    #[error("timed out after {0:?} waiting for SSH")]
    Timeout(Duration),
    #[error("key file {path}: {reason}")]
    Key { path: PathBuf, reason: String },
    #[error("SSH: {0}")]
    Protocol(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The result of one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// None when the remote side reported no exit status (killed by a signal).
    pub exit_code: Option<u32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// An open, authenticated connection. Cheap to share (`&Session`).
pub struct Session {
    _private: (),
}

fn not_yet() -> SshError {
    SshError::Protocol("the SSH client is not built yet".into())
}

/// Connects once, with `timeout` for TCP + handshake + auth.
pub async fn connect(_target: &Target, _timeout: Duration) -> Result<Session, SshError> {
    Err(not_yet())
}

/// Retries [`connect`] until it succeeds or `overall` elapses. `on_attempt` is
/// called before each attempt with its number (for progress displays). A host
/// key mismatch or an auth rejection is returned at once, never retried.
pub async fn wait_until_ready(
    _target: &Target,
    _overall: Duration,
    _on_attempt: &mut (dyn FnMut(u32) + Send),
) -> Result<Session, SshError> {
    Err(not_yet())
}

impl Session {
    /// Runs `command` (through the remote user's shell), collecting output.
    pub async fn exec(&self, _command: &str) -> Result<Output, SshError> {
        Err(not_yet())
    }

    /// Runs `command`, handing stdout and stderr chunks to the callbacks as
    /// they arrive. Returns the exit code.
    pub async fn exec_streaming(
        &self,
        _command: &str,
        _on_stdout: &mut (dyn FnMut(&[u8]) + Send),
        _on_stderr: &mut (dyn FnMut(&[u8]) + Send),
    ) -> Result<Option<u32>, SshError> {
        Err(not_yet())
    }

    /// Copies a local file to `remote` (absolute path), with `mode`.
    pub async fn upload(&self, _local: &Path, _remote: &str, _mode: u32) -> Result<(), SshError> {
        Err(not_yet())
    }

    /// Copies a remote file to `local`, writing a temporary file then renaming.
    pub async fn download(&self, _remote: &str, _local: &Path) -> Result<(), SshError> {
        Err(not_yet())
    }

    /// Copies a remote directory tree into `local` (created if needed).
    pub async fn download_dir(&self, _remote: &str, _local: &Path) -> Result<(), SshError> {
        Err(not_yet())
    }

    pub async fn close(self) -> Result<(), SshError> {
        Ok(())
    }
}

/// Creates a new ed25519 key pair: the private key in OpenSSH format at
/// `private` (mode 0600), returns the public key line (`ssh-ed25519 AAAA.. comment`)
/// and also writes it to `private` + `.pub`.
pub fn generate_ed25519(_private: &Path, _comment: &str) -> Result<String, SshError> {
    Err(not_yet())
}

/// Reads the public key line of an OpenSSH private key file.
pub fn public_key_line(_private: &Path) -> Result<String, SshError> {
    Err(not_yet())
}
