//! SSH to the machine under test, with russh.
//!
//! The host key is always pinned: labrun generated it before boot (VM) or the
//! lab names it (existing machine). A server presenting another key is
//! refused with [`SshError::HostKeyMismatch`], and that is never retried.
//!
//! * [`connect`] / [`wait_until_ready`] open an authenticated [`Session`]
//!   (ed25519 client key, OpenSSH private key file).
//! * [`Session::exec`], [`Session::exec_streaming`], [`Session::exec_with_input`]
//!   run commands through the remote user's shell.
//! * [`Session::upload`], [`Session::download`], [`Session::upload_dir`],
//!   [`Session::download_dir`] move files as byte streams over exec channels
//!   (`cat`, `tar`): nothing is buffered whole, downloads land under a
//!   temporary name and are renamed when complete.
//! * [`generate_ed25519`] / [`public_key_line`] make and read the keys that are
//!   injected into the guest.
//!
//! Jump hosts: a [`Target`] with [`Target::via`] is reached through another
//! SSH server, like OpenSSH's `ProxyJump` (a remote hypervisor's QEMU
//! forwards the guest's sshd to 127.0.0.1:PORT *on that host*, which only its
//! own sshd reaches). labrun connects to the jump host (its host key pinned
//! too, its own user and key), asks its sshd for a `direct-tcpip` channel to
//! the target's `host:port` as seen from there, and runs the target's SSH
//! handshake over that channel: nothing listens on any network interface,
//! on either side. The [`Session`] owns the jump connection, which lives as
//! long as it and is closed with it; both hops follow the same
//! [`ConnectOptions`] keepalives. Errors say which hop failed: a jump host
//! presenting another key is a [`SshError::HostKeyMismatch`] naming the jump
//! host (final); a channel the jump host will not or cannot open is
//! [`SshError::Unreachable`] for the target, with a reason starting "through
//! user@jump:port:", and [`wait_until_ready`] retries it (a booting guest
//! looks exactly like that), over one jump connection for all its attempts.
//! Messages name a session through a jump as `127.0.0.1:40123 via
//! root@10.251.0.2:22`. A jump may itself have a jump.
//!
//! Long quiet commands: a bench step may print nothing for an hour. The client
//! therefore sets **no inactivity timeout**; instead it sends a keepalive after
//! every [`ConnectOptions::keepalive_interval`] of silence and gives up only
//! when [`ConnectOptions::keepalive_max`] of them in a row get no answer. A live
//! sshd answers keepalives whatever its command is doing, so a quiet command is
//! never cut, while a dead guest or network is noticed within minutes.
//!
//! With the `test-sshd` feature, [`test_support`] starts a throw-away OpenSSH
//! server on 127.0.0.1 for tests.

use std::path::PathBuf;
use std::time::Duration;

mod client;
mod exec;
mod jump;
mod keys;
mod shell;
mod transfer;

#[cfg(feature = "test-sshd")]
pub mod test_support;

pub use client::{
    ConnectOptions, Session, connect, connect_with, wait_until_ready, wait_until_ready_with,
};
pub use keys::{check_host_key_line, fingerprint_of_line, generate_ed25519, public_key_line};
/// Quotes one word for the remote POSIX shell (exec requests are one string).
pub use shell::quote as shell_quote;

/// Where and how to connect.
/// Serializable: a VM's state file records the hypervisor host it is
/// reached through.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Target {
    pub host: String,
    pub port: u16,
    pub user: String,
    /// OpenSSH-format private key file (ed25519).
    pub client_key: PathBuf,
    /// The one host key accepted, as an OpenSSH public key line
    /// (`ssh-ed25519 AAAA... [comment]`).
    pub host_key: String,
    /// The SSH server the connection goes through (like OpenSSH's
    /// `ProxyJump`), with its own user, key and pinned host key; None for a
    /// direct TCP connection. With a jump, `host:port` is as seen from the
    /// jump host (typically `127.0.0.1:PORT`, a port forwarded there by QEMU),
    /// and is reached through an SSH `direct-tcpip` channel: nothing listens
    /// on any network interface. A jump may itself have a jump.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<Box<Target>>,
}

impl Target {
    /// This target, reached through `jump` (which replaces any jump it had).
    pub fn through(self, jump: Target) -> Target {
        Target {
            via: Some(Box::new(jump)),
            ..self
        }
    }

    /// `user@host:port`, how a hop is named in messages.
    pub fn label(&self) -> String {
        format!("{}@{}:{}", self.user, self.host, self.port)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SshError {
    /// Through a jump, `host:port` is as seen from the jump host and
    /// `reason` starts with "through user@host:port: ".
    #[error("cannot reach {host}:{port}: {reason}")]
    Unreachable {
        host: String,
        port: u16,
        reason: String,
    },
    #[error(
        "the SSH server at {host}:{port}{} presented host key {presented}, but labrun pinned {expected}; refusing to connect (a machine that was rebuilt has a new key: for a VM labrun made, run `labrun down` and `labrun up` again; for a lab's `target:` or `hosts:` entry, check the new key on the machine itself (`ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub` there) before writing it into its `host_key`)",
        via_suffix(.via)
    )]
    HostKeyMismatch {
        host: String,
        port: u16,
        /// The jump(s) `host:port` was reached through (`user@host:port`,
        /// nearest first, joined by " via "); None for a direct connection.
        via: Option<String>,
        expected: String,
        presented: String,
    },
    #[error(
        "{host}:{port}{} refused key {key}: check the authorized key in the guest",
        via_suffix(.via)
    )]
    AuthRejected {
        host: String,
        port: u16,
        /// As in [`SshError::HostKeyMismatch`].
        via: Option<String>,
        key: String,
    },
    #[error("timed out after {0:?} waiting for SSH")]
    Timeout(Duration),
    #[error("key file {path}: {reason}")]
    Key { path: PathBuf, reason: String },
    #[error("SSH: {0}")]
    Protocol(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// " via user@host:port" when there is a jump, for error messages.
fn via_suffix(via: &Option<String>) -> String {
    via.as_ref()
        .map(|v| format!(" via {v}"))
        .unwrap_or_default()
}

impl SshError {
    /// Whether [`wait_until_ready`] gives up at once on this error: a wrong
    /// host key, a refused client key or an unreadable key file do not get
    /// better by waiting.
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            SshError::HostKeyMismatch { .. } | SshError::AuthRejected { .. } | SshError::Key { .. }
        )
    }
}

/// The result of one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// None when the remote side reported no exit status (killed by a signal).
    pub exit_code: Option<u32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Output {
    /// True when the command exited with status 0.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0)
    }
}
