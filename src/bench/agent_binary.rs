//! Which static guest agent a run pushes.

use anyhow::bail;
use std::path::{Path, PathBuf};

/// The agent's place under an install prefix; the Makefile's `install`
/// target puts it there.
const INSTALLED_AGENT: &str = "lib/labrun/labrun-agent";

/// `--agent`, else `labrun-agent` beside this executable (`make build`),
/// else where `make install` puts it (`<prefix>/lib/labrun/` for
/// `<prefix>/bin/labrun`), else the `make agent` output under the current
/// folder.
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
        if let Some(prefix) = dir.parent() {
            candidates.push(prefix.join(INSTALLED_AGENT));
        }
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
