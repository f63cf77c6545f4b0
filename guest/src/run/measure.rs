//! Runs one command and measures it the way `/usr/bin/time -v` does: the
//! child is waited for with `wait4`, whose `rusage` covers the child and the
//! descendants it waited for (user and system CPU, the largest peak RSS of
//! any of them, in KiB). Wall time is taken around spawn and exit.
//!
//! The agent blocks in the kernel while the tool runs: no polling loop, no
//! CPU of its own in the figures. The tool gets its own process group, so a
//! timeout (a sleeping watchdog thread) or a signal to the agent can kill the
//! whole tree.
//!
//! A timed step also runs in a cgroup of its own ([`crate::run::cgroup`]):
//! its whole tree is measured there (CPU, resident and charged memory, disk
//! bytes, processes), sampled by a thread that sleeps between reads, and
//! whatever the tool left running is killed and named when it ends.

use crate::run::cgroup::{self, StepCgroup};
use crate::run::interrupt::Interrupt;
use labrun_evidence::{ExitStatus, OomKill, TreeMeters};
use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// One command to run: argv, working directory, the whole environment (the
/// agent's own is not inherited), and where its output goes.
pub struct CommandSpec<'a> {
    pub argv: &'a [String],
    pub cwd: &'a Path,
    pub env: &'a BTreeMap<String, String>,
    pub stdout: &'a Path,
    pub stderr: &'a Path,
    pub timeout: Option<Duration>,
    /// Measure the whole tree too (timed steps).
    pub tree: Option<TreeSpec>,
}

/// The cgroup a step runs in (or why it has none) and where its timeline
/// goes.
pub struct TreeSpec {
    pub cgroup: Result<StepCgroup, String>,
    /// None for an untimed helper command: it gets a cgroup only so that
    /// nothing it starts outlives it.
    pub timeline: Option<PathBuf>,
    /// `timeline` relative to the evidence directory, for the record.
    pub timeline_rel: Option<String>,
}

/// What runs one measured command: [`Processes`] spawns it; a test hands
/// the runner a stand-in, so the protocol's interpreter can be checked
/// without real tools (hyperfine's `Executor` seam).
pub trait Executor: Send + Sync {
    fn run(&self, spec: &CommandSpec, interrupt: &Interrupt) -> Result<Measurement, MeasureError>;

    /// `fstrim -v MOUNT`, settling the disk before a timed step
    /// ([`crate::run::settle`]). A stand-in runs nothing and says so.
    fn fstrim(&self, _mount: &Path) -> io::Result<std::process::Output> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this executor runs no fstrim (a test's stand-in)",
        ))
    }
}

/// The real executor: [`run_measured`].
pub struct Processes;

impl Executor for Processes {
    fn run(&self, spec: &CommandSpec, interrupt: &Interrupt) -> Result<Measurement, MeasureError> {
        run_measured(spec, interrupt)
    }

    fn fstrim(&self, mount: &Path) -> io::Result<std::process::Output> {
        Command::new("fstrim")
            .arg("-v")
            .arg(mount)
            .stdin(Stdio::null())
            .output()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    pub wall_secs: f64,
    pub user_secs: f64,
    pub sys_secs: f64,
    /// As `/usr/bin/time -v` "Maximum resident set size (kbytes)".
    pub max_rss_kib: u64,
    pub exit: ExitStatus,
    /// The watchdog killed the tool.
    pub timed_out: bool,
    /// A stop signal reached the agent while the tool ran (and killed it).
    pub interrupted_by: Option<i32>,
    /// The whole tree's figures, when [`CommandSpec::tree`] asked for them.
    pub tree: Option<TreeMeters>,
    /// The kernel's OOM killer killed a process of the tree ([`crate::run::oom`];
    /// looked for when [`CommandSpec::tree`] is asked for).
    pub oom: Option<OomKill>,
}

impl Measurement {
    pub fn succeeded(&self) -> bool {
        self.exit.success() && !self.timed_out && self.interrupted_by.is_none()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    #[error(
        "cannot create log file {path}: {}",
        crate::run::error::describe_io(source)
    )]
    Log { path: PathBuf, source: io::Error },
    #[error("cannot start {program:?} (in {cwd}): {source}")]
    Spawn {
        program: String,
        cwd: PathBuf,
        source: io::Error,
    },
    #[error("command has an empty argv")]
    EmptyArgv,
    #[error("waiting for the tool failed: {0}")]
    Wait(io::Error),
}

/// Runs `spec` to its end (or timeout, or stop signal) and measures it.
pub fn run_measured(
    spec: &CommandSpec,
    interrupt: &Interrupt,
) -> Result<Measurement, MeasureError> {
    let (program, args) = spec.argv.split_first().ok_or(MeasureError::EmptyArgv)?;
    let stdout = create_log(spec.stdout)?;
    let stderr = create_log(spec.stderr)?;

    let mut cmd = Command::new(program);
    cmd.args(args)
        .env_clear()
        .envs(spec.env)
        .current_dir(spec.cwd)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        // Its own group: killing -pgid reaches every process of the tool,
        // and a Ctrl-C on the agent's terminal does not reach the tool.
        .process_group(0);
    let cgroup = spec.tree.as_ref().and_then(|t| t.cgroup.as_ref().ok());
    if let Some(cg) = cgroup {
        let fd = cg.procs_fd();
        // SAFETY: between fork and exec only write(2) runs, which is
        // async-signal-safe; the fd was opened (O_CLOEXEC) before the fork.
        unsafe {
            cmd.pre_exec(move || {
                // "0": the writing process itself moves into the cgroup, so
                // the tool's first instruction is already accounted there.
                if libc::write(fd, b"0".as_ptr().cast(), 1) == 1 {
                    Ok(())
                } else {
                    Err(io::Error::last_os_error())
                }
            });
        }
    }
    let cpu_before = cgroup::own_cpu_secs();
    // Until exec, the child is a copy of the agent, and the kernel folds that
    // copy's resident pages into the child's ru_maxrss (as GNU time's own
    // few hundred KiB are folded into its figures). So the agent keeps its
    // memory small while tools run: manifests live in files, not in memory,
    // and freed heap goes back to the kernel right before the spawn.
    trim_heap();
    // From here on the kernel's log is the step's: an OOM kill it names
    // happened while the tool ran.
    let mut kmsg = spec
        .tree
        .as_ref()
        .and_then(|_| crate::run::oom::KmsgWatch::start().ok());

    let started = Instant::now();
    let child = cmd.spawn().map_err(|source| MeasureError::Spawn {
        program: program.clone(),
        cwd: spec.cwd.to_path_buf(),
        source,
    })?;
    // A child pid always fits in pid_t.
    let pid = child.id() as libc::pid_t;
    // std's Child is not used past this point: it neither waits nor kills on
    // drop, and the reaping below is ours.
    drop(child);
    interrupt.set_group(pid);
    let sampler =
        cgroup.map(|cg| cg.start_sampler(spec.tree.as_ref().and_then(|t| t.timeline.clone())));

    let watchdog = spec.timeout.map(|limit| Watchdog::start(pid, limit));
    let exited = wait_exited_keep_zombie(pid);
    let wall = started.elapsed();
    let watchdog_fired = watchdog.is_some_and(Watchdog::stop);

    interrupt.clear_group();
    // The leader is a zombie until reaped, so its pid (= the group id) cannot
    // be reused yet: killing the group now only reaches what the tool left
    // running, which must not run into the next timed step.
    crate::run::process::signal_group(pid, libc::SIGKILL);
    let (status, usage) = reap(pid).map_err(MeasureError::Wait)?;
    exited.map_err(MeasureError::Wait)?;
    let sampled = sampler.map(|(stop, thread)| {
        drop(stop);
        thread.join().unwrap_or_default()
    });
    let tree = spec.tree.as_ref().map(|t| match &t.cgroup {
        Ok(cg) => {
            let agent_cpu = cgroup::own_cpu_secs() - cpu_before;
            let mut meters = cg.finish(sampled.unwrap_or_default(), agent_cpu);
            meters.timeline_path = t.timeline_rel.clone();
            meters
        }
        Err(why) => TreeMeters::unavailable("none", why.clone()),
    });
    let exit = exit_status(status);
    // A limit or a signal that came as the tool was ending anyway did not
    // change its result: only a tool that died of our SIGKILL was stopped.
    let killed = exit.signal == Some(libc::SIGKILL);
    let oom = spec.tree.as_ref().and_then(|_| {
        crate::run::oom::detect(
            pid as u32,
            cgroup.map(StepCgroup::kernel_path),
            cgroup.and_then(StepCgroup::oom_kills),
            &kmsg.as_mut().map(|k| k.oom_lines()).unwrap_or_default(),
            killed,
        )
    });

    Ok(Measurement {
        wall_secs: wall.as_secs_f64(),
        user_secs: timeval_secs(usage.ru_utime),
        sys_secs: timeval_secs(usage.ru_stime),
        // Linux reports ru_maxrss in KiB, as GNU time prints it.
        max_rss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
        exit,
        timed_out: watchdog_fired && killed,
        interrupted_by: interrupt.stopped_by().filter(|_| killed),
        tree,
        oom,
    })
}

fn create_log(path: &Path) -> Result<File, MeasureError> {
    File::create(path).map_err(|source| MeasureError::Log {
        path: path.to_path_buf(),
        source,
    })
}

/// Gives freed heap back to the kernel before a fork, so the child's copy of
/// the agent (counted in its peak RSS until exec) is as small as it can be.
fn trim_heap() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only walks glibc's own arenas.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Blocks until `pid` has exited, without reaping it.
fn wait_exited_keep_zombie(pid: libc::pid_t) -> io::Result<()> {
    loop {
        // SAFETY: zeroed siginfo_t is a valid out-parameter for waitid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: info is a valid, writable siginfo_t.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Reaps `pid`, returning its wait status and the rusage of it and its
/// waited-for descendants.
fn reap(pid: libc::pid_t) -> io::Result<(libc::c_int, libc::rusage)> {
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: zeroed rusage is a valid out-parameter.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: status and usage are valid, writable.
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if rc == pid {
            return Ok((status, usage));
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

fn exit_status(status: libc::c_int) -> ExitStatus {
    if libc::WIFEXITED(status) {
        ExitStatus {
            code: Some(libc::WEXITSTATUS(status)),
            signal: None,
        }
    } else if libc::WIFSIGNALED(status) {
        ExitStatus {
            code: None,
            signal: Some(libc::WTERMSIG(status)),
        }
    } else {
        ExitStatus {
            code: None,
            signal: None,
        }
    }
}

fn timeval_secs(tv: libc::timeval) -> f64 {
    tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6
}

/// Kills the tool's group when the time limit passes. It sleeps on a
/// channel: the measuring side dropping its end wakes it to leave early.
struct Watchdog {
    cancel: mpsc::Sender<()>,
    thread: std::thread::JoinHandle<bool>,
}

impl Watchdog {
    fn start(group: libc::pid_t, limit: Duration) -> Watchdog {
        let (cancel, cancelled) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            match cancelled.recv_timeout(limit) {
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    // The group's leader is not reaped before this thread is
                    // joined, so its id still names this group.
                    crate::run::process::signal_group(group, libc::SIGKILL);
                    true
                }
                _ => false,
            }
        });
        Watchdog { cancel, thread }
    }

    /// Stops the watchdog; true when it had fired.
    fn stop(self) -> bool {
        drop(self.cancel);
        self.thread.join().unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::cgroup::Cgroups;
    use std::sync::Arc;

    struct Run {
        dir: tempfile::TempDir,
        env: BTreeMap<String, String>,
    }

    impl Run {
        fn new() -> Run {
            let mut env = BTreeMap::new();
            env.insert("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into());
            Run {
                dir: tempfile::tempdir().unwrap(),
                env,
            }
        }

        fn sh(
            &self,
            script: &str,
            timeout: Option<Duration>,
            interrupt: &Interrupt,
        ) -> Measurement {
            self.sh_with(script, timeout, None, interrupt)
        }

        /// `script` in a cgroup of its own under `cgroups`.
        fn sh_tree(&self, script: &str, cgroups: &Cgroups, name: &str) -> Measurement {
            let tree = TreeSpec {
                cgroup: cgroups.for_step(name),
                timeline: Some(self.dir.path().join("timeline.jsonl")),
                timeline_rel: Some("timeline.jsonl".into()),
            };
            self.sh_with(script, None, Some(tree), &Interrupt::new())
        }

        fn sh_with(
            &self,
            script: &str,
            timeout: Option<Duration>,
            tree: Option<TreeSpec>,
            interrupt: &Interrupt,
        ) -> Measurement {
            let argv = vec!["sh".to_string(), "-c".to_string(), script.to_string()];
            let out = self.dir.path().join("out");
            let err = self.dir.path().join("err");
            let spec = CommandSpec {
                argv: &argv,
                cwd: self.dir.path(),
                env: &self.env,
                stdout: &out,
                stderr: &err,
                timeout,
                tree,
            };
            run_measured(&spec, interrupt).unwrap()
        }

        fn path(&self, name: &str) -> PathBuf {
            self.dir.path().join(name)
        }
    }

    fn process_gone(pid: &str) -> bool {
        // Gone, or a zombie waiting for whoever adopted it: not running.
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit(')')
                .next()
                .unwrap()
                .trim_start()
                .starts_with('Z'),
        }
    }

    /// A loop of shell arithmetic: user CPU, no sleeping.
    const BUSY: &str = "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done";

    #[test]
    fn sleeping_costs_wall_time_not_cpu() {
        let r = Run::new();
        let m = r.sh("sleep 0.3", None, &Interrupt::new());
        assert!(m.succeeded(), "{m:?}");
        assert!(m.wall_secs >= 0.3 && m.wall_secs < 5.0, "{m:?}");
        assert!(m.user_secs + m.sys_secs < 0.2, "{m:?}");
        assert!(m.max_rss_kib > 0, "{m:?}");
    }

    #[test]
    fn cpu_of_the_whole_tree_is_counted() {
        let r = Run::new();
        // The busy loop runs in a grandchild: wait4 must include it.
        let m = r.sh(
            &format!("sh -c '{BUSY}'; dd if=/dev/zero of=/dev/null bs=1M count=2000 2>/dev/null"),
            None,
            &Interrupt::new(),
        );
        assert!(m.succeeded(), "{m:?}");
        assert!(m.user_secs > 0.05, "{m:?}");
        assert!(m.sys_secs > 0.02, "{m:?}");
        assert!(
            m.user_secs + m.sys_secs <= m.wall_secs * 1.05 + 0.05,
            "{m:?}"
        );
    }

    #[test]
    fn exit_code_and_death_by_signal() {
        let r = Run::new();
        let m = r.sh("echo out; echo err >&2; exit 3", None, &Interrupt::new());
        assert_eq!(
            m.exit,
            ExitStatus {
                code: Some(3),
                signal: None
            }
        );
        assert!(!m.succeeded());
        assert_eq!(std::fs::read_to_string(r.path("out")).unwrap(), "out\n");
        assert_eq!(std::fs::read_to_string(r.path("err")).unwrap(), "err\n");

        let m = r.sh("kill -USR1 $$", None, &Interrupt::new());
        assert_eq!(
            m.exit,
            ExitStatus {
                code: None,
                signal: Some(libc::SIGUSR1)
            }
        );
        assert!(!m.timed_out && m.interrupted_by.is_none());
    }

    #[test]
    fn peak_memory_matches_gnu_time() {
        let r = Run::new();
        // dash keeps the 60 MB string of the command substitution in memory.
        let script = "x=$(head -c 60000000 /dev/zero | tr '\\0' a); echo ${#x}";
        let m = r.sh(script, None, &Interrupt::new());
        assert!(m.succeeded(), "{m:?}");
        assert!(m.max_rss_kib > 58_000, "{m:?}");

        let time = std::process::Command::new("/usr/bin/time")
            .args(["-f", "%M", "sh", "-c", script])
            .env_clear()
            .envs(&r.env)
            .output()
            .expect("/usr/bin/time (Debian package `time`, installed by scripts/host-setup.sh)");
        let stderr = String::from_utf8_lossy(&time.stderr);
        let gnu: f64 = stderr.lines().last().unwrap().trim().parse().unwrap();
        let ratio = m.max_rss_kib as f64 / gnu;
        assert!(
            (0.95..=1.05).contains(&ratio),
            "agent {} KiB, GNU time {gnu} KiB",
            m.max_rss_kib
        );
    }

    #[test]
    fn the_agents_own_peak_is_not_charged_to_the_tool() {
        // Raise this process's peak RSS well above anything `true` needs,
        // then give it back: only what the agent holds at spawn time may
        // show in the tool's figure, not what it once held.
        let big = vec![1u8; 256 << 20];
        assert_eq!(
            big.iter().step_by(4096).map(|&b| b as u64).sum::<u64>(),
            (256 << 20) / 4096
        );
        drop(big);
        let m = Run::new().sh("true", None, &Interrupt::new());
        assert!(m.max_rss_kib < 64 * 1024, "{m:?}");
    }

    #[test]
    fn a_timeout_kills_the_whole_group() {
        let r = Run::new();
        let script = format!("sleep 30 & echo $! > {}; sleep 30", r.path("pid").display());
        let started = Instant::now();
        let m = r.sh(&script, Some(Duration::from_millis(300)), &Interrupt::new());
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(m.timed_out, "{m:?}");
        assert_eq!(m.exit.signal, Some(libc::SIGKILL));
        assert!(!m.succeeded());
        let pid = std::fs::read_to_string(r.path("pid")).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(process_gone(pid.trim()), "background sleep {pid} survived");
    }

    #[test]
    fn a_finished_tool_is_not_timed_out_and_leaves_nothing_running() {
        let r = Run::new();
        let script = format!("sleep 30 & echo $! > {}", r.path("pid").display());
        let m = r.sh(&script, Some(Duration::from_secs(20)), &Interrupt::new());
        assert!(m.succeeded() && !m.timed_out, "{m:?}");
        let pid = std::fs::read_to_string(r.path("pid")).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            process_gone(pid.trim()),
            "leftover sleep {pid} still running"
        );
    }

    #[test]
    fn a_stop_request_kills_the_running_tool() {
        let r = Run::new();
        let interrupt = Interrupt::new();
        let stopper = Arc::clone(&interrupt);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            stopper.request_stop(libc::SIGTERM);
        });
        let started = Instant::now();
        let m = r.sh("sleep 30", None, &interrupt);
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(m.interrupted_by, Some(libc::SIGTERM));
        assert!(!m.succeeded());
        // A tool started after the stop is killed at once.
        let m = r.sh("sleep 30", None, &interrupt);
        assert_eq!(m.exit.signal, Some(libc::SIGKILL));
    }

    /// This machine's cgroup v2, which the tree tests need: without it they
    /// fail (they cannot show anything), they do not pass.
    fn cgroups() -> Cgroups {
        match Cgroups::open_at(None) {
            c @ Cgroups::Available(_) => c,
            Cgroups::Unavailable(why) => panic!("tree meters cannot be tested here: {why}"),
        }
    }

    /// What GNU time and wait4 miss: a process that leaves its process
    /// group and session (as duplicity's gpg-agent does) and burns CPU
    /// after the tool exits. The cgroup counts its CPU, names it, and
    /// kills it; nothing outlives the step.
    #[test]
    fn a_daemon_that_left_the_group_is_counted_named_and_killed() {
        let r = Run::new();
        let pidfile = r.path("daemon.pid");
        let done = r.path("daemon.done");
        // The daemon does a fixed amount of CPU work, says so, and sleeps on;
        // the tool waits for that and exits.
        let script = format!(
            "setsid sh -c 'echo $$ > {p}; i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; \
             touch {d}; exec sleep 1000' & \
             while [ ! -e {d} ]; do sleep 0.05; done",
            p = pidfile.display(),
            d = done.display()
        );
        let m = r.sh_tree(
            &script,
            &cgroups(),
            &format!("test-daemon-{}", std::process::id()),
        );
        let tree = m.tree.clone().expect("tree meters asked for");
        assert_eq!(tree.unavailable, None, "{tree:?}");
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(tree.leftovers.len(), 1, "{tree:?}");
        assert!(
            tree.leftovers[0].contains(&format!("pid {pid}")),
            "{tree:?}"
        );
        // Gone: kill(pid, 0) fails with ESRCH (it was reaped by init).
        std::thread::sleep(Duration::from_millis(200));
        // SAFETY: kill with signal 0 only checks for existence.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .unwrap_or_default()
                .contains(") Z ");
        assert!(!alive, "the daemon {pid} outlived its step");
        // The daemon's loop is the tree's CPU, not the waited-for tool's
        // (its rusage never sees a process it did not wait for).
        let tree_cpu = tree.user_secs.unwrap() + tree.sys_secs.unwrap();
        let waited_for = m.user_secs + m.sys_secs;
        assert!(
            tree_cpu > 0.1 && tree_cpu > 3.0 * waited_for,
            "{tree:?} {m:?}"
        );
        // The timeline: a first row at the start, then one a second.
        let rows = std::fs::read_to_string(r.path("timeline.jsonl")).unwrap();
        let rows: Vec<labrun_evidence::TimelineRow> = rows
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows.len() as u64, tree.samples.div_ceil(4), "{rows:?}");
        assert!(rows.iter().all(|r| r.cpu_secs.is_some()), "{rows:?}");
        // (The sampler's cost is checked on a real agent, in
        // tests/run_real_tools.rs: here the "agent" is the whole test binary,
        // other tests' threads included.) The cgroup is gone with the step.
        assert!(tree.source.starts_with("cgroup2 "), "{tree:?}");
        let dir = tree.source["cgroup2 ".len()..].split(" (").next().unwrap();
        assert!(!Path::new(dir).exists(), "{dir} left behind");
    }

    #[test]
    fn without_a_cgroup_the_record_says_why() {
        let r = Run::new();
        let none = Cgroups::open_at(Some(PathBuf::from("/nonexistent/cgroup")));
        let m = r.sh_tree("true", &none, "x");
        let tree = m.tree.clone().expect("tree meters asked for");
        assert!(
            tree.unavailable
                .as_deref()
                .unwrap_or("")
                .contains("/nonexistent/cgroup"),
            "{tree:?}"
        );
        assert!(m.exit.success());
    }

    #[test]
    fn a_missing_program_is_a_spawn_error() {
        let r = Run::new();
        let argv = vec!["/nonexistent/tool".to_string()];
        let out = r.path("out");
        let spec = CommandSpec {
            argv: &argv,
            cwd: r.dir.path(),
            env: &r.env,
            stdout: &out,
            stderr: &out,
            timeout: None,
            tree: None,
        };
        let err = run_measured(&spec, &Interrupt::new()).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/tool"), "{err}");
    }
}
