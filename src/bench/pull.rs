//! Following a run: stream the agent's events from where the host copy ends,
//! hand each to the display, and pull each finished step's evidence at once,
//! so a lost connection loses nothing already measured.
//!
//! The events are consumed once: a finished step's record arrives in its
//! event and is appended to the host's `records.jsonl` from there; the
//! step's two logs come in one exec, framed as `<bytes> <path>` lines each
//! followed by exactly that many bytes. At the end the whole evidence folder
//! is pulled, and the guest's own files replace the host's copies.

use crate::bench::layout::{RemoteRun, sh_quote};
use crate::bench::remote::{AgentState, agent_state};
use labrun_evidence::{Event, files};
use labrun_ssh::Session;
use std::io::Write;
use std::path::{Path, PathBuf};
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
        // -s: how often tail looks for that exit (new lines come at once,
        // through inotify); the default second would be a second at the end
        // of every run.
        let command = format!(
            "tail -c +{start} -F -s 0.2 --pid={pid} {path} 2>/dev/null",
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
        // Ends at the run's last event (true), or when the stream does.
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
                    if matches!(event, Event::RunFinished { .. }) {
                        return anyhow::Ok(true);
                    }
                }
            }
            anyhow::Ok(false)
        };
        let end_of = |streamed: Result<Option<u32>, labrun_ssh::SshError>| match streamed {
            Ok(_) => FollowEnd::AgentEnded,
            Err(e) => FollowEnd::ConnectionLost(e.to_string()),
        };
        let mut stream = std::pin::pin!(stream);
        let mut consume = std::pin::pin!(consume);
        tokio::select! {
            streamed = &mut stream => {
                // Whatever tail sent before it ended is still to be handled.
                consume.await?;
                Ok(end_of(streamed))
            }
            finished = &mut consume => {
                if !finished? {
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

    /// Appends the step's record (from its event) and pulls its logs.
    /// Failures are not fatal: the final pull gets everything again.
    async fn pull_step(&self, record: &labrun_evidence::StepRecord) {
        let _ = self.append_record(record);
        let wanted: Vec<String> = [&record.stdout_path, &record.stderr_path]
            .into_iter()
            .flatten()
            .filter(|rel| safe_join(&self.raw, rel).is_some())
            .cloned()
            .collect();
        if wanted.is_empty() {
            return;
        }
        let script = framed_cat_script(&self.remote.evidence(), &wanted);
        let Ok(out) = self.session.exec(&script).await else {
            return;
        };
        for (rel, bytes) in parse_framed(&out.stdout) {
            let Some(local) = safe_join(&self.raw, &rel).filter(|_| wanted.contains(&rel)) else {
                continue;
            };
            let _ = write_replacing(&local, &bytes);
        }
    }

    fn append_record(&self, record: &labrun_evidence::StepRecord) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(record)?;
        line.push(b'\n');
        std::fs::create_dir_all(&self.raw)?;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.raw.join(files::RECORDS))?;
        f.write_all(&line)
    }

    /// Pulls the whole evidence folder (the agent's copy of events included).
    pub async fn pull_all(&self) -> anyhow::Result<()> {
        self.session
            .download_dir(&self.remote.evidence(), &self.raw)
            .await?;
        Ok(())
    }
}

/// Logs bigger than this wait for the final pull (one exec's output is
/// held in memory).
const STEP_PULL_MAX_FILE: u64 = 8 << 20;

/// Prints each file of `rels` (relative to `dir`) that exists as a
/// `<bytes> <path>` line and exactly that many bytes. `head -c` so a file
/// that grows meanwhile still matches its header.
fn framed_cat_script(dir: &str, rels: &[String]) -> String {
    let list: Vec<String> = rels.iter().map(|r| sh_quote(r)).collect();
    format!(
        "cd {dir} || exit 1\n\
         for f in {list}; do\n\
         [ -f \"$f\" ] || continue\n\
         n=$(wc -c < \"$f\") || continue\n\
         [ \"$n\" -le {max} ] || continue\n\
         printf '%s %s\\n' \"$n\" \"$f\" && head -c \"$n\" \"$f\"\n\
         done",
        dir = sh_quote(dir),
        list = list.join(" "),
        max = STEP_PULL_MAX_FILE,
    )
}

/// Splits [`framed_cat_script`]'s output; stops at anything malformed or cut.
fn parse_framed(mut out: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    while let Some(nl) = out.iter().position(|&b| b == b'\n') {
        let header = String::from_utf8_lossy(&out[..nl]).into_owned();
        let Some((n, name)) = header.split_once(' ') else {
            break;
        };
        let Ok(n) = n.parse::<usize>() else { break };
        let body = &out[nl + 1..];
        if body.len() < n {
            break;
        }
        files.push((name.to_string(), body[..n].to_vec()));
        out = &body[n..];
    }
    files
}

/// Writes `path` through a temporary file beside it, so a reader (or a
/// crash) never sees half of it.
fn write_replacing(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut name = std::ffi::OsString::from(".");
    name.push(path.file_name().unwrap_or_default());
    name.push(".labrun-part");
    let tmp = path.with_file_name(name);
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
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
    fn framed_files_round_trip_through_sh() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("logs/restic")).unwrap();
        std::fs::write(dir.path().join("records.jsonl"), "{\"a\":1}\n{\"b\"").unwrap();
        std::fs::write(dir.path().join("logs/restic/c1-init.out"), "").unwrap();
        let binary: Vec<u8> = (0..=255u8).chain(b"\n12 x\n".iter().copied()).collect();
        std::fs::write(dir.path().join("logs/restic/c1-init.err"), &binary).unwrap();
        let rels = [
            "records.jsonl",
            "logs/restic/c1-init.out",
            "logs/restic/missing.out",
            "logs/restic/c1-init.err",
        ]
        .map(String::from);
        let script = framed_cat_script(&dir.path().display().to_string(), &rels);
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let files = parse_framed(&out.stdout);
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "records.jsonl",
                "logs/restic/c1-init.out",
                "logs/restic/c1-init.err"
            ]
        );
        assert_eq!(files[0].1, b"{\"a\":1}\n{\"b\"");
        assert!(files[1].1.is_empty());
        assert_eq!(files[2].1, binary);
        // A cut stream gives the files that came whole, and no more.
        let cut = &out.stdout[..out.stdout.len() - 1];
        assert_eq!(parse_framed(cut).len(), 2);
    }

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
