//! The hop through a jump host: a `direct-tcpip` channel from the jump
//! host's sshd to `host:port` as seen from there, used as the byte stream of
//! the next SSH connection (what OpenSSH's `ProxyJump` does). Nothing listens
//! anywhere: the jump host's sshd makes the TCP connection itself.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use russh::ChannelOpenFailure;
use russh::ChannelStream;
use russh::client::Msg;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::sync::oneshot;

use crate::Target;
use crate::client::Session;

/// The originator a `direct-tcpip` request names. There is no local socket
/// behind the channel, so no real address to report; sshd only logs it.
const ORIGINATOR: (&str, u32) = ("127.0.0.1", 0);

/// How long a finished connection's channel may take to be closed by the
/// far end before it is closed from our side.
pub(crate) const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// Opens a channel from `hop` to `target.host:target.port`. The error is the
/// reason, for [`crate::SshError::Unreachable`] (the caller says "through").
/// The receiver fires once the channel is finished with (see [`JumpStream`]).
pub(crate) async fn open_through(
    hop: &Session,
    target: &Target,
) -> Result<(JumpStream, oneshot::Receiver<()>), String> {
    let channel = hop
        .handle
        .channel_open_direct_tcpip(
            target.host.as_str(),
            u32::from(target.port),
            ORIGINATOR.0,
            ORIGINATOR.1,
        )
        .await
        .map_err(|e| refused(hop, target, e))?;
    let (ended, on_end) = oneshot::channel();
    Ok((
        JumpStream {
            stream: Some(channel.into_stream()),
            ended: Some(ended),
        },
        on_end,
    ))
}

/// The channel as the next connection's byte stream, with a gentler end
/// than russh's: when the connection over it is done (the stream is
/// dropped), the channel is not closed at once but half-closed (EOF), and
/// what the far end still sends is read until it closes too. Closing at once
/// could make the jump host's sshd drop the last bytes (the inner goodbye)
/// before writing them to the guest, all the more when the jump connection
/// is closed right after. The receiver [`open_through`] returns fires then,
/// and the jump connection is closed only after that.
pub(crate) struct JumpStream {
    /// Some until dropped.
    stream: Option<ChannelStream<Msg>>,
    ended: Option<oneshot::Sender<()>>,
}

impl AsyncRead for JumpStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.stream.as_mut() {
            Some(stream) => Pin::new(stream).poll_read(cx, buf),
            None => Poll::Ready(Ok(())),
        }
    }
}

impl AsyncWrite for JumpStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.stream.as_mut() {
            Some(stream) => Pin::new(stream).poll_write(cx, buf),
            None => Poll::Ready(Err(io::ErrorKind::BrokenPipe.into())),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.stream.as_mut() {
            Some(stream) => Pin::new(stream).poll_flush(cx),
            None => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.stream.as_mut() {
            Some(stream) => Pin::new(stream).poll_shutdown(cx),
            None => Poll::Ready(Ok(())),
        }
    }
}

impl Drop for JumpStream {
    fn drop(&mut self) {
        let (Some(mut stream), ended) = (self.stream.take(), self.ended.take()) else {
            return;
        };
        // Outside a runtime nothing can wait: the channel just closes.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let _ = tokio::time::timeout(CLOSE_GRACE, async {
                let _ = stream.shutdown().await;
                let mut sink = [0u8; 4096];
                while let Ok(1..) = stream.read(&mut sink).await {}
            })
            .await;
            drop(stream);
            if let Some(ended) = ended {
                let _ = ended.send(());
            }
        });
    }
}

/// Why the jump host did not open the channel, in words that say what to do.
fn refused(hop: &Session, target: &Target, e: russh::Error) -> String {
    let there = format!("{}:{}", target.host, target.port);
    match e {
        // OpenSSH: its connect() to the destination failed (usually
        // refused: the guest's sshd or QEMU's forward is not listening yet).
        russh::Error::ChannelOpenFailure(ChannelOpenFailure::ConnectFailed) => {
            format!("the jump host could not connect to {there} (nothing listening there yet?)")
        }
        russh::Error::ChannelOpenFailure(ChannelOpenFailure::AdministrativelyProhibited) => {
            format!(
                "the jump host's sshd refused to forward to {there} \
                 (check AllowTcpForwarding and PermitOpen in its sshd_config)"
            )
        }
        russh::Error::ChannelOpenFailure(other) => {
            format!("the jump host refused a channel to {there}: {other:?}")
        }
        _ if hop.is_closed() => {
            format!("the connection to the jump host ended ({})", hop.why_lost())
        }
        other => format!("cannot open a channel to {there}: {other}"),
    }
}
