//! Every timed step in a cgroup (v2) of its own, so that its figures are
//! its whole process tree's and nothing it started outlives it.
//!
//! `wait4`'s rusage only covers the descendants a process waited for, and
//! its `ru_maxrss` is the largest single process: a tool that runs helpers
//! beside itself (duplicity's gpg) or that daemonizes one into its own
//! session (duplicity's `gpg-agent`) is under-counted, and the daemon runs
//! on after the step. A cgroup holds every process forked inside it,
//! whatever its process group or session, and the kernel accounts them
//! together: `cpu.stat`, `memory.stat`/`memory.peak`, `io.stat`, `pids.*`.
//!
//! Layout: `<cgroup2 mount>/labrun-agent/agent-<pid>/<step>`, one subtree
//! per agent process so that agents side by side never touch each other's
//! steps; a subtree whose agent is dead (killed with SIGKILL) is emptied and
//! removed by the next agent start. The agent enables the controllers it
//! can (`memory`, `pids`, `io`) down to its steps, and says in the evidence
//! which figures the kernel would not give.

use super::sampler::{CgroupFiles, SamplerResult, sample_until, usec};
use labrun_evidence::TreeMeters;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The agent's own subtree under the cgroup2 mount.
const SUBTREE: &str = "labrun-agent";
/// Controllers asked for; `cpu.stat` needs none.
const CONTROLLERS: [&str; 3] = ["memory", "pids", "io"];
/// How long leftovers get to die after `cgroup.kill`.
const KILL_WAIT: Duration = Duration::from_secs(5);
/// How long what is still in a step's cgroup when its tool exits gets to
/// leave by itself before it counts as left running: the tool's group was
/// just killed (a timeout, a planned kill) and its members are exiting.
const SETTLE: Duration = Duration::from_millis(300);

/// Where steps' cgroups are made, or why they cannot be.
#[derive(Debug)]
pub enum Cgroups {
    Available(CgroupRoot),
    Unavailable(String),
}

#[derive(Debug)]
pub struct CgroupRoot {
    dir: PathBuf,
    /// The cgroup2 mount `dir` is under: the kernel's log names cgroups
    /// by their path from it.
    mount: PathBuf,
    /// Controllers enabled for the steps' cgroups.
    enabled: Vec<String>,
}

impl Cgroups {
    /// Finds the cgroup2 mount and makes the agent's subtree there.
    /// `LABRUN_CGROUP_ROOT` names another mount (tests).
    pub fn open() -> Cgroups {
        Cgroups::open_at(std::env::var_os("LABRUN_CGROUP_ROOT").map(PathBuf::from))
    }

    /// [`Cgroups::open`] under `mount`, or the first cgroup2 mount if none.
    pub fn open_at(mount: Option<PathBuf>) -> Cgroups {
        let Some(mount) = mount.or_else(cgroup2_mount) else {
            return Cgroups::Unavailable(
                "no cgroup v2 file system is mounted (a cgroup v1 host): tree figures need \
                 cgroup v2; the step's figures are its own process's and those it waited for"
                    .into(),
            );
        };
        match CgroupRoot::make(&mount) {
            Ok(root) => Cgroups::Available(root),
            Err(e) => Cgroups::Unavailable(format!(
                "cannot make a cgroup under {} ({e}): tree figures need a writable cgroup v2 \
                 (run the agent as root); the step's figures are its own process's",
                mount.display()
            )),
        }
    }

    /// A fresh cgroup for one step, or the reason there is none.
    pub fn for_step(&self, name: &str) -> Result<StepCgroup, String> {
        match self {
            Cgroups::Unavailable(why) => Err(why.clone()),
            Cgroups::Available(root) => root.step(name).map_err(|e| {
                format!(
                    "cannot make the step's cgroup in {} ({e}): no tree figures for it",
                    root.dir.display()
                )
            }),
        }
    }
}

impl CgroupRoot {
    fn make(mount: &Path) -> io::Result<CgroupRoot> {
        let shared = mount.join(SUBTREE);
        create_if_missing(&shared)?;
        end_dead_agents(&shared);
        let dir = shared.join(agent_folder(std::process::id()));
        create_if_missing(&dir)?;
        // Each controller on its own: one the kernel lacks must not stop
        // the others. Down the chain from the mount's root (systemd may not
        // have enabled them there); none of these holds a process (cgroup
        // v2's no-internal-process rule).
        for c in CONTROLLERS {
            for level in [mount, &shared, &dir] {
                let _ = fs::write(level.join("cgroup.subtree_control"), format!("+{c}"));
            }
        }
        let enabled = fs::read_to_string(dir.join("cgroup.subtree_control"))?
            .split_whitespace()
            .map(str::to_string)
            .collect();
        // `LABRUN_CGROUP_ROOT` may name a cgroup inside the mount.
        let mount = cgroup2_mount()
            .filter(|m| dir.starts_with(m))
            .unwrap_or_else(|| mount.to_path_buf());
        Ok(CgroupRoot {
            dir,
            mount,
            enabled,
        })
    }

    fn step(&self, name: &str) -> io::Result<StepCgroup> {
        let dir = self.dir.join(name);
        if dir.exists() {
            // A step of an agent that was killed: end what it left.
            let _ = kill_all(&dir);
            fs::remove_dir(&dir)?;
        }
        fs::create_dir(&dir)?;
        let procs = OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_CLOEXEC)
            .open(dir.join("cgroup.procs"))?;
        let kernel_path = dir
            .strip_prefix(&self.mount)
            .map(|rel| format!("/{}", rel.display()))
            .unwrap_or_default();
        Ok(StepCgroup {
            dir,
            kernel_path,
            procs,
            enabled: self.enabled.clone(),
        })
    }
}

impl Drop for CgroupRoot {
    /// The agent's subtree goes with the agent (its steps' are gone by now).
    fn drop(&mut self) {
        let _ = fs::remove_dir(&self.dir);
    }
}

fn create_if_missing(dir: &Path) -> io::Result<()> {
    match fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// Subtrees of agents that no longer run (SIGKILLed: no Drop ran): what
/// their steps left running is killed, and the cgroups are removed.
/// `agent-<pid>-<start ticks>`: an agent's folder names the process as the
/// lock marker does (`crate::run::process`), so a recycled pid never makes
/// a dead agent's folder look alive.
fn agent_folder(pid: u32) -> String {
    let ticks = crate::run::process::process_id(pid).map_or(0, |p| p.start_ticks);
    format!("agent-{pid}-{ticks}")
}

/// Whether the agent that made folder `name` (`agent-<pid>-<ticks>`) runs.
fn agent_alive(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("agent-") else {
        return true; // not an agent's folder: leave it
    };
    match rest.split_once('-') {
        Some((pid, ticks)) => match (pid.parse::<u32>(), ticks.parse::<u64>()) {
            (Ok(pid), Ok(ticks)) => {
                crate::run::process::process_id(pid).is_some_and(|p| p.start_ticks == ticks)
            }
            _ => true,
        },
        // An older agent's `agent-<pid>`: its pid is all there is to go by.
        None => rest
            .parse::<u32>()
            .map_or(true, |pid| Path::new(&format!("/proc/{pid}")).exists()),
    }
}

/// Kills and removes the steps' cgroups of agents that are gone.
fn end_dead_agents(shared: &Path) {
    let Ok(entries) = fs::read_dir(shared) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name == agent_folder(std::process::id()) || agent_alive(name) {
            continue;
        }
        let agent = entry.path();
        if let Ok(steps) = fs::read_dir(&agent) {
            for step in steps.flatten().filter(|s| s.path().is_dir()) {
                let _ = kill_all(&step.path());
                let _ = fs::remove_dir(step.path());
            }
        }
        let _ = fs::remove_dir(&agent);
    }
}

/// One step's cgroup, from before the spawn to after its last process.
pub struct StepCgroup {
    dir: PathBuf,
    /// `dir` as the kernel's log names it (`task_memcg=`).
    kernel_path: String,
    /// `cgroup.procs`, open before the fork: the child moves itself in
    /// with one write(2), which is safe between fork and exec.
    procs: File,
    enabled: Vec<String>,
}

impl StepCgroup {
    /// The fd the child writes "0" to (itself) before exec.
    pub fn procs_fd(&self) -> RawFd {
        self.procs.as_raw_fd()
    }

    /// The cgroup's path from the cgroup2 root, as the kernel's OOM log
    /// names a victim's cgroup.
    pub fn kernel_path(&self) -> &str {
        &self.kernel_path
    }

    /// How many of the tree's processes the OOM killer killed (None
    /// without the memory controller).
    pub fn oom_kills(&self) -> Option<u64> {
        super::oom::oom_kills_in(&self.dir)
    }

    /// Samples the tree until `stop` is dropped (how often:
    /// [`super::sampler`]), writing a timeline row once a second to
    /// `timeline`.
    pub fn start_sampler(
        &self,
        timeline: Option<PathBuf>,
    ) -> (mpsc::Sender<()>, std::thread::JoinHandle<SamplerResult>) {
        let (stop, stopped) = mpsc::channel::<()>();
        let dir = self.dir.clone();
        let thread = std::thread::spawn(move || sample_until(&dir, timeline, &stopped));
        (stop, thread)
    }

    /// After the command ended (and its process group was killed): names
    /// and kills whatever is still in the cgroup, reads the final figures,
    /// removes the cgroup.
    pub fn finish(&self, sampled: SamplerResult, agent_cpu_secs: f64) -> TreeMeters {
        let settle_until = Instant::now() + SETTLE;
        while !pids(&self.dir).is_empty() && Instant::now() < settle_until {
            std::thread::sleep(Duration::from_millis(10));
        }
        let leftovers = process_names(&self.dir);
        if !leftovers.is_empty() {
            let _ = kill_all(&self.dir);
        }
        let last = CgroupFiles::open(&self.dir).all();
        let has = |c: &str| self.enabled.iter().any(|e| e == c);
        let mut missing = Vec::new();
        for c in CONTROLLERS {
            if !has(c) {
                missing.push(c);
            }
        }
        let peak_of = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        TreeMeters {
            source: format!(
                "cgroup2 {}{}",
                self.dir.display(),
                if missing.is_empty() {
                    String::new()
                } else {
                    format!(
                        " (controllers not available here: {}; their figures are absent)",
                        missing.join(", ")
                    )
                }
            ),
            unavailable: None,
            user_secs: last.user_usec.map(usec),
            sys_secs: last.system_usec.map(usec),
            resident_peak_bytes: peak_of(sampled.resident_peak, last.resident),
            charged_peak_bytes: read_u64(&self.dir.join("memory.peak")).or(sampled.charged_peak),
            disk_read_bytes: last.read,
            disk_write_bytes: last.written,
            processes_peak: read_u64(&self.dir.join("pids.peak"))
                .or(peak_of(sampled.processes_peak, None)),
            leftovers,
            agent_cpu_secs,
            sampler_cpu_secs: Some(sampled.cpu_secs),
            samples: sampled.samples,
            timeline_path: None,
        }
    }
}

impl Drop for StepCgroup {
    /// An empty cgroup is removed; one that could not be emptied stays for
    /// the next agent start to end ([`CgroupRoot::step`]).
    fn drop(&mut self) {
        if !pids(&self.dir).is_empty() {
            let _ = kill_all(&self.dir);
        }
        let _ = fs::remove_dir(&self.dir);
    }
}

fn read_u64(path: &Path) -> Option<u64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn pids(dir: &Path) -> Vec<u32> {
    fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// `comm` of each process left in the cgroup, with its pid.
fn process_names(dir: &Path) -> Vec<String> {
    pids(dir)
        .into_iter()
        .map(|pid| {
            let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            format!("{} (pid {pid})", comm.trim())
        })
        .collect()
}

/// `cgroup.kill` (kernel 5.14+), else SIGKILL to each; then waits, a
/// bounded time, until the cgroup is empty.
fn kill_all(dir: &Path) -> io::Result<()> {
    if fs::write(dir.join("cgroup.kill"), "1").is_err() {
        for pid in pids(dir) {
            // SAFETY: kill(2) has no memory-safety preconditions.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
        }
    }
    let deadline = Instant::now() + KILL_WAIT;
    while !pids(dir).is_empty() {
        if Instant::now() > deadline {
            return Err(io::Error::other(format!(
                "processes still in {} {} s after they were killed",
                dir.display(),
                KILL_WAIT.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// The first cgroup2 mount of `/proc/self/mountinfo` (`/sys/fs/cgroup` on
/// a unified host, `/sys/fs/cgroup/unified` on a hybrid one).
fn cgroup2_mount() -> Option<PathBuf> {
    cgroup2_mount_in(&fs::read_to_string("/proc/self/mountinfo").ok()?)
}

fn cgroup2_mount_in(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        (right.split_whitespace().next()? == "cgroup2")
            .then(|| left.split_whitespace().nth(4).map(PathBuf::from))?
    })
}

/// The agent's own CPU so far (all its threads; not its children).
pub fn own_cpu_secs() -> f64 {
    // SAFETY: zeroed rusage is a valid out-parameter.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: usage is valid and writable.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recycled_pid_does_not_keep_a_dead_agents_folder() {
        let me = std::process::id();
        assert!(agent_alive(&agent_folder(me)));
        // The same pid with another start: the agent that made it is gone.
        assert!(!agent_alive(&format!("agent-{me}-1")));
        assert!(!agent_alive("agent-4000000000-7"));
        // An older agent's folder goes by its pid; anything else is left.
        assert!(agent_alive(&format!("agent-{me}")));
        assert!(!agent_alive("agent-4000000000"));
        assert!(agent_alive("something-else"));
    }

    #[test]
    fn the_mountinfo_line_of_cgroup2_names_its_mount_point() {
        let text = "25 30 0:23 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n\
                    41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        assert_eq!(
            cgroup2_mount_in(text),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        assert_eq!(
            cgroup2_mount_in("25 30 0:23 / /x rw - cgroup cgroup rw\n"),
            None
        );
    }
}
