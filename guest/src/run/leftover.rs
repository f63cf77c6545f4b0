//! A tool left running by an agent that was killed (SIGKILL, the OOM
//! killer): orphaned, it goes on writing to the disk and using the CPU, and
//! would skew whatever runs next. The next agent on the machine stops it
//! before measuring anything, and says so in its evidence.
//!
//! Only a tool whose group leader is still the process the marker names
//! (same pid, start time and boot) is signalled: while that leader lives,
//! its group id cannot belong to anyone else.

use crate::run::interrupt::signal_name;
use crate::run::process;
use labrun_evidence::{AgentMarker, ProcessId};
use std::time::{Duration, Instant};

/// How long a leftover tool gets to end after SIGTERM before SIGKILL.
pub const GRACE: Duration = Duration::from_secs(5);

/// Stops the tool `previous` (a dead agent's marker) names, if it still
/// runs. Returns the warning for the evidence, or `None` when nothing was
/// left running.
pub fn stop_leftover_tool(previous: &AgentMarker, grace: Duration) -> Option<String> {
    let tool = previous.tool.as_ref().filter(|t| process::is_running(t))?;
    let what = format!(
        "a tool (process group {}) left running by an agent that was killed (run {}, pid {})",
        tool.pid, previous.run_id, previous.agent.pid
    );
    let outcome = match signal_group(tool, libc::SIGTERM) {
        Err(e) => Err(e),
        Ok(()) if wait_gone(tool, grace) => Ok(libc::SIGTERM),
        Ok(()) => signal_group(tool, libc::SIGKILL).map(|()| {
            wait_gone(tool, grace);
            libc::SIGKILL
        }),
    };
    Some(match outcome {
        Ok(signal) => format!(
            "{what} was stopped with {} before this run started",
            signal_name(signal)
        ),
        Err(e) => format!(
            "{what} is still running and could not be stopped ({e}): it may skew this run's figures; stop it with `kill -KILL -- -{}`",
            tool.pid
        ),
    })
}

/// Signals the tool's whole group, if its leader is still the same process.
fn signal_group(tool: &ProcessId, signal: i32) -> std::io::Result<()> {
    if !process::is_running(tool) {
        return Ok(());
    }
    let group = libc::pid_t::try_from(tool.pid).map_err(std::io::Error::other)?;
    // SAFETY: kill(2) has no memory-safety preconditions.
    if unsafe { libc::kill(-group, signal) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::ESRCH) {
            return Err(e);
        }
    }
    Ok(())
}

/// Waits until the leader has ended (a zombie counts: whoever adopted it
/// reaps it); true if it did within `limit`.
fn wait_gone(tool: &ProcessId, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while process::is_running(tool) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    fn marker_for(tool: Option<ProcessId>) -> AgentMarker {
        AgentMarker {
            run_id: "old-run".into(),
            agent: ProcessId {
                pid: 1,
                start_ticks: 0,
                boot_id: String::new(),
            },
            tool,
        }
    }

    #[test]
    fn a_live_leftover_is_stopped_and_reported() {
        let mut child = Command::new("sleep")
            .arg("1000")
            .process_group(0)
            .spawn()
            .unwrap();
        let tool = process::process_id(child.id()).unwrap();
        let warning = stop_leftover_tool(&marker_for(Some(tool)), GRACE).unwrap();
        assert!(
            warning.contains("old-run") && warning.contains("SIGTERM"),
            "{warning}"
        );
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGTERM));
    }

    #[test]
    fn a_tool_that_ignores_sigterm_gets_sigkill() {
        let mut child = Command::new("sh")
            .args(["-c", "trap '' TERM; echo trapped; sleep 1000 & wait"])
            .process_group(0)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Signal only once the shell says its trap is set: a fixed sleep
        // lost that race on a loaded machine (SIGTERM came first).
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        assert_eq!(line, "trapped\n");
        let tool = process::process_id(child.id()).unwrap();
        let warning =
            stop_leftover_tool(&marker_for(Some(tool)), Duration::from_millis(300)).unwrap();
        assert!(warning.contains("SIGKILL"), "{warning}");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
    }

    #[test]
    fn a_recycled_or_ended_pid_is_left_alone() {
        assert_eq!(stop_leftover_tool(&marker_for(None), GRACE), None);
        let mut child = Command::new("sleep")
            .arg("1000")
            .process_group(0)
            .spawn()
            .unwrap();
        let mut tool = process::process_id(child.id()).unwrap();
        // Same pid, another start: not the process the marker meant.
        tool.start_ticks += 1;
        assert_eq!(stop_leftover_tool(&marker_for(Some(tool)), GRACE), None);
        assert_eq!(
            child.try_wait().unwrap(),
            None,
            "an unrelated process was killed"
        );
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
