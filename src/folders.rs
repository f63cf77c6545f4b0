//! Where labrun keeps its cache and per-lab state on this host: the one
//! place that decides it (`--cache`/`--state` and LABRUN_CACHE/LABRUN_STATE
//! override it).
//!
//! Root keeps the system folders (`/var/cache/labrun`, `/var/lib/labrun`):
//! the system daemon's QEMU user must reach the images and overlays, and
//! root's home is closed to it (0700). Anyone else gets the XDG folders,
//! `$XDG_CACHE_HOME/labrun` (default `~/.cache/labrun`) and
//! `$XDG_STATE_HOME/labrun` (default `~/.local/state/labrun`): their own,
//! never root's.

use std::ffi::OsString;
use std::path::PathBuf;

pub const SYSTEM_CACHE: &str = "/var/cache/labrun";
pub const SYSTEM_STATE: &str = "/var/lib/labrun";

/// The default folders for this process (its effective user and its
/// environment).
pub fn default_cache() -> PathBuf {
    decide(
        labrun_vm::access::is_root(),
        SYSTEM_CACHE,
        "XDG_CACHE_HOME",
        ".cache",
        &env,
    )
}

pub fn default_state() -> PathBuf {
    decide(
        labrun_vm::access::is_root(),
        SYSTEM_STATE,
        "XDG_STATE_HOME",
        ".local/state",
        &env,
    )
}

/// The cache and state folders `ctx` names can be written by this user,
/// checked before anything is fetched: a cache made by an earlier `sudo
/// labrun` is named with the fix, not met as a bare "Permission denied".
pub fn ensure_usable(ctx: &crate::context::Context) -> anyhow::Result<()> {
    use labrun_vm::access::{Folder, ensure_writable};
    ensure_writable(&ctx.cache_dir, Folder::Cache)?;
    ensure_writable(&ctx.state_root, Folder::State)?;
    Ok(())
}

fn env(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// As root, `system`; otherwise `$VAR/labrun`, else `$HOME/<fallback>/labrun`,
/// else `/var/tmp/labrun-<uid>` (a user without a home still gets a folder
/// of its own). An empty or relative `$VAR` is ignored, as the XDG base
/// directory specification says.
fn decide(
    root: bool,
    system: &str,
    var: &str,
    fallback: &str,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> PathBuf {
    if root {
        return PathBuf::from(system);
    }
    if let Some(d) = env(var).map(PathBuf::from).filter(|d| d.is_absolute()) {
        return d.join("labrun");
    }
    match env("HOME").filter(|h| !h.is_empty()) {
        Some(home) => PathBuf::from(home).join(fallback).join("labrun"),
        None => PathBuf::from(format!("/var/tmp/labrun-{}", labrun_vm::access::euid())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn with<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn root_keeps_the_system_folders_whatever_the_environment() {
        let env = with(&[("XDG_CACHE_HOME", "/home/u/.c"), ("HOME", "/root")]);
        let cache = decide(true, SYSTEM_CACHE, "XDG_CACHE_HOME", ".cache", &env);
        assert_eq!(cache, PathBuf::from("/var/cache/labrun"));
        let state = decide(true, SYSTEM_STATE, "XDG_STATE_HOME", ".local/state", &env);
        assert_eq!(state, PathBuf::from("/var/lib/labrun"));
    }

    #[test]
    fn a_user_gets_the_xdg_folders() {
        let set = with(&[("XDG_CACHE_HOME", "/data/c"), ("HOME", "/home/u")]);
        let unset = with(&[("HOME", "/home/u")]);
        let relative = with(&[("XDG_STATE_HOME", "rel"), ("HOME", "/home/u")]);
        let d = |var, fallback, env: &dyn Fn(&str) -> Option<OsString>| {
            decide(false, "/sys", var, fallback, env)
        };
        assert_eq!(
            d("XDG_CACHE_HOME", ".cache", &set),
            PathBuf::from("/data/c/labrun")
        );
        assert_eq!(
            d("XDG_CACHE_HOME", ".cache", &unset),
            PathBuf::from("/home/u/.cache/labrun")
        );
        assert_eq!(
            d("XDG_STATE_HOME", ".local/state", &relative),
            PathBuf::from("/home/u/.local/state/labrun")
        );
        let homeless = d("XDG_STATE_HOME", ".local/state", &with(&[]));
        assert!(homeless.starts_with("/var/tmp") && homeless != Path::new("/var/tmp/labrun"));
    }
}
