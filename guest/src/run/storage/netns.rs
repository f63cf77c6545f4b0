//! The agent's own network namespace and the veth pair into it: the client
//! end (`10.250.0.1/30`) stays in the agent's namespace, where the tools
//! run; the server end (`10.250.0.2/30`) lives in the namespace with the
//! server. The /30 holds only these two addresses and no route leads
//! anywhere else. Deleting the namespace removes the pair.

use super::cmd::run;
use super::error::StorageError;

pub const CLIENT_ADDRESS: &str = "10.250.0.1";
pub const SERVER_ADDRESS: &str = "10.250.0.2";
const PREFIX: &str = "/30";
/// `labrun-store-<pid>`: the pid tells a later agent whether its owner lives.
pub const NAME_PREFIX: &str = "labrun-store-";

pub struct Namespace {
    pub name: String,
    /// The veth end in the agent's namespace.
    pub client_dev: String,
    /// The veth end inside [`Namespace::name`].
    pub server_dev: String,
    deleted: bool,
}

impl Namespace {
    /// The names for the agent `pid` (interface names stay within the
    /// kernel's 15 characters).
    pub fn names(pid: u32) -> (String, String, String) {
        (
            format!("{NAME_PREFIX}{pid}"),
            format!("lrs{pid}c"),
            format!("lrs{pid}s"),
        )
    }

    /// Creates the namespace and the pair, addressed and up. Whatever was
    /// made before a failure is removed again (by the returned value's drop
    /// or right here).
    pub fn create(pid: u32) -> Result<Namespace, StorageError> {
        if let Some(device) = device_with(CLIENT_ADDRESS)? {
            return Err(StorageError::AddressInUse {
                address: CLIENT_ADDRESS.into(),
                device,
            });
        }
        let (name, client_dev, server_dev) = Namespace::names(pid);
        run(&["ip", "netns", "add", &name])?;
        let ns = Namespace {
            name,
            client_dev,
            server_dev,
            deleted: false,
        };
        let (n, c, s) = (&ns.name, &ns.client_dev, &ns.server_dev);
        let client = format!("{CLIENT_ADDRESS}{PREFIX}");
        let server = format!("{SERVER_ADDRESS}{PREFIX}");
        run(&["ip", "link", "add", c, "type", "veth", "peer", "name", s])?;
        // Moved before anything else, so a failure below still leaves the
        // pair in the namespace that the drop deletes.
        run(&["ip", "link", "set", s, "netns", n])?;
        run(&["ip", "addr", "add", &client, "dev", c])?;
        run(&["ip", "link", "set", c, "up"])?;
        run(&["ip", "-n", n, "addr", "add", &server, "dev", s])?;
        run(&["ip", "-n", n, "link", "set", s, "up"])?;
        run(&["ip", "-n", n, "link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// Kills whatever still runs in the namespace, deletes it (and with it
    /// the pair). Idempotent; an error is for a warning.
    pub fn delete(&mut self) -> Result<(), StorageError> {
        if self.deleted {
            return Ok(());
        }
        kill_all_in(&self.name);
        let deleted = run(&["ip", "netns", "delete", &self.name]);
        // The client end goes with its peer; should the namespace have been
        // gone already, it may still be here.
        let _ = run(&["ip", "link", "delete", &self.client_dev]);
        self.deleted = deleted.is_ok();
        deleted.map(|_| ())
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = self.delete();
    }
}

/// SIGKILLs every process in namespace `name` (the server and its
/// children: sshd's sessions start sessions of their own, so its process
/// group does not hold them all).
pub fn kill_all_in(name: &str) {
    let Ok(pids) = run(&["ip", "netns", "pids", name]) else {
        return;
    };
    for pid in pids
        .split_whitespace()
        .filter_map(|p| p.parse::<i32>().ok())
    {
        // SAFETY: kill(2) has no memory-safety preconditions.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

/// The interface that holds `address` in the agent's namespace, if any.
fn device_with(address: &str) -> Result<Option<String>, StorageError> {
    let out = run(&["ip", "-o", "-4", "addr", "show"])?;
    Ok(device_in_listing(&out, address))
}

/// From `ip -o -4 addr show` lines (`3: eth0    inet 10.0.0.2/24 ...`).
fn device_in_listing(listing: &str, address: &str) -> Option<String> {
    listing.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        let _index = words.next()?;
        let device = words.next()?;
        let _family = words.next()?;
        let addr = words.next()?.split('/').next()?;
        (addr == address).then(|| device.trim_end_matches(':').to_string())
    })
}

/// The agents' namespaces (`ip netns list`) whose agent is gone: removed,
/// with what was done for a warning each.
pub fn remove_leftovers(own_pid: u32) -> Vec<String> {
    let Ok(list) = run(&["ip", "netns", "list"]) else {
        return Vec::new();
    };
    leftover_names(&list, own_pid, agent_alive)
        .into_iter()
        .map(|(name, pid)| {
            let (_, client_dev, server_dev) = Namespace::names(pid);
            let mut ns = Namespace {
                name: name.clone(),
                client_dev,
                server_dev,
                deleted: false,
            };
            match ns.delete() {
                Ok(()) => format!(
                    "the storage network {name} of an agent that is gone (pid {pid}) was still there: removed it, and what ran in it, before this run"
                ),
                Err(e) => format!(
                    "the storage network {name} of an agent that is gone (pid {pid}) is still there and could not be removed ({e}): remove it with `ip netns delete {name}`"
                ),
            }
        })
        .collect()
}

/// The names in an `ip netns list` listing (`name (id: 3)` or `name`) that
/// are an agent's and whose agent is not alive.
fn leftover_names(listing: &str, own_pid: u32, alive: impl Fn(u32) -> bool) -> Vec<(String, u32)> {
    listing
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter_map(|name| {
            let pid = name.strip_prefix(NAME_PREFIX)?.parse::<u32>().ok()?;
            (pid != own_pid && !alive(pid)).then(|| (name.to_string(), pid))
        })
        .collect()
}

/// Whether `pid` is a running labrun-agent (a recycled pid is some other
/// program).
fn agent_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .is_ok_and(|comm| comm.trim().starts_with("labrun-agent"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_the_kernels_limit() {
        let (ns, c, s) = Namespace::names(4_194_304);
        assert_eq!(ns, "labrun-store-4194304");
        assert!(c.len() <= 15 && s.len() <= 15 && c != s, "{c} {s}");
    }

    #[test]
    fn finds_the_device_of_an_address() {
        let listing = "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever\n\
                       7: lrs12c    inet 10.250.0.1/30 scope global lrs12c\\       valid_lft forever\n";
        assert_eq!(
            device_in_listing(listing, "10.250.0.1").as_deref(),
            Some("lrs12c")
        );
        assert_eq!(device_in_listing(listing, "10.250.0.2"), None);
    }

    #[test]
    fn leftovers_are_the_dead_agents_only() {
        let listing = "labrun-store-10 (id: 0)\nlabrun-store-11\nother-ns\nlabrun-store-x\nlabrun-store-12 (id: 2)\n";
        let found = leftover_names(listing, 12, |pid| pid == 11);
        assert_eq!(found, vec![("labrun-store-10".to_string(), 10)]);
    }
}
