//! Which static guest agent a run pushes.

use anyhow::bail;
use std::path::{Path, PathBuf};

/// `--agent`, else `labrun-agent` beside this executable, else the `make
/// agent` output under the current folder.
pub fn locate_agent(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(p) = given {
        if p.is_file() {
            return Ok(p.to_path_buf());
        }
        bail!(
            "the agent {} does not exist: build it with `make agent`",
            p.display()
        );
    }
    let mut candidates = Vec::new();
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        candidates.push(dir.join("labrun-agent"));
    }
    candidates.push(PathBuf::from(
        "target/x86_64-unknown-linux-gnu/release/labrun-agent",
    ));
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .ok_or_else(|| {
            anyhow::anyhow!(
                "no static guest agent found: build it with `make agent`, or name it with --agent / LABRUN_AGENT"
            )
        })
}
