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
                .unwrap_or_else(|| system_or_xdg("/var/cache/labrun", "XDG_CACHE_HOME", ".cache")),
            state_root: g.state.clone().unwrap_or_else(|| {
                system_or_xdg("/var/lib/labrun", "XDG_STATE_HOME", ".local/state")
            }),
            host: g.host.clone(),
            force_host: g.force_host,
        }
    }
}

/// As root, the system folder: libvirt's QEMU user must reach the images and
/// overlays, and root's home is closed to it (0700). Otherwise the XDG one.
fn system_or_xdg(system: &str, var: &str, fallback: &str) -> PathBuf {
    use std::os::unix::fs::MetadataExt;
    // /proc/self belongs to the process's effective user.
    if std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0) {
        PathBuf::from(system)
    } else {
        xdg_dir(var, fallback)
    }
}

/// `$VAR/labrun`, else `$HOME/<fallback>/labrun`, else `/var/tmp/labrun`.
fn xdg_dir(var: &str, fallback: &str) -> PathBuf {
    if let Some(d) = std::env::var_os(var).filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("labrun");
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(home) => PathBuf::from(home).join(fallback).join("labrun"),
        None => PathBuf::from("/var/tmp/labrun"),
    }
}
