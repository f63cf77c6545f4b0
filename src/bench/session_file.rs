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
    /// The agent's pid in the guest.
    pub agent_pid: u32,
    pub started_unix: u64,
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
