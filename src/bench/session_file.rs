//! `results/<run-id>/session.json`: how to find the run again after the
//! connection or the terminal was lost. Written atomically.

use crate::bench::layout::RemoteRun;
use serde::{Deserialize, Serialize};
use std::path::Path;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionFile {
    pub run_id: String,
    /// The lab file the run came from (absolute).
    pub lab_path: String,
    pub remote: RemoteRun,
    /// The agent's pid in the guest. `None` in the file written just before
    /// the agent is started (so a `bench` killed at that moment still leaves
    /// a run to attach to): the guest's pid file has it then.
    #[serde(default)]
    pub agent_pid: Option<u32>,
    pub started_unix: u64,
    /// The hypervisor of the lab's pool the run's machine is on (`--host`,
    /// or the host a pool run gave it), so `--attach` goes back to that
    /// host without being told. `None`: the lab's only (or first) host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

impl SessionFile {
    pub fn write(&self, path: &Path) -> anyhow::Result<()> {
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(self)?)?;
        std::fs::rename(&tmp, path)?;
        Ok(())
    }

    pub fn read(path: &Path) -> anyhow::Result<SessionFile> {
        let bytes = std::fs::read(path)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
        serde_json::from_slice(&bytes)
            .map_err(|e| anyhow::anyhow!("{} is not a labrun session file: {e}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_written_before_the_agent_started_has_no_pid_and_older_files_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.json");
        let mut s = SessionFile {
            run_id: "r".into(),
            lab_path: "/lab.yaml".into(),
            remote: RemoteRun {
                base: "/srv/labrun".into(),
                run_id: "r".into(),
            },
            agent_pid: None,
            started_unix: 1,
            host: None,
        };
        s.write(&path).unwrap();
        assert_eq!(SessionFile::read(&path).unwrap().agent_pid, None);
        s.agent_pid = Some(42);
        s.write(&path).unwrap();
        assert_eq!(SessionFile::read(&path).unwrap().agent_pid, Some(42));
        let older = r#"{"run_id":"r","lab_path":"/l","remote":{"base":"/b","run_id":"r"},"agent_pid":7,"started_unix":1}"#;
        std::fs::write(&path, older).unwrap();
        assert_eq!(SessionFile::read(&path).unwrap().agent_pid, Some(7));
    }
}
