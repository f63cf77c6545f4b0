//! The host-level pieces of the remote-hypervisor fixture: the names one
//! fixture uses, running commands, reading processes from /proc, and removing
//! everything a fixture (or an earlier, killed run of one) left behind.
//!
//! Everything here works from names alone, so a run that was killed (no
//! Drop ran) is cleaned by the next one: the names carry the pid of the test
//! process that made them, and a name whose pid is dead is a leftover.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// What every name of one fixture is made of: the test process's pid and a
/// serial (two fixtures of one test binary may run at once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Names {
    pub pid: u32,
    pub serial: u32,
}

/// Names start with these; [`Names::parse`] reads them back.
const NS_PREFIX: &str = "labrun-rhv-";
const USER_PREFIX: &str = "labrun-rhv";
const DIR_SUFFIX: &str = ".d";

impl Names {
    fn tag(&self) -> String {
        format!("{}-{}", self.pid, self.serial)
    }

    /// The network namespace (`ip netns`).
    pub fn namespace(&self) -> String {
        format!("{NS_PREFIX}{}", self.tag())
    }

    /// The throw-away system user (at most 20 characters: useradd allows 32).
    pub fn user(&self) -> String {
        format!("{USER_PREFIX}{}", self.tag())
    }

    /// The user's home: the hypervisor host's side of everything (libvirt's
    /// session state, sockets, and what labrun uploads).
    pub fn home(&self) -> PathBuf {
        PathBuf::from(format!("/var/tmp/{USER_PREFIX}{}", self.tag()))
    }

    /// Root's side (keys, sshd config and pid file); 0700.
    pub fn dir(&self) -> PathBuf {
        PathBuf::from(format!("/var/tmp/{NS_PREFIX}{}{DIR_SUFFIX}", self.tag()))
    }

    /// The veth end in the root namespace (at most 14 characters: IFNAMSIZ
    /// allows 15).
    pub fn veth_host(&self) -> String {
        format!("rhv{}h", self.tag())
    }

    /// The veth end inside the namespace.
    pub fn veth_ns(&self) -> String {
        format!("rhv{}n", self.tag())
    }

    /// The names a namespace, user or directory name belongs to.
    pub fn parse(name: &str) -> Option<Names> {
        let tag = name
            .strip_prefix(NS_PREFIX)
            .or_else(|| name.strip_prefix(USER_PREFIX))?;
        let tag = tag.strip_suffix(DIR_SUFFIX).unwrap_or(tag);
        let (pid, serial) = tag.split_once('-')?;
        let names = Names {
            pid: pid.parse().ok()?,
            serial: serial.parse().ok()?,
        };
        // Only exact round trips: never touch a look-alike name.
        let ours = [
            names.namespace(),
            names.user(),
            file_name(&names.home()),
            file_name(&names.dir()),
        ];
        ours.contains(&name.to_string()).then_some(names)
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Runs a command to the end; its output, or an error naming it.
pub fn run(program: &str, args: &[&str]) -> Result<Output, String> {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))
}

/// Runs a command that must succeed; an error with its stderr otherwise.
pub fn run_ok(program: &str, args: &[&str]) -> Result<Output, String> {
    let out = run(program, args)?;
    if out.status.success() {
        Ok(out)
    } else {
        Err(format!(
            "`{program} {}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The effective uid of this process (from /proc: the tests link no libc crate).
pub fn current_uid() -> Result<u32, String> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| format!("cannot read /proc/self/status: {e}"))?;
    status_ids(&status, "Uid:")
        .and_then(|ids| ids.get(1).copied())
        .ok_or_else(|| "no Uid line in /proc/self/status".to_string())
}

/// The numbers of a `Uid:`/`Gid:` line of /proc/PID/status (real, effective,
/// saved, filesystem).
fn status_ids(status: &str, key: &str) -> Option<Vec<u32>> {
    let line = status.lines().find(|l| l.starts_with(key))?;
    Some(
        line[key.len()..]
            .split_whitespace()
            .filter_map(|n| n.parse().ok())
            .collect(),
    )
}

/// A user's uid and primary gid, if the user exists.
pub fn user_ids(user: &str) -> Option<(u32, u32)> {
    let out = run("getent", &["passwd", user]).ok()?;
    if !out.status.success() {
        return None;
    }
    let line = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut fields = line.trim().split(':').skip(2);
    Some((fields.next()?.parse().ok()?, fields.next()?.parse().ok()?))
}

/// One process, as /proc shows it.
#[derive(Debug, Clone)]
pub struct Process {
    pub pid: u32,
    /// Real and effective uid.
    pub uids: (u32, u32),
    /// Exited but not yet reaped: holds nothing but its pid.
    pub zombie: bool,
    /// `net:[INODE]`, the network namespace it lives in.
    pub net_ns: String,
    /// The command line, arguments joined by spaces.
    pub cmdline: String,
}

/// Every process of the host. Processes that end while being read are
/// left out.
pub fn processes() -> Vec<Process> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(process)
        .collect()
}

fn process(pid: u32) -> Option<Process> {
    let base = PathBuf::from(format!("/proc/{pid}"));
    let status = std::fs::read_to_string(base.join("status")).ok()?;
    let uids = status_ids(&status, "Uid:")?;
    let state = status.lines().find(|l| l.starts_with("State:"))?;
    let cmdline = std::fs::read(base.join("cmdline")).unwrap_or_default();
    Some(Process {
        pid,
        uids: (*uids.first()?, *uids.get(1)?),
        zombie: state["State:".len()..].trim_start().starts_with('Z'),
        net_ns: std::fs::read_link(base.join("ns/net"))
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default(),
        cmdline: String::from_utf8_lossy(&cmdline)
            .split('\0')
            .filter(|a| !a.is_empty())
            .collect::<Vec<_>>()
            .join(" "),
    })
}

/// `net:[INODE]` of a named namespace, as /proc/PID/ns/net reads for its
/// processes; None when the namespace does not exist.
pub fn namespace_id(namespace: &str) -> Option<String> {
    let meta = std::fs::metadata(format!("/run/netns/{namespace}")).ok()?;
    Some(format!("net:[{}]", meta.ino()))
}

/// The processes (zombies too) that belong to a fixture: run by its user, or
/// living in its namespace.
fn fixture_processes(uid: Option<u32>, net_ns: Option<&str>) -> Vec<Process> {
    processes()
        .into_iter()
        .filter(|p| {
            uid.is_some_and(|u| p.uids.0 == u || p.uids.1 == u)
                || net_ns.is_some_and(|ns| p.net_ns == ns)
        })
        .collect()
}

/// SIGKILLs, by pid, every live process of the user or in the namespace,
/// again and again (a dying daemon may just have forked) until none is left;
/// then waits a little for their zombies to be reaped (by init, here).
/// The processes still alive at the end, if any.
pub fn kill_fixture_processes(uid: Option<u32>, net_ns: Option<&str>) -> Vec<Process> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut quiet_since: Option<Instant> = None;
    loop {
        let all = fixture_processes(uid, net_ns);
        let live: Vec<Process> = all.iter().filter(|p| !p.zombie).cloned().collect();
        if live.is_empty() {
            // Zombies hold no resources; a few seconds for init to reap them.
            let quiet = *quiet_since.get_or_insert_with(Instant::now);
            if all.is_empty() || quiet.elapsed() >= Duration::from_secs(5) {
                return Vec::new();
            }
        } else if Instant::now() >= deadline {
            return live;
        } else {
            quiet_since = None;
            let pids: Vec<String> = live.iter().map(|p| p.pid.to_string()).collect();
            let mut args = vec!["-KILL", "--"];
            args.extend(pids.iter().map(String::as_str));
            // Some may have ended meanwhile: kill's status says nothing useful.
            let _ = run("kill", &args);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The names of the network namespaces (`ip netns list` prints `NAME` or
/// `NAME (id: N)`).
pub fn namespaces() -> Vec<String> {
    run("ip", &["netns", "list"])
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter_map(|l| l.split_whitespace().next().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

pub fn link_exists(name: &str) -> bool {
    Path::new("/sys/class/net").join(name).exists()
}

/// Removes all of one fixture: its processes, namespace (which takes the
/// veth pair with it), user, group, home and root-side directory. Every
/// step is tried; the ones that failed are returned.
pub fn remove_fixture(names: &Names) -> Vec<String> {
    let mut failed = Vec::new();
    let ns = names.namespace();
    let user = names.user();
    let uid = user_ids(&user).map(|(uid, _)| uid);
    let ns_id = namespace_id(&ns);
    for p in kill_fixture_processes(uid, ns_id.as_deref()) {
        failed.push(format!("process {} ({}) would not die", p.pid, p.cmdline));
    }
    if namespaces().contains(&ns)
        && let Err(e) = run_ok("ip", &["netns", "delete", &ns])
    {
        failed.push(e);
    }
    // The veth goes with the namespace, but the kernel tears a namespace
    // down in the background: wait for that before deleting it by hand
    // (needed when the namespace was never made, or the veth not moved in).
    let veth = names.veth_host();
    let deadline = Instant::now() + Duration::from_secs(5);
    while link_exists(&veth) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    if link_exists(&veth)
        && let Err(e) = run_ok("ip", &["link", "delete", &veth])
        && link_exists(&veth)
    {
        failed.push(e);
    }
    if uid.is_some()
        && let Err(e) = run_ok("userdel", &["--force", "--remove", &user])
    {
        failed.push(e);
    }
    // userdel removes the user's group when it is the user's own; not if an
    // earlier run died between groupadd and useradd.
    if run("getent", &["group", &user]).is_ok_and(|o| o.status.success())
        && let Err(e) = run_ok("groupdel", &[&user])
    {
        failed.push(e);
    }
    for dir in [names.home(), names.dir()] {
        if dir.exists()
            && let Err(e) = std::fs::remove_dir_all(&dir)
        {
            failed.push(format!("cannot remove {}: {e}", dir.display()));
        }
    }
    failed
}

/// Every fixture on this host whose test process is dead: namespaces, users
/// and directories with our names. (A live pid's fixture may be another
/// test's, running now: left alone.)
pub fn leftovers() -> Vec<Names> {
    let mut found: Vec<Names> = namespaces()
        .iter()
        .filter_map(|n| Names::parse(n))
        .collect();
    if let Ok(passwd) = std::fs::read_to_string("/etc/passwd") {
        found.extend(
            passwd
                .lines()
                .filter_map(|l| Names::parse(l.split(':').next().unwrap_or(""))),
        );
    }
    if let Ok(entries) = std::fs::read_dir("/var/tmp") {
        found.extend(
            entries
                .filter_map(Result::ok)
                .filter_map(|e| Names::parse(&e.file_name().to_string_lossy())),
        );
    }
    found.sort_by_key(|n| (n.pid, n.serial));
    found.dedup();
    found.retain(|n| !Path::new(&format!("/proc/{}", n.pid)).exists());
    found
}
