//! Running commands: one exec channel per command, output handed over as it
//! arrives, optional input streamed to the command's stdin.

use russh::ChannelMsg;
use russh::ChannelReadHalf;
use tokio::io::AsyncRead;

use crate::client::Session;
use crate::{Output, SshError};

/// Where a command's output goes while it runs.
pub(crate) trait Sink {
    /// A chunk of stdout. An error stops the command (its channel is closed).
    async fn stdout(&mut self, data: &[u8]) -> Result<(), SshError>;
    /// A chunk of stderr.
    fn stderr(&mut self, data: &[u8]);
}

/// How a command ended.
#[derive(Debug)]
pub(crate) struct Finished {
    pub exit_code: Option<u32>,
    /// Set when the command was killed by a signal (then `exit_code` is None).
    pub signal: Option<String>,
    /// Whether all of the input reached the channel before the command ended.
    pub input_complete: bool,
}

/// What the server told us on the channel.
struct Received {
    exit_code: Option<u32>,
    signal: Option<String>,
}

struct Callbacks<'a> {
    on_stdout: &'a mut (dyn FnMut(&[u8]) + Send),
    on_stderr: &'a mut (dyn FnMut(&[u8]) + Send),
}

impl Sink for Callbacks<'_> {
    async fn stdout(&mut self, data: &[u8]) -> Result<(), SshError> {
        (self.on_stdout)(data);
        Ok(())
    }
    fn stderr(&mut self, data: &[u8]) {
        (self.on_stderr)(data)
    }
}

impl Session {
    /// Runs `command` (through the remote user's shell), collecting output.
    /// The command's stdin is at end-of-file from the start. There is no time
    /// limit: wrap the call in `tokio::time::timeout` where one is wanted.
    /// As with OpenSSH's `ssh`, the command counts as running while anything
    /// holds its stdout/stderr open: start background processes with their
    /// output redirected (`nohup x >log 2>&1 &`).
    pub async fn exec(&self, command: &str) -> Result<Output, SshError> {
        self.exec_collecting(command, None).await
    }

    /// Runs `command` with `input` as its stdin (then end-of-file),
    /// collecting output.
    pub async fn exec_with_input(&self, command: &str, input: &[u8]) -> Result<Output, SshError> {
        self.exec_collecting(command, Some(input)).await
    }

    /// Runs `command`, handing stdout and stderr chunks to the callbacks as
    /// they arrive. Returns the exit code (None when killed by a signal).
    pub async fn exec_streaming(
        &self,
        command: &str,
        on_stdout: &mut (dyn FnMut(&[u8]) + Send),
        on_stderr: &mut (dyn FnMut(&[u8]) + Send),
    ) -> Result<Option<u32>, SshError> {
        let mut sink = Callbacks {
            on_stdout,
            on_stderr,
        };
        let finished = self
            .run(command, None::<tokio::io::Empty>, &mut sink)
            .await?;
        Ok(finished.exit_code)
    }

    async fn exec_collecting(
        &self,
        command: &str,
        input: Option<&[u8]>,
    ) -> Result<Output, SshError> {
        let mut stdout = Vec::new();
        let mut stderr = Vec::new();
        let mut on_stdout = |d: &[u8]| stdout.extend_from_slice(d);
        let mut on_stderr = |d: &[u8]| stderr.extend_from_slice(d);
        let mut sink = Callbacks {
            on_stdout: &mut on_stdout,
            on_stderr: &mut on_stderr,
        };
        let finished = self.run(command, input, &mut sink).await?;
        Ok(Output {
            exit_code: finished.exit_code,
            stdout,
            stderr,
        })
    }

    /// Runs `command` on a new channel: streams `input` (if any, then EOF) to
    /// its stdin while handing its output to `sink`, until the server closes
    /// the channel.
    pub(crate) async fn run<S: Sink, R: AsyncRead + Unpin>(
        &self,
        command: &str,
        input: Option<R>,
        sink: &mut S,
    ) -> Result<Finished, SshError> {
        let channel = self.open_channel().await?;
        channel
            .exec(true, command)
            .await
            .map_err(|e| self.lost(&format!("cannot start a command ({e})")))?;
        let (mut read, write) = channel.split();

        let (received, input_complete) = {
            let send = async {
                let sent = match input {
                    Some(r) => write.data(r).await,
                    None => Ok(()),
                };
                // Always send EOF, even after a failed send: a command reading
                // stdin would otherwise wait for ever.
                let eof = write.eof().await;
                sent.and(eof)
            };
            let receive = receive_all(&mut read, sink);
            tokio::pin!(send, receive);
            let mut sent: Option<bool> = None;
            loop {
                tokio::select! {
                    r = &mut send, if sent.is_none() => sent = Some(r.is_ok()),
                    // The command has ended; input it did not read is dropped
                    // (the send would otherwise wait for window space for ever).
                    r = &mut receive => break (r, sent == Some(true)),
                }
            }
        };
        let received = match received {
            Ok(r) => r,
            Err(e) => {
                // Our side failed (e.g. the local disk is full): stop the
                // remote command rather than leaving it blocked on the window.
                let _ = write.close().await;
                return Err(e);
            }
        };
        match received {
            Received {
                exit_code: None,
                signal: None,
            } => Err(self.lost(&format!(
                "`{command}` ended without an exit status (connection lost?)"
            ))),
            Received { exit_code, signal } => Ok(Finished {
                exit_code,
                signal,
                input_complete,
            }),
        }
    }
}

async fn receive_all<S: Sink>(
    read: &mut ChannelReadHalf,
    sink: &mut S,
) -> Result<Received, SshError> {
    let mut received = Received {
        exit_code: None,
        signal: None,
    };
    while let Some(msg) = read.wait().await {
        match msg {
            ChannelMsg::Data { data } => sink.stdout(&data).await?,
            // Extended data type 1 is stderr (RFC 4254 §5.2); there is no other.
            ChannelMsg::ExtendedData { data, ext: 1 } => sink.stderr(&data),
            ChannelMsg::ExitStatus { exit_status } => received.exit_code = Some(exit_status),
            ChannelMsg::ExitSignal {
                signal_name,
                core_dumped,
                error_message,
                ..
            } => {
                received.signal = Some(format!(
                    "{signal_name:?}{}{}",
                    if core_dumped { " (core dumped)" } else { "" },
                    if error_message.is_empty() {
                        String::new()
                    } else {
                        format!(": {error_message}")
                    }
                ))
            }
            ChannelMsg::Failure => {
                return Err(SshError::Protocol(
                    "the server refused to run the command (exec request failed)".into(),
                ));
            }
            ChannelMsg::Close => break,
            _ => {}
        }
    }
    Ok(received)
}
