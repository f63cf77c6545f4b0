//! Following a run: stream the agent's events from where the host copy ends,
//! hand each to the display, and pull each finished step's evidence at once,
//! so a lost connection loses nothing already measured.

use crate::bench::layout::{RemoteRun, sh_quote};
use labrun_evidence::{Event, files};
use labrun_ssh::Session;
use std::io::Write;
use std::path::{Path, PathBuf};
use tokio::sync::mpsc;

/// How following ended.
#[derive(Debug)]
pub enum FollowEnd {
    /// The agent's wrapper exited: the run is over.
    AgentEnded,
    /// The SSH connection failed; the agent may still be running.
    ConnectionLost(String),
}

pub struct Follower<'a> {
    pub session: &'a Session,
    pub remote: &'a RemoteRun,
    pub raw: PathBuf,
    pub agent_pid: u32,
}

impl Follower<'_> {
    fn local_events(&self) -> PathBuf {
        self.raw.join(files::EVENTS)
    }

    /// Byte offset of what the host already has (complete lines only).
    fn offset(&self) -> u64 {
        std::fs::metadata(self.local_events()).map_or(0, |m| m.len())
    }

    /// Streams events until the agent's wrapper exits.
    pub async fn follow(&self, on_event: &mut dyn FnMut(&Event)) -> anyhow::Result<FollowEnd> {
        std::fs::create_dir_all(self.raw.join(files::LOGS_DIR))?;
        let events_path = format!("{}/{}", self.remote.evidence(), files::EVENTS);
        // -F waits for the file to appear; --pid ends tail when the agent's
        // wrapper exits, so the stream closes by itself at the end of a run.
        let command = format!(
            "tail -c +{start} -F --pid={pid} {path} 2>/dev/null",
            start = self.offset() + 1,
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
        let consume = async {
            let mut pending = Vec::new();
            let mut local = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(self.local_events())?;
            while let Some(chunk) = rx.recv().await {
                pending.extend_from_slice(&chunk);
                while let Some(nl) = pending.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = pending.drain(..=nl).collect();
                    local.write_all(&line)?;
                    local.flush()?;
                    let Ok(event) = serde_json::from_slice::<Event>(&line) else {
                        continue;
                    };
                    if let Event::StepFinished { record } = &event {
                        self.pull_step(record).await;
                    }
                    on_event(&event);
                }
            }
            anyhow::Ok(())
        };
        let (streamed, consumed) = tokio::join!(stream, consume);
        consumed?;
        match streamed {
            Ok(_) => Ok(FollowEnd::AgentEnded),
            Err(e) => Ok(FollowEnd::ConnectionLost(e.to_string())),
        }
    }

    /// Pulls the records file and the step's logs. Failures are not fatal:
    /// the final pull gets everything again.
    async fn pull_step(&self, record: &labrun_evidence::StepRecord) {
        let ev = self.remote.evidence();
        let _ = self
            .session
            .download(
                &format!("{ev}/{}", files::RECORDS),
                &self.raw.join(files::RECORDS),
            )
            .await;
        for rel in [&record.stdout_path, &record.stderr_path]
            .into_iter()
            .flatten()
        {
            if let Some(local) = safe_join(&self.raw, rel) {
                if let Some(parent) = local.parent() {
                    let _ = std::fs::create_dir_all(parent);
                }
                let _ = self.session.download(&format!("{ev}/{rel}"), &local).await;
            }
        }
    }

    /// Pulls the whole evidence folder (the agent's copy of events included).
    pub async fn pull_all(&self) -> anyhow::Result<()> {
        self.session
            .download_dir(&self.remote.evidence(), &self.raw)
            .await?;
        Ok(())
    }
}

/// Joins a relative path from the guest under `base`, refusing anything that
/// would climb out of it.
fn safe_join(base: &Path, rel: &str) -> Option<PathBuf> {
    let p = Path::new(rel);
    if p.is_absolute()
        || p.components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return None;
    }
    Some(base.join(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_join_refuses_escapes() {
        let b = Path::new("/r");
        assert_eq!(
            safe_join(b, "logs/a.out"),
            Some(PathBuf::from("/r/logs/a.out"))
        );
        assert_eq!(safe_join(b, "../x"), None);
        assert_eq!(safe_join(b, "/etc/passwd"), None);
    }
}
