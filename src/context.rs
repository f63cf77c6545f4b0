//! Global settings, resolved once from the command line and environment.

use crate::cli::GlobalArgs;
use std::path::PathBuf;

#[derive(Clone)]
pub struct Context {
    pub lab_path: PathBuf,
    pub mirror: Option<PathBuf>,
    pub cache_dir: PathBuf,
    pub state_root: PathBuf,
    /// `--host`: one hypervisor of the lab's pool.
    pub host: Option<String>,
    /// `--force-host`: use a host that is not what the lab expects.
    pub force_host: bool,
}

impl Context {
    pub fn from_cli(g: &GlobalArgs) -> Context {
        Context {
            lab_path: g.lab.clone(),
            mirror: g.mirror.clone(),
            cache_dir: g
                .cache
                .clone()
                .unwrap_or_else(crate::folders::default_cache),
            state_root: g
                .state
                .clone()
                .unwrap_or_else(crate::folders::default_state),
            host: g.host.clone(),
            force_host: g.force_host,
        }
    }

    /// A context for a command's unit test that must touch no cache or
    /// state folder: both point at paths that do not exist.
    #[cfg(test)]
    pub fn for_tests() -> Context {
        Context {
            lab_path: "lab.yaml".into(),
            mirror: None,
            cache_dir: "/nonexistent/cache".into(),
            state_root: "/nonexistent/state".into(),
            host: None,
            force_host: false,
        }
    }
}
