//! The environment a tool runs with. Not the agent's own: a benchmark must
//! not depend on whatever the shell that started the agent exported.
//!
//! Base: `PATH` (the agent's, or a standard one), `TMPDIR`, `LANG`, `LC_ALL`,
//! `TZ`, `USER` and `LOGNAME` when the agent has them, and `HOME` set to the
//! tool's `{work}` directory, so caches and config files a tool keeps under
//! `$HOME` start empty every cycle (a fresh cycle is fresh everywhere). The
//! plan's `env` comes on top and wins; its values may use placeholders
//! (e.g. `XDG_CACHE_HOME={work}/cache`).

use crate::run::placeholders::{Vars, substitute};
use std::collections::BTreeMap;

/// Passed through from the agent's environment when set.
const INHERITED: &[&str] = &["PATH", "TMPDIR", "LANG", "LC_ALL", "TZ", "USER", "LOGNAME"];
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// `inherited` looks a name up in the agent's environment (a parameter so
/// this stays a pure function).
pub fn tool_env(
    plan_env: &BTreeMap<String, String>,
    vars: &Vars,
    inherited: impl Fn(&str) -> Option<String>,
) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for name in INHERITED {
        if let Some(value) = inherited(name) {
            env.insert(name.to_string(), value);
        }
    }
    env.entry("PATH".to_string())
        .or_insert_with(|| DEFAULT_PATH.to_string());
    env.insert("HOME".to_string(), vars.work.clone());
    for (k, v) in plan_env {
        env.insert(k.clone(), substitute(v, vars));
    }
    env
}

/// The agent's own environment, for [`tool_env`].
pub fn from_process(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_plus_plan_with_placeholders() {
        let vars = Vars {
            work: "/w/work".into(),
            repo: "/w/repo".into(),
            ..Vars::default()
        };
        let mut plan = BTreeMap::new();
        plan.insert("RESTIC_PASSWORD".to_string(), "pw".to_string());
        plan.insert("XDG_CACHE_HOME".to_string(), "{work}/cache".to_string());
        plan.insert("TZ".to_string(), "UTC".to_string());
        let agent = |name: &str| match name {
            "PATH" => Some("/bin".to_string()),
            "TZ" => Some("Europe/Paris".to_string()),
            "SSH_AUTH_SOCK" | "RESTIC_REPOSITORY" => Some("leaked".to_string()),
            _ => None,
        };
        let env = tool_env(&plan, &vars, agent);
        assert_eq!(env["PATH"], "/bin");
        assert_eq!(env["HOME"], "/w/work");
        assert_eq!(env["XDG_CACHE_HOME"], "/w/work/cache");
        assert_eq!(env["RESTIC_PASSWORD"], "pw");
        assert_eq!(env["TZ"], "UTC", "the plan wins");
        assert!(!env.contains_key("SSH_AUTH_SOCK"));
        assert!(!env.contains_key("RESTIC_REPOSITORY"));
    }

    #[test]
    fn a_path_even_when_the_agent_has_none() {
        let env = tool_env(&BTreeMap::new(), &Vars::default(), |_| None);
        assert_eq!(env["PATH"], DEFAULT_PATH);
    }
}
