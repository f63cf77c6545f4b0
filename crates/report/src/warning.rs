//! What a reader must know before trusting the figures.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    pub kind: WarningKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    /// The guest ran under TCG: times are not comparable with hardware runs.
    SoftwareEmulation,
    /// Some timed step ran without `sync` + drop_caches before it.
    CacheNotDropped,
    /// Some step failed; its figures are left out of medians and ranges.
    StepsFailed,
    /// Fewer cycles were recorded than the plan asked for.
    CyclesMissing,
    /// The last line of `records.jsonl` was cut short and skipped.
    TruncatedRecords,
    /// `environment.json` is absent or unreadable.
    MissingEnvironment,
    /// `plan.json` is absent or unreadable.
    MissingPlan,
    /// Records carry more than one run id.
    MixedRuns,
    /// The run measured only some of the lab's tools (`--tools`).
    ToolsSubset,
    /// A step left processes running; the agent killed them (named).
    LeftoverProcesses,
    /// Timed steps ran without tree figures (no writable cgroup v2).
    NoTreeMeters,
    /// The agent's own CPU during a step was 1% of the step's or more.
    AgentOverhead,
    /// A step's timeline file is missing or unreadable: it is not drawn.
    UnreadableTimeline,
    /// A comparison the lab asked for could not be made (a tool not run,
    /// no cycle where both sides succeeded, an unreadable request).
    ComparisonNotMade,
    /// `storage.json` (the storage server and the network measured) is
    /// unreadable.
    StorageUnknown,
    /// The host had a noise source (a frequency governor, boost, swap, another
    /// VM...) before or after the run; the message names the fix.
    HostNoise,
}

impl Warning {
    pub fn new(kind: WarningKind, message: impl Into<String>) -> Warning {
        Warning {
            kind,
            message: message.into(),
        }
    }
}
