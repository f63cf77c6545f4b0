//! One agent per machine: the marker file (see [`labrun_evidence::marker`]),
//! held with `flock(LOCK_EX)` from the start of a run to the agent's exit.
//! The kernel drops the lock when the agent dies, however it dies, so a lock
//! that can be taken means the agent named in the file is gone; what that
//! agent left behind (its running tool) is the caller's to stop.
//!
//! The file is never removed or replaced: the lock belongs to its inode, and
//! a second agent opening a new file at the same path would not see it. Its
//! content is rewritten in place, always [`MARKER_LEN`] bytes (JSON padded
//! with spaces), so a reader never sees the end of an older, longer one.

use crate::run::error::RunError;
use crate::run::process;
use labrun_evidence::AgentMarker;
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Mutex;

/// The marker's size on disk: a run id is at most 64 characters, so the
/// JSON of the agent and one tool fits many times over.
const MARKER_LEN: usize = 1024;

/// The name of the marker file in the work folder when `--lock` is not given.
pub const DEFAULT_LOCK_NAME: &str = "labrun-agent.lock";

pub struct AgentLock {
    // Opened with O_CLOEXEC (as std opens every file): a tool must not
    // inherit it, or a tool outliving a killed agent would hold the lock.
    file: File,
    marker: Mutex<AgentMarker>,
}

impl AgentLock {
    /// Takes the lock at `path` for run `run_id` and writes this agent into
    /// it. Returns the marker a previous (dead) agent left, if any.
    pub fn acquire(
        path: &Path,
        run_id: &str,
    ) -> Result<(AgentLock, Option<AgentMarker>), RunError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| RunError::io("cannot create the folder of the lock", dir, e))?;
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(|e| RunError::io("cannot open the agent's lock", path, e))?;
        // SAFETY: flock(2) on a descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
                let holder = read_marker(path);
                return Err(RunError::AnotherAgent {
                    lock: path.to_path_buf(),
                    run_id: holder.as_ref().map(|m| m.run_id.clone()),
                    pid: holder.map(|m| m.agent.pid),
                });
            }
            return Err(RunError::io("cannot lock", path, err));
        }
        let previous = read_marker(path);
        let agent = process::process_id(std::process::id()).ok_or_else(|| {
            RunError::io(
                "cannot read this agent's own process status",
                "/proc/self/stat",
                std::io::Error::last_os_error(),
            )
        })?;
        let lock = AgentLock {
            file,
            marker: Mutex::new(AgentMarker {
                run_id: run_id.to_string(),
                agent,
                tool: None,
            }),
        };
        lock.file
            .set_len(MARKER_LEN as u64)
            .map_err(|e| RunError::io("cannot write the agent's lock", path, e))?;
        let marker = lock.lock_marker().clone();
        lock.write(&marker)
            .map_err(|e| RunError::io("cannot write the agent's lock", path, e))?;
        Ok((lock, previous))
    }

    /// Records the tool now running (the leader of its process group), or
    /// none. Best effort: a marker that could not be updated only means a
    /// tool left by a killed agent is not stopped by the next one.
    pub fn record_tool(&self, group: Option<i32>) {
        let mut marker = self.lock_marker();
        marker.tool = group
            .and_then(|g| u32::try_from(g).ok())
            .and_then(process::process_id);
        let _ = self.write(&marker);
    }

    fn lock_marker(&self) -> std::sync::MutexGuard<'_, AgentMarker> {
        // Poisoned only by a panic elsewhere; the marker is plain data.
        self.marker.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One write at offset 0, of the same length every time. Not fsync'd:
    /// this is written while a timed tool runs, and the marker only has to
    /// outlive the agent, not the machine (a reboot ends its tool too).
    fn write(&self, marker: &AgentMarker) -> std::io::Result<()> {
        let mut bytes = serde_json::to_vec(marker).map_err(std::io::Error::other)?;
        if bytes.len() < MARKER_LEN {
            bytes.resize(MARKER_LEN - 1, b' ');
            bytes.push(b'\n');
        }
        self.file.write_all_at(&bytes, 0)
    }
}

/// The marker at `path`, if it holds one (an empty or foreign file does not).
pub fn read_marker(path: &Path) -> Option<AgentMarker> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(text.trim()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_with_the_holders_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/agent.lock");
        let (first, previous) = AgentLock::acquire(&path, "run-a").unwrap();
        assert_eq!(previous, None);
        let marker = read_marker(&path).unwrap();
        assert_eq!(marker.run_id, "run-a");
        assert_eq!(marker.agent.pid, std::process::id());
        assert!(process::is_running(&marker.agent));
        assert_eq!(std::fs::metadata(&path).unwrap().len(), MARKER_LEN as u64);

        let err = AgentLock::acquire(&path, "run-b").err().unwrap();
        let text = err.to_string();
        assert!(
            text.contains("run-a") && text.contains("--attach run-a"),
            "{text}"
        );

        // Released with the descriptor: the next agent finds the marker.
        drop(first);
        let (_second, previous) = AgentLock::acquire(&path, "run-b").unwrap();
        assert_eq!(previous.unwrap().run_id, "run-a");
        assert_eq!(read_marker(&path).unwrap().run_id, "run-b");
    }

    #[test]
    fn the_running_tool_is_recorded_and_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent.lock");
        let (lock, _) = AgentLock::acquire(&path, "run").unwrap();
        let me = std::process::id() as i32;
        lock.record_tool(Some(me));
        let tool = read_marker(&path).unwrap().tool.unwrap();
        assert_eq!(tool.pid, me as u32);
        assert!(tool.start_ticks > 0);
        lock.record_tool(None);
        assert_eq!(read_marker(&path).unwrap().tool, None);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), MARKER_LEN as u64);
    }
}
