//! The producer of a followed run: the agent's events streamed from where
//! the host's copy ends, split into lines and handed to every consumer
//! ([`crate::bench::events::Fanout`]) until the agent's wrapper exits. It
//! does nothing with them itself: writing, pulling and showing are the
//! consumers' ([`crate::bench::consumers`]).

use crate::bench::events::{Fanout, Line};
use crate::bench::layout::{RemoteRun, sh_quote};
use crate::bench::remote::{AgentState, agent_state};
use labrun_evidence::{Event, files};
use labrun_ssh::Session;
use std::path::Path;
use std::time::Duration;
use tokio::sync::mpsc;

/// How following ended.
#[derive(Debug)]
pub enum FollowEnd {
    /// The agent's wrapper exited: the run is over.
    AgentEnded,
    /// The SSH connection failed; the agent may still be running.
    ConnectionLost(String),
}

pub struct EventTail<'a> {
    pub session: &'a Session,
    pub remote: &'a RemoteRun,
    pub agent_pid: u32,
}

impl EventTail<'_> {
    /// Streams the events after the host's copy in `raw` into `out` until
    /// the agent's wrapper exits; `out` is closed (dropped) at the run's
    /// last event or when the stream ends, whichever comes first.
    pub async fn produce(&self, raw: &Path, out: Fanout) -> anyhow::Result<FollowEnd> {
        // Complete lines only: the host's copy is written line by line.
        let offset = std::fs::metadata(raw.join(files::EVENTS)).map_or(0, |m| m.len());
        let events_path = format!("{}/{}", self.remote.evidence(), files::EVENTS);
        // -F waits for the file to appear; --pid ends tail when the agent's
        // wrapper exits, so the stream closes by itself at the end of a run.
        // -s: how often tail looks for that exit (new lines come at once,
        // through inotify); the default second would be a second at the end
        // of every run.
        let command = format!(
            "tail -c +{start} -F -s 0.2 --pid={pid} {path} 2>/dev/null",
            start = offset + 1,
            pid = self.agent_pid,
            path = sh_quote(&events_path)
        );
        let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
        let stream = async move {
            let mut on_out = |b: &[u8]| {
                let _ = tx.send(b.to_vec());
            };
            let mut on_err = |_: &[u8]| {};
            let r = self
                .session
                .exec_streaming(&command, &mut on_out, &mut on_err)
                .await;
            drop(tx);
            r
        };
        // Ends at the run's last event (true), or when the stream does;
        // either way the consumers' queues close with it.
        let split = async move {
            let mut pending = Vec::new();
            while let Some(chunk) = rx.recv().await {
                pending.extend_from_slice(&chunk);
                while let Some(nl) = pending.iter().position(|&b| b == b'\n') {
                    let line = Line::parse(pending.drain(..=nl).collect());
                    let last = matches!(line.event, Some(Event::RunFinished { .. }));
                    out.send(line);
                    if last {
                        return true;
                    }
                }
            }
            false
        };
        let end_of = |streamed: Result<Option<u32>, labrun_ssh::SshError>| match streamed {
            Ok(_) => FollowEnd::AgentEnded,
            Err(e) => FollowEnd::ConnectionLost(e.to_string()),
        };
        let mut stream = std::pin::pin!(stream);
        let mut split = std::pin::pin!(split);
        tokio::select! {
            streamed = &mut stream => {
                // Whatever tail sent before it ended is still to be handed on.
                split.await;
                Ok(end_of(streamed))
            }
            finished = &mut split => {
                if !finished {
                    return Ok(end_of(stream.await));
                }
                // The agent's last event: its exit status follows at once,
                // sooner than tail notices the exit (it polls, and an exited
                // process may linger as a zombie until it is reaped).
                tokio::select! {
                    streamed = &mut stream => Ok(end_of(streamed)),
                    exited = self.wait_for_exit_status() => Ok(match exited {
                        Ok(()) => FollowEnd::AgentEnded,
                        Err(e) => FollowEnd::ConnectionLost(format!("{e:#}")),
                    }),
                }
            }
        }
    }

    /// Returns once the agent's wrapper has recorded how the agent ended
    /// (or the agent is gone).
    async fn wait_for_exit_status(&self) -> anyhow::Result<()> {
        loop {
            match agent_state(self.session, self.remote, self.agent_pid).await? {
                AgentState::Running => tokio::time::sleep(Duration::from_millis(50)).await,
                AgentState::Exited(_) | AgentState::Vanished => return Ok(()),
            }
        }
    }
}
