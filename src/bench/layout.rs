//! Where things live, on the host (`results/<run-id>/`) and in the guest
//! (`<remote base>/runs/<run-id>/`). One place, so `bench` and `--attach`
//! agree.

use std::path::{Path, PathBuf};

/// Host side.
#[derive(Debug, Clone)]
pub struct HostRun {
    pub dir: PathBuf,
}

impl HostRun {
    pub fn new(results_root: &Path, run_id: &str) -> HostRun {
        HostRun {
            dir: results_root.join(run_id),
        }
    }
    /// Everything the agent wrote, plus the host's own raw evidence.
    pub fn raw(&self) -> PathBuf {
        self.dir.join("raw")
    }
    /// What `--attach` needs to reconnect (not evidence).
    pub fn session_file(&self) -> PathBuf {
        self.dir.join("session.json")
    }
}

/// Guest side. Paths are strings: they are used in remote shell commands.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RemoteRun {
    pub base: String,
    pub run_id: String,
}

impl RemoteRun {
    pub fn agent(&self) -> String {
        format!("{}/bin/labrun-agent", self.base)
    }
    /// The marker a running agent holds locked: one per machine (per remote
    /// base folder), whatever the run, so a second run is noticed.
    pub fn agent_lock(&self) -> String {
        format!("{}/agent.lock", self.base)
    }
    pub fn dir(&self) -> String {
        format!("{}/runs/{}", self.base, self.run_id)
    }
    /// Datasets kept between the rounds of interleaved runs (a lab's
    /// variants): the machine's, since each variant is a run of its own.
    pub fn datasets(&self) -> String {
        format!("{}/datasets", self.base)
    }
    pub fn plan(&self) -> String {
        format!("{}/plan.json", self.dir())
    }
    pub fn work(&self) -> String {
        format!("{}/work", self.dir())
    }
    pub fn evidence(&self) -> String {
        format!("{}/evidence", self.dir())
    }
    pub fn pid_file(&self) -> String {
        format!("{}/agent.pid", self.dir())
    }
    pub fn agent_stdout(&self) -> String {
        format!("{}/agent.out", self.dir())
    }
    pub fn agent_stderr(&self) -> String {
        format!("{}/agent.err", self.dir())
    }
    pub fn exit_file(&self) -> String {
        format!("{}/agent.exit", self.dir())
    }
}

/// Paths in remote commands come from lab files and run ids: quoted by the
/// SSH crate's one rule.
pub use labrun_ssh::shell_quote as sh_quote;
