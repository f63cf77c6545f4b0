//! This machine's processes as [`ProcessId`]s: pid, start time, boot. The
//! marker names processes this way so a recycled pid never matches.

use labrun_evidence::ProcessId;

/// Sends `signal` to the process group `group` (a group's id is its
/// leader's pid). ESRCH, the group already gone, is what the callers expect
/// at times, so no error is returned.
pub fn signal_group(group: libc::pid_t, signal: i32) {
    // SAFETY: kill(2) with a negative pid signals that process group; it has
    // no memory-safety preconditions.
    unsafe {
        libc::kill(-group, signal);
    }
}

/// `/proc/sys/kernel/random/boot_id`, or empty where it cannot be read.
pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// The text of `/proc/<pid>/stat`; empty when there is no such process.
pub fn stat(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default()
}

/// The process `pid` as it is now, if it exists.
pub fn process_id(pid: u32) -> Option<ProcessId> {
    let fields = labrun_evidence::marker::parse_stat(&stat(pid))?;
    Some(ProcessId {
        pid,
        start_ticks: fields.start_ticks,
        boot_id: boot_id(),
    })
}

/// Whether `p` still runs (not exited, not a zombie, not a recycled pid).
pub fn is_running(p: &ProcessId) -> bool {
    p.is_running(&boot_id(), &stat(p.pid))
}
