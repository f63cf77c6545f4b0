//! The guest's serial console, read as it grows while `up` waits for SSH: a
//! kernel that panics or oopses while booting never answers SSH, and
//! without this `up` waited for the whole SSH timeout (300 s by default)
//! before saying so. Seen under TCG: a panic in `enqueue_task_fair` 1.8 s
//! after start.
//!
//! Bounded whatever the guest writes: each poll reads at most
//! [`READ_LIMIT`] new bytes, a line is kept up to [`LINE_LIMIT`] bytes, and
//! only the last [`KEPT_LINES`] lines are kept for the message.

use std::collections::VecDeque;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

/// What on a console line means the kernel has crashed: a panic, or an
/// oops (the kernel goes on, but the boot it was doing does not). A soft
/// lockup (`watchdog: BUG: soft lockup`) is not one: a starved TCG vCPU
/// reports them and then boots.
const FATAL: [&str; 4] = [
    "Kernel panic - not syncing",
    "Oops:",
    "BUG:",
    "general protection fault",
];

/// How many of the console's last lines a crash report carries.
pub const KEPT_LINES: usize = 20;
/// The most read from the console at one poll.
pub const READ_LIMIT: usize = 1 << 20;
/// The longest line kept; the rest of a longer line is dropped.
pub const LINE_LIMIT: usize = 4096;

/// True when `line` reports a kernel crash (see [`FATAL`]).
pub fn is_crash(line: &str) -> bool {
    FATAL.iter().any(|m| line.contains(m)) && !line.contains("soft lockup")
}

/// The first line of `text` that reports a kernel crash: for a console
/// read whole (a remote hypervisor's, through `tail`).
pub fn first_crash(text: &str) -> Option<&str> {
    text.lines().find(|l| is_crash(l))
}

/// A console log followed from where the last poll stopped.
pub struct ConsoleWatch {
    path: PathBuf,
    offset: u64,
    partial: Vec<u8>,
    last: VecDeque<String>,
}

impl ConsoleWatch {
    /// Follows `path` from its start (it may not exist yet).
    pub fn new(path: PathBuf) -> ConsoleWatch {
        ConsoleWatch {
            path,
            offset: 0,
            partial: Vec::new(),
            last: VecDeque::with_capacity(KEPT_LINES),
        }
    }

    /// Reads what was written since the last poll; the first line that
    /// reports a crash, if one came. A file that cannot be read yet (QEMU
    /// has not made it) is read at a later poll.
    pub fn poll(&mut self) -> Option<String> {
        let mut new = Vec::new();
        let Ok(mut file) = std::fs::File::open(&self.path) else {
            return None;
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        if len < self.offset {
            // Truncated (a new domain's console): read it from the start.
            self.offset = 0;
            self.partial.clear();
        }
        if file.seek(SeekFrom::Start(self.offset)).is_err() {
            return None;
        }
        let read = file
            .take(READ_LIMIT as u64)
            .read_to_end(&mut new)
            .unwrap_or(0);
        self.offset += read as u64;
        let mut crash = None;
        for &b in &new {
            if b == b'\n' {
                let line = self.take_line();
                if crash.is_none() && is_crash(&line) {
                    crash = Some(line.clone());
                }
                self.keep(line);
            } else if self.partial.len() < LINE_LIMIT {
                self.partial.push(b);
            }
        }
        // A crash line still being written counts as soon as it is seen.
        crash.or_else(|| {
            let unfinished = String::from_utf8_lossy(&self.partial);
            is_crash(&unfinished).then(|| unfinished.trim_end().to_string())
        })
    }

    /// The last lines read (the unfinished one included), for a message.
    pub fn last_lines(&self) -> String {
        let mut lines: Vec<&str> = self.last.iter().map(String::as_str).collect();
        let unfinished = String::from_utf8_lossy(&self.partial);
        if !unfinished.trim().is_empty() {
            lines.push(&unfinished);
        }
        let start = lines.len().saturating_sub(KEPT_LINES);
        lines[start..].join("\n")
    }

    fn take_line(&mut self) -> String {
        let line = String::from_utf8_lossy(&self.partial)
            .trim_end_matches('\r')
            .to_string();
        self.partial.clear();
        line
    }

    fn keep(&mut self, line: String) {
        if self.last.len() == KEPT_LINES {
            self.last.pop_front();
        }
        self.last.push_back(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// The console of the boot that panicked under TCG (abridged).
    const RECORDED: &str = "\
[    0.000000] Linux version 6.1.0-28-amd64 (debian-kernel@lists.debian.org)\r
[    0.000000] Command line: root=/dev/vda rw console=ttyS0,115200 quiet\r
[    1.802113] BUG: kernel NULL pointer dereference, address: 0000000000000050\r
[    1.802540] #PF: supervisor read access in kernel mode\r
[    1.803011] Oops: 0000 [#1] PREEMPT SMP NOPTI\r
[    1.803470] RIP: 0010:enqueue_task_fair+0x9e/0x6c0\r
[    1.806921] Kernel panic - not syncing: Attempted to kill the idle task!\r
[    1.807200] ---[ end Kernel panic - not syncing: Attempted to kill the idle task! ]---\r
";

    #[test]
    fn a_recorded_panic_is_seen_as_the_console_grows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("console.log");
        let mut watch = ConsoleWatch::new(path.clone());
        assert_eq!(watch.poll(), None, "no console yet");
        let mut file = std::fs::File::create(&path).unwrap();
        let (boot, crash) = RECORDED.split_at(RECORDED.find("[    1.802113]").unwrap());
        file.write_all(boot.as_bytes()).unwrap();
        assert_eq!(watch.poll(), None, "a clean boot so far");
        // The crash's first line arrives in two writes.
        let (head, tail) = crash.split_at(18);
        file.write_all(head.as_bytes()).unwrap();
        assert_eq!(watch.poll(), None, "not a crash yet: {head:?}");
        file.write_all(tail.as_bytes()).unwrap();
        let line = watch.poll().expect("the oops is seen");
        assert!(
            line.contains("BUG: kernel NULL pointer dereference"),
            "{line}"
        );
        let last = watch.last_lines();
        assert!(last.contains("enqueue_task_fair"), "{last}");
        assert!(last.contains("Kernel panic - not syncing"), "{last}");
        assert!(last.contains("Linux version"), "{last}");
    }

    #[test]
    fn a_clean_boot_and_a_soft_lockup_are_not_crashes() {
        for line in [
            "[  OK  ] Started ssh.service - OpenBSD Secure Shell server.",
            "[   23.1] watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [swapper/0:1]",
        ] {
            assert!(!is_crash(line), "{line}");
        }
        for line in [
            "[    1.8] Kernel panic - not syncing: VFS: Unable to mount root fs",
            "[    2.0] general protection fault, probably for non-canonical address",
        ] {
            assert!(is_crash(line), "{line}");
        }
        assert_eq!(
            first_crash(RECORDED).map(|l| l.contains("BUG: kernel NULL")),
            Some(true)
        );
    }

    #[test]
    fn memory_is_bounded_whatever_the_console_holds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("console.log");
        let mut text = "x".repeat(3 * READ_LIMIT);
        text.push('\n');
        for i in 0..1000 {
            text.push_str(&format!("line {i}\n"));
        }
        std::fs::write(&path, &text).unwrap();
        let mut watch = ConsoleWatch::new(path);
        for _ in 0..4 {
            assert_eq!(watch.poll(), None);
            assert!(watch.partial.len() <= LINE_LIMIT);
            assert!(watch.last.len() <= KEPT_LINES);
        }
        let last = watch.last_lines();
        assert!(last.ends_with("line 999"), "{last}");
        assert_eq!(last.lines().count(), KEPT_LINES);
    }
}
