//! The agent's marker: the file a running agent holds locked (`flock`) for
//! as long as it runs, saying which run holds the machine and which tool it
//! has running. The host reads it before starting a run, to refuse a second
//! run beside a live one; the next agent reads a dead agent's marker, to
//! stop the tool it left running.
//!
//! A process is named by its pid, its start time and the boot it started
//! in, so a pid the kernel has since given to another process never
//! matches.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentMarker {
    pub run_id: String,
    /// The agent itself.
    pub agent: ProcessId,
    /// The tool the agent is waiting for, the leader of its own process
    /// group (group id = pid), if one is running.
    #[serde(default)]
    pub tool: Option<ProcessId>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessId {
    pub pid: u32,
    /// Field 22 of `/proc/<pid>/stat`: clock ticks after boot.
    pub start_ticks: u64,
    /// `/proc/sys/kernel/random/boot_id` (empty when unreadable).
    pub boot_id: String,
}

impl ProcessId {
    /// Whether this process is still running, given the machine's boot id
    /// now and the text of `/proc/<pid>/stat` (empty: no such process). A
    /// zombie is not running: it only waits to be reaped.
    pub fn is_running(&self, boot_id: &str, stat: &str) -> bool {
        if !self.boot_id.is_empty() && self.boot_id.trim() != boot_id.trim() {
            return false;
        }
        match parse_stat(stat) {
            Some(s) => s.start_ticks == self.start_ticks && s.state != 'Z' && s.state != 'X',
            None => false,
        }
    }
}

/// The two fields of `/proc/<pid>/stat` a liveness check needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatFields {
    /// R, S, D, Z, T, ...
    pub state: char,
    pub start_ticks: u64,
}

/// Parses `/proc/<pid>/stat`. The command name (field 2) is in parentheses
/// and may itself hold spaces and parentheses: the fields that follow are
/// counted from the last `)`.
pub fn parse_stat(stat: &str) -> Option<StatFields> {
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // fields[0] is field 3 (state); starttime is field 22.
    Some(StatFields {
        state: fields.first()?.chars().next()?,
        start_ticks: fields.get(19)?.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 107 0 0 0 0 0 0 0 20 0 1 0 987654 2314240 224 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";

    fn me() -> ProcessId {
        ProcessId {
            pid: 4242,
            start_ticks: 987654,
            boot_id: "b1\n".into(),
        }
    }

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        assert_eq!(
            parse_stat(STAT),
            Some(StatFields {
                state: 'S',
                start_ticks: 987654
            })
        );
        assert_eq!(parse_stat(""), None);
        assert_eq!(parse_stat("12 (x) S 1"), None);
    }

    #[test]
    fn only_the_same_process_of_the_same_boot_is_running() {
        assert!(me().is_running("b1", STAT));
        assert!(!me().is_running("b2", STAT), "another boot");
        assert!(!me().is_running("b1", ""), "gone");
        let recycled = STAT.replace("987654", "987655");
        assert!(!me().is_running("b1", &recycled), "a recycled pid");
        let zombie = STAT.replace(") S ", ") Z ");
        assert!(!me().is_running("b1", &zombie), "a zombie");
    }

    #[test]
    fn a_marker_round_trips_and_tool_may_be_absent() {
        let m = AgentMarker {
            run_id: "r".into(),
            agent: me(),
            tool: Some(me()),
        };
        let text = serde_json::to_string(&m).unwrap();
        assert_eq!(serde_json::from_str::<AgentMarker>(&text).unwrap(), m);
        let bare = r#"{"run_id":"r","agent":{"pid":1,"start_ticks":2,"boot_id":""}}"#;
        assert_eq!(
            serde_json::from_str::<AgentMarker>(bare).unwrap().tool,
            None
        );
    }
}
