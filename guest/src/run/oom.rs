//! Whether the kernel's OOM killer killed a process of a step, and which.
//!
//! Three pieces of evidence, each optional: the step cgroup's
//! `memory.events` counts the kills in its tree (`oom_kill`, global and
//! cgroup OOMs alike: the kernel charges the kill to the victim's cgroup);
//! the kernel's log (`/dev/kmsg`) names the victim, its pid and its cgroup;
//! and the tool's own exit by SIGKILL. Without a cgroup (a v1 host), the
//! log naming the tool's own pid is what is left.

use labrun_evidence::OomKill;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// `oom_kill` of a `memory.events` file.
pub fn oom_kills(memory_events: &str) -> Option<u64> {
    crate::run::sampler::keyed(memory_events.as_bytes(), b"oom_kill")
}

/// `oom_kill` of the cgroup at `dir`; None without the memory controller.
pub fn oom_kills_in(dir: &Path) -> Option<u64> {
    oom_kills(&std::fs::read_to_string(dir.join("memory.events")).ok()?)
}

/// One kill as the kernel's log tells it: the `oom-kill:` summary line
/// and/or the `Killed process` line, joined by pid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelKill {
    pub pid: u32,
    pub name: Option<String>,
    /// `task_memcg=`: the victim's cgroup, from the cgroup2 root.
    pub task_memcg: Option<String>,
    pub lines: Vec<String>,
}

/// The kills in the kernel's log `lines` (message texts, prefix removed).
pub fn kernel_kills(lines: &[String]) -> Vec<KernelKill> {
    let mut kills: Vec<KernelKill> = Vec::new();
    for line in lines {
        let parsed = parse_summary(line).or_else(|| parse_killed(line));
        let Some((pid, name, memcg)) = parsed else {
            continue;
        };
        match kills.iter_mut().find(|k| k.pid == pid) {
            Some(k) => {
                k.name = k.name.take().or(name);
                k.task_memcg = k.task_memcg.take().or(memcg);
                k.lines.push(line.clone());
            }
            None => kills.push(KernelKill {
                pid,
                name,
                task_memcg: memcg,
                lines: vec![line.clone()],
            }),
        }
    }
    kills
}

/// `oom-kill:constraint=...,task_memcg=/x,task=restic,pid=1234,uid=0`.
fn parse_summary(line: &str) -> Option<(u32, Option<String>, Option<String>)> {
    let fields = line.strip_prefix("oom-kill:")?;
    let value = |key: &str| {
        fields
            .split(',')
            .find_map(|f| f.strip_prefix(key)?.strip_prefix('='))
            .map(str::to_string)
    };
    let pid = value("pid")?.parse().ok()?;
    Some((pid, value("task"), value("task_memcg")))
}

/// `Out of memory: Killed process 1234 (restic) total-vm:...` (or the
/// `Memory cgroup out of memory:` form).
fn parse_killed(line: &str) -> Option<(u32, Option<String>, Option<String>)> {
    let rest = &line[line.find("Killed process ")? + "Killed process ".len()..];
    let (pid, rest) = rest.split_once(' ')?;
    let pid = pid.parse().ok()?;
    let name = rest.strip_prefix('(').map(|r| {
        // A process name may hold a `)`: the one before the figures ends it.
        let end = r.find(") total-vm").or_else(|| r.rfind(')'));
        r[..end.unwrap_or(r.len())].to_string()
    });
    Some((pid, name, None))
}

/// The kernel's log from a point on: `/dev/kmsg` opened and moved to its
/// end before a step, read after it.
pub struct KmsgWatch {
    kmsg: File,
}

/// At most this many new log records are looked at after one step: a
/// kernel that logs more than this is not telling us about one OOM kill.
const MAX_RECORDS: usize = 100_000;

impl KmsgWatch {
    /// Reading `/dev/kmsg` needs root (or CAP_SYSLOG where
    /// `dmesg_restrict` is set); without it there is only the cgroup.
    pub fn start() -> Result<KmsgWatch, String> {
        let mut kmsg = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open("/dev/kmsg")
            .map_err(|e| format!("cannot read the kernel's log /dev/kmsg ({e})"))?;
        kmsg.seek(SeekFrom::End(0))
            .map_err(|e| format!("cannot seek in /dev/kmsg ({e})"))?;
        Ok(KmsgWatch { kmsg })
    }

    /// The messages logged since [`KmsgWatch::start`] that are about the
    /// OOM killer (one line each, the record's prefix removed).
    pub fn oom_lines(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        // One record per read(2); a record is at most about 1 KiB.
        let mut buf = vec![0u8; 8192];
        for _ in 0..MAX_RECORDS {
            match self.kmsg.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let text = String::from_utf8_lossy(&buf[..n]);
                    if let Some(message) = message_of(&text)
                        && is_about_oom(message)
                    {
                        out.push(message.to_string());
                    }
                }
                // Records overwritten before we read them: go on.
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // WouldBlock: nothing more was logged. Anything else: stop.
                Err(_) => break,
            }
        }
        out
    }
}

/// A `/dev/kmsg` record is `prio,seq,usec,flags[,...];message\n` followed
/// by ` KEY=value` continuation lines: the message's first line.
pub fn message_of(record: &str) -> Option<&str> {
    let (_, message) = record.split_once(';')?;
    message.lines().next()
}

fn is_about_oom(message: &str) -> bool {
    message.starts_with("oom-kill:") || message.contains("Killed process ")
}

/// The verdict for one step: the tool ran as `pid` in the cgroup the
/// kernel calls `cgroup` (its path from the cgroup2 root), which counted
/// `cgroup_kills`; `lines` are the OOM lines logged while it ran.
pub fn detect(
    pid: u32,
    cgroup: Option<&str>,
    cgroup_kills: Option<u64>,
    lines: &[String],
    tool_sigkilled: bool,
) -> Option<OomKill> {
    let in_step = |k: &KernelKill| {
        k.pid == pid
            || cgroup.is_some_and(|cg| {
                k.task_memcg
                    .as_deref()
                    .is_some_and(|m| m == cg || m.starts_with(&format!("{cg}/")))
            })
    };
    let kills = kernel_kills(lines);
    // The tool itself first: it is what made the step fail.
    let named = kills
        .iter()
        .filter(|k| in_step(k))
        .min_by_key(|k| k.pid != pid);
    if named.is_none() && cgroup_kills.unwrap_or(0) == 0 {
        return None;
    }
    Some(OomKill {
        victim: named.and_then(|k| k.name.clone()),
        pid: named.map(|k| k.pid),
        cgroup_oom_kills: cgroup_kills.filter(|n| *n > 0),
        kernel_log: named.map(|k| k.lines.clone()).unwrap_or_default(),
        tool_sigkilled,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `memory.events` of a step cgroup after one kill (kernel 6.12).
    const EVENTS: &str = "low 0\nhigh 0\nmax 212\noom 1\noom_kill 1\noom_group_kill 0\n";

    /// What a Debian sid guest (6.12) logged for a global OOM, as
    /// `/dev/kmsg` records; the lines between are the usual memory dump.
    const GLOBAL: &[&str] = &[
        "4,1021,93145321,-;python3 invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO), order=0, oom_score_adj=0\n",
        "4,1022,93145400,-;CPU: 1 UID: 0 PID: 2211 Comm: python3 Not tainted 6.12.57+deb13-amd64 #1  Debian 6.12.57-1\n",
        "6,1050,93150112,-;Tasks state (memory values in pages):\n",
        "6,1061,93150300,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/labrun-agent/agent-812-4411/hog-c1-backup_full,task=python3,pid=2211,uid=0\n",
        "3,1062,93150350,-;Out of memory: Killed process 2211 (python3) total-vm:519688kB, anon-rss:441576kB, file-rss:4kB, shmem-rss:0kB, UID:0 pgtables:908kB oom_score_adj:0\n",
    ];

    fn messages(records: &[&str]) -> Vec<String> {
        records
            .iter()
            .filter_map(|r| message_of(r))
            .filter(|m| is_about_oom(m))
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn memory_events_count_the_kills() {
        assert_eq!(oom_kills(EVENTS), Some(1));
        assert_eq!(
            oom_kills("low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n"),
            Some(0)
        );
        assert_eq!(oom_kills("low 0\n"), None);
    }

    #[test]
    fn the_log_names_the_victim_its_pid_and_its_cgroup() {
        let lines = messages(GLOBAL);
        assert_eq!(lines.len(), 2, "{lines:?}");
        let kills = kernel_kills(&lines);
        assert_eq!(
            kills,
            [KernelKill {
                pid: 2211,
                name: Some("python3".into()),
                task_memcg: Some("/labrun-agent/agent-812-4411/hog-c1-backup_full".into()),
                lines: lines.clone(),
            }]
        );
        // A cgroup's own OOM, and a name with a parenthesis in it.
        let memcg = kernel_kills(&[
            "Memory cgroup out of memory: Killed process 77 (a (b) c) total-vm:1kB, anon-rss:1kB"
                .into(),
        ]);
        assert_eq!(
            (memcg[0].pid, memcg[0].name.as_deref()),
            (77, Some("a (b) c"))
        );
    }

    #[test]
    fn a_kill_is_the_steps_by_its_cgroup_or_the_tools_pid() {
        let lines = messages(GLOBAL);
        let step = "/labrun-agent/agent-812-4411/hog-c1-backup_full";
        // Through the cgroup: the tool was `sh`, the victim its child.
        let oom = detect(2200, Some(step), Some(1), &lines, false).unwrap();
        assert_eq!(
            (oom.victim.as_deref(), oom.pid, oom.cgroup_oom_kills),
            (Some("python3"), Some(2211), Some(1))
        );
        assert_eq!(oom.kernel_log.len(), 2);
        assert_eq!(
            oom.describe(),
            "python3, pid 2211; cgroup memory.events oom_kill 1, kernel log"
        );
        // No cgroup (a v1 host): the tool's own pid.
        let oom = detect(2211, None, None, &lines, true).unwrap();
        assert_eq!(oom.pid, Some(2211));
        assert!(
            oom.describe()
                .ends_with("kernel log, the tool died of SIGKILL")
        );
        // Another step's kill (a sibling cgroup, another pid) is not ours...
        assert_eq!(
            detect(
                2200,
                Some("/labrun-agent/agent-812-4411/hog-c1-backup"),
                Some(0),
                &lines,
                true
            ),
            None
        );
        // ...but our cgroup's own count is, even with no log to read.
        let oom = detect(2200, Some(step), Some(1), &[], true).unwrap();
        assert_eq!((oom.victim, oom.cgroup_oom_kills), (None, Some(1)));
        assert_eq!(detect(2200, Some(step), Some(0), &[], true), None);
    }
}
