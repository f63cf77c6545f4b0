//! Connecting: TCP (or a channel through a jump host), handshake with the
//! pinned host key, public-key auth, keepalives, and the retry loop used while
//! a machine boots.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use russh::client::{self, DisconnectReason, Handle, Msg};
use russh::keys::{PrivateKey, PrivateKeyWithHashAlg, PublicKey, PublicKeyOrCertificate};
use russh::{Channel, Disconnect};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::jump::{CLOSE_GRACE, open_through};
use crate::keys::{fingerprint, load_private_key, parse_public_line};
use crate::{SshError, Target};

/// How a connection is kept alive and how [`wait_until_ready_with`] retries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectOptions {
    /// A keepalive is sent after this long without hearing from the server.
    pub keepalive_interval: Duration,
    /// The connection is declared dead after this many keepalives in a row
    /// go unanswered, i.e. after about `keepalive_interval * keepalive_max`
    /// of total silence from sshd. A quiet *command* does not count: sshd
    /// answers keepalives while its command runs.
    pub keepalive_max: usize,
    /// [`wait_until_ready_with`]: the limit for one attempt (TCP + handshake +
    /// auth; through a jump, also connecting the jump host when that
    /// connection must be made). Short, because through QEMU's user-mode port
    /// forwarding the TCP connect succeeds before sshd listens and the banner
    /// never comes.
    pub attempt_timeout: Duration,
    /// [`wait_until_ready_with`]: the pause after a failed attempt.
    pub retry_pause: Duration,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            // 15 s x 8 = 2 minutes of silence from sshd before giving up:
            // long enough for a guest starved by a busy TCG vCPU, short enough
            // that a dead VM does not hang a run.
            keepalive_interval: Duration::from_secs(15),
            keepalive_max: 8,
            attempt_timeout: Duration::from_secs(5),
            retry_pause: Duration::from_millis(500),
        }
    }
}

/// An open, authenticated connection. Cheap to share (`&Session`): every
/// command runs on its own channel, so several may run at once (OpenSSH allows
/// 10 per connection by default).
///
/// Through a jump ([`Target::via`]) the session owns the jump host's
/// connection too: it lives as long as this session and is closed with it.
pub struct Session {
    pub(crate) handle: Handle<PinnedHostKey>,
    /// Why the connection ended, when it ended on its own (e.g. keepalives
    /// unanswered), for error messages.
    lost: Arc<Mutex<Option<String>>>,
    /// After `handle`, so that on drop this connection ends before the jump
    /// connection carrying it. Boxed: a session is moved around in enums,
    /// and its size is mostly the russh handle's.
    hop: Box<Hop>,
}

/// Where a session goes, and what it goes through.
struct Hop {
    host: String,
    port: u16,
    user: String,
    /// The connection this one runs through.
    jump: Option<Session>,
    /// Through a jump: fires when this connection's channel on the jump
    /// connection is finished with (see [`crate::jump::JumpStream`]).
    channel_done: Option<oneshot::Receiver<()>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("host", &self.hop.host)
            .field("port", &self.hop.port)
            .field("user", &self.hop.user)
            .field("via", &self.hop.jump.as_ref().map(|j| j.route()))
            .field("closed", &self.handle.is_closed())
            .finish()
    }
}

/// Connects once, with `timeout` for TCP + handshake + auth, and the default
/// [`ConnectOptions`].
pub async fn connect(target: &Target, timeout: Duration) -> Result<Session, SshError> {
    connect_with(target, timeout, &ConnectOptions::default()).await
}

/// [`connect`] with explicit keepalive settings.
pub async fn connect_with(
    target: &Target,
    timeout: Duration,
    options: &ConnectOptions,
) -> Result<Session, SshError> {
    Prepared::new(target)?
        .connect(&mut None, timeout, options)
        .await
}

/// Retries [`connect`] until it succeeds or `overall` elapses. `on_attempt` is
/// called before each attempt with its number (for progress displays). A host
/// key mismatch or an auth rejection is returned at once, never retried.
pub async fn wait_until_ready(
    target: &Target,
    overall: Duration,
    on_attempt: &mut (dyn FnMut(u32) + Send),
) -> Result<Session, SshError> {
    wait_until_ready_with(target, overall, &ConnectOptions::default(), on_attempt).await
}

/// [`wait_until_ready`] with explicit per-attempt timeout, pause and
/// keepalive settings. Every failure other than those [`SshError::is_final`]
/// names (refused, reset, banner timeout, handshake cut short) is retried until
/// `overall` has elapsed, then [`SshError::Timeout`] is returned.
///
/// Through a jump, one connection to the jump host serves all attempts (it is
/// made again only if it is lost): a long boot wait is one login there, not
/// one per attempt. A channel the jump host cannot open (nothing listens
/// there yet) is retried like a refused TCP connection.
pub async fn wait_until_ready_with(
    target: &Target,
    overall: Duration,
    options: &ConnectOptions,
    on_attempt: &mut (dyn FnMut(u32) + Send),
) -> Result<Session, SshError> {
    // Key problems are found before the first packet, and are final.
    let prepared = Prepared::new(target)?;
    // The jump host's connection, kept across attempts.
    let mut jump = None;
    let deadline = Instant::now() + overall;
    let mut attempt: u32 = 0;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(SshError::Timeout(overall));
        }
        attempt = attempt.saturating_add(1);
        on_attempt(attempt);
        match prepared
            .connect(&mut jump, options.attempt_timeout.min(left), options)
            .await
        {
            Ok(session) => return Ok(session),
            Err(e) if e.is_final() => return Err(e),
            Err(_) => {}
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(SshError::Timeout(overall));
        }
        tokio::time::sleep(options.retry_pause.min(left)).await;
    }
}

impl Session {
    /// Opens a session channel for one command.
    pub(crate) async fn open_channel(&self) -> Result<Channel<Msg>, SshError> {
        self.handle
            .channel_open_session()
            .await
            .map_err(|e| self.lost(&format!("cannot open a channel: {e}")))
    }

    /// The error for a connection that went away under us.
    pub(crate) fn lost(&self, what: &str) -> SshError {
        SshError::Protocol(format!(
            "{what} on {} ({}); the machine may have stopped or rebooted",
            self.place(),
            self.why_lost()
        ))
    }

    /// Why the connection ended, including the end of a jump under it.
    pub(crate) fn why_lost(&self) -> String {
        let mut why = lock(&self.lost)
            .clone()
            .unwrap_or_else(|| "the connection was closed".to_string());
        if let Some(jump) = self.hop.jump.as_ref().filter(|j| j.is_closed()) {
            why.push_str(&format!(
                "; the connection to the jump host {} ended: {}",
                jump.label(),
                jump.why_lost()
            ));
        }
        why
    }

    /// `host:port`, then ` via user@host:port` for each jump, nearest
    /// first: how this connection is named in messages.
    pub(crate) fn place(&self) -> String {
        format!("{}:{}{}", self.hop.host, self.hop.port, self.vias())
    }

    /// `user@host:port` of this hop.
    pub(crate) fn label(&self) -> String {
        format!("{}@{}:{}", self.hop.user, self.hop.host, self.hop.port)
    }

    /// [`Session::label`] with this hop's own jumps.
    pub(crate) fn route(&self) -> String {
        format!("{}{}", self.label(), self.vias())
    }

    fn vias(&self) -> String {
        self.hop
            .jump
            .as_ref()
            .map(|j| format!(" via {}", j.route()))
            .unwrap_or_default()
    }

    /// Whether the connection has ended (closed by us, by the server, or
    /// after unanswered keepalives).
    pub fn is_closed(&self) -> bool {
        self.handle.is_closed()
    }

    /// Says goodbye to the server, then to the jump host if there is one.
    /// Closing a connection that has already ended is not an error.
    pub async fn close(self) -> Result<(), SshError> {
        let mut result = Ok(());
        let mut next = Some(self);
        while let Some(session) = next {
            let (closed, jump) = session.close_one().await;
            // The first failure is the one worth reporting.
            result = result.and(closed);
            next = jump;
        }
        result
    }

    /// Closes this hop; returns the jump under it, still open.
    async fn close_one(self) -> (Result<(), SshError>, Option<Session>) {
        let place = self.place();
        let Session { handle, hop, .. } = self;
        let Hop {
            jump, channel_done, ..
        } = *hop;
        let result = if handle.is_closed() {
            Ok(())
        } else {
            match handle
                .disconnect(Disconnect::ByApplication, "labrun done", "en")
                .await
            {
                Ok(()) => Ok(()),
                Err(_) if handle.is_closed() => Ok(()),
                Err(e) => Err(SshError::Protocol(format!(
                    "closing the connection to {place}: {e}"
                ))),
            }
        };
        // The goodbye travels through the jump connection: let it arrive
        // (the server then closes the channel) before that connection goes.
        drop(handle);
        if let Some(done) = channel_done {
            let _ = tokio::time::timeout(CLOSE_GRACE * 2, done).await;
        }
        (result, jump)
    }
}

/// A boxed connection attempt (boxed because a jump is connected by the
/// same code, recursively).
type Attempt<'a> = Pin<Box<dyn Future<Output = Result<Session, SshError>> + Send + 'a>>;

/// A target whose keys (and its jumps' keys) have been read and checked,
/// ready to connect (again).
struct Prepared<'a> {
    target: &'a Target,
    pinned: PublicKey,
    client_key: Arc<PrivateKey>,
    via: Option<Box<Prepared<'a>>>,
}

impl<'a> Prepared<'a> {
    fn new(target: &'a Target) -> Result<Self, SshError> {
        let via = match target.via.as_deref() {
            Some(jump) => Some(Box::new(Prepared::new(jump)?)),
            None => None,
        };
        Ok(Prepared {
            target,
            pinned: parse_public_line(&target.host_key)?,
            client_key: Arc::new(load_private_key(&target.client_key)?),
            via,
        })
    }

    /// One attempt, bounded by `timeout` as a whole. `jump` holds the
    /// connection to the jump host: made first if it is None or lost, left
    /// there for the next attempt when this one fails (or is cut by the
    /// timeout), moved into the session when it succeeds.
    async fn connect(
        &self,
        jump: &mut Option<Session>,
        timeout: Duration,
        options: &ConnectOptions,
    ) -> Result<Session, SshError> {
        match tokio::time::timeout(timeout, self.connect_unbounded(jump, options)).await {
            Ok(result) => result,
            Err(_) => Err(SshError::Timeout(timeout)),
        }
    }

    fn connect_unbounded<'s>(
        &'s self,
        jump: &'s mut Option<Session>,
        options: &'s ConnectOptions,
    ) -> Attempt<'s> {
        Box::pin(async move {
            let t = self.target;
            let Some(via) = self.via.as_deref() else {
                let stream = TcpStream::connect((t.host.as_str(), t.port))
                    .await
                    .map_err(|e| unreachable(t, None, e.to_string()))?;
                // Commands and their replies are small packets; Nagle only
                // adds delay.
                stream.set_nodelay(true).ok();
                return self.handshake(stream, None, options).await;
            };
            // No await between take and insert: a timeout cannot lose a
            // live jump connection.
            let hop: &Session = match jump.take().filter(|j| !j.is_closed()) {
                Some(live) => jump.insert(live),
                None => jump.insert(via.connect_unbounded(&mut None, options).await?),
            };
            let route = hop.route();
            let (stream, channel_done) = open_through(hop, t)
                .await
                .map_err(|why| unreachable(t, Some(&route), why))?;
            let mut session = self.handshake(stream, Some(&route), options).await?;
            session.hop.jump = jump.take();
            session.hop.channel_done = Some(channel_done);
            Ok(session)
        })
    }

    /// The SSH handshake, host key check and authentication over `stream`
    /// (TCP, or a channel through the jump named `via`).
    async fn handshake<S>(
        &self,
        stream: S,
        via: Option<&str>,
        options: &ConnectOptions,
    ) -> Result<Session, SshError>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let t = self.target;

        let config = client::Config {
            keepalive_interval: Some(options.keepalive_interval),
            keepalive_max: options.keepalive_max,
            // No inactivity timeout: a bench step may be silent for an hour.
            // Dead peers are found by the keepalives instead.
            inactivity_timeout: None,
            nodelay: true,
            ..Default::default()
        };
        let lost = Arc::new(Mutex::new(None));
        let handler = PinnedHostKey {
            pinned: self.pinned.clone(),
            lost: Arc::clone(&lost),
        };
        let mut handle = client::connect_stream(Arc::new(config), stream, handler)
            .await
            .map_err(|e| match e {
                HandlerError::HostKey { presented } => SshError::HostKeyMismatch {
                    host: t.host.clone(),
                    port: t.port,
                    via: via.map(str::to_string),
                    expected: fingerprint(&self.pinned),
                    presented,
                },
                HandlerError::Russh(e) => unreachable(t, via, format!("SSH handshake failed: {e}")),
            })?;

        let key = PrivateKeyWithHashAlg::new(Arc::clone(&self.client_key), None);
        let auth = handle
            .authenticate_publickey(t.user.clone(), key)
            .await
            .map_err(|e| unreachable(t, via, format!("SSH authentication was cut short: {e}")))?;
        if !auth.success() {
            return Err(SshError::AuthRejected {
                host: t.host.clone(),
                port: t.port,
                via: via.map(str::to_string),
                key: format!(
                    "{} ({}, user {})",
                    fingerprint(self.client_key.public_key()),
                    t.client_key.display(),
                    t.user
                ),
            });
        }
        Ok(Session {
            handle,
            lost,
            hop: Box::new(Hop {
                host: t.host.clone(),
                port: t.port,
                user: t.user.clone(),
                jump: None,
                channel_done: None,
            }),
        })
    }
}

/// [`SshError::Unreachable`] for `target`; through a jump, the reason says
/// which one ("through user@host:port: ...").
fn unreachable(target: &Target, via: Option<&str>, reason: String) -> SshError {
    SshError::Unreachable {
        host: target.host.clone(),
        port: target.port,
        reason: match via {
            Some(via) => format!("through {via}: {reason}"),
            None => reason,
        },
    }
}

/// The russh handler: accepts exactly the pinned host key.
pub(crate) struct PinnedHostKey {
    pinned: PublicKey,
    lost: Arc<Mutex<Option<String>>>,
}

#[derive(Debug)]
pub(crate) enum HandlerError {
    Russh(russh::Error),
    /// The server's key is not the pinned one; carries its fingerprint.
    HostKey {
        presented: String,
    },
}

impl From<russh::Error> for HandlerError {
    fn from(e: russh::Error) -> Self {
        HandlerError::Russh(e)
    }
}

impl client::Handler for PinnedHostKey {
    type Error = HandlerError;

    async fn check_server_key(
        &mut self,
        server_key: &PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        match server_key {
            // Compare the key material only: the comment is not part of it.
            PublicKeyOrCertificate::PublicKey { key, .. }
                if key.key_data() == self.pinned.key_data() =>
            {
                Ok(true)
            }
            PublicKeyOrCertificate::PublicKey { key, .. } => Err(HandlerError::HostKey {
                presented: fingerprint(key),
            }),
            // We pin a plain key; a certificate is another key, whoever signed it.
            PublicKeyOrCertificate::Certificate(cert) => Err(HandlerError::HostKey {
                presented: format!(
                    "a certificate for {}",
                    cert.public_key().fingerprint(russh::keys::HashAlg::Sha256)
                ),
            }),
        }
    }

    async fn disconnected(
        &mut self,
        reason: DisconnectReason<Self::Error>,
    ) -> Result<(), Self::Error> {
        let (text, result) = match reason {
            DisconnectReason::ReceivedDisconnect(info) => (
                format!(
                    "the server disconnected: {:?} {}",
                    info.reason_code, info.message
                ),
                Ok(()),
            ),
            DisconnectReason::Error(HandlerError::Russh(russh::Error::KeepaliveTimeout)) => (
                "the server stopped answering keepalives".to_string(),
                Err(HandlerError::Russh(russh::Error::KeepaliveTimeout)),
            ),
            DisconnectReason::Error(e) => (format!("{e:?}"), Err(e)),
        };
        *lock(&self.lost) = Some(text);
        result
    }
}

/// Locks a mutex, ignoring poisoning: the data is a plain message.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
