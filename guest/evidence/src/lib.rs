//! The contract between the host controller (`labrun`) and the guest agent
//! (`labrun-agent`): the plan the host writes, the progress events the agent
//! streams on stdout, the evidence records it appends to disk, and the
//! dataset manifest both sides compare.
//!
//! Everything here is plain serde data with a `schema_version`, so evidence
//! written by one build can be read (or refused, clearly) by another.
//! Inputs (the plan) reject unknown fields; outputs (records, events) are
//! read leniently by the host so that a newer agent's extra fields do not
//! break an older report.

pub mod archive_format;
pub mod change_spec;
pub mod command;
pub mod compare;
pub mod dataset_profile;
pub mod digest;
pub mod event;
pub mod human;
pub mod manifest;
pub mod marker;
pub mod plan;
pub mod printable;
pub mod protocol;
pub mod record;
pub mod snapshot_id;
pub mod step;
pub mod storage;
pub mod variant;

pub use archive_format::ArchiveFormat;
pub use change_spec::ChangeSpec;
pub use command::{CommandTemplate, PLACEHOLDERS};
pub use dataset_profile::DatasetProfile;
pub use event::Event;
pub use manifest::{EntryKind, Manifest, ManifestEntry, ManifestReader, Mtime};
pub use marker::{AgentMarker, ProcessId};
pub use plan::{
    CommitSelection, DatasetPlan, HistoryGenerator, HistorySource, Plan, Round, Sample,
    ToolCommands, ToolPlan, TreePlan, TreeSource,
};
pub use protocol::{EachCommit, ProtocolStep, RunStep};
pub use record::{
    ExitStatus, HistoryPoint, MetadataCheck, MetadataKind, MetadataStatus, OlderFiles, OomKill,
    StepRecord, TimelineRow, TreeMeters, VerifyOutcome,
};
pub use step::Step;
pub use storage::{Network, Server, StoragePlan, StorageRecord};

/// Bumped whenever a field changes meaning or a required field is added.
pub const SCHEMA_VERSION: u32 = 1;

/// File names inside an evidence directory, shared so the host knows where
/// the agent put things.
pub mod files {
    /// One [`crate::StepRecord`] per line, appended and flushed per step.
    pub const RECORDS: &str = "records.jsonl";
    /// The agent's progress events, one [`crate::Event`] per line (a copy of
    /// what it streams on stdout, so a detached run can be followed later).
    pub const EVENTS: &str = "events.jsonl";
    /// The plan as the agent ran it (secrets removed).
    pub const PLAN: &str = "plan.json";
    /// Tool stdout/stderr live under this folder, one pair per step.
    pub const LOGS_DIR: &str = "logs";
    /// Manifests (generated and changed source trees) live under this folder.
    pub const MANIFESTS_DIR: &str = "manifests";
    /// Written last, only when the agent finished the whole plan.
    pub const DONE: &str = "done.json";
    /// Every tool binary's SHA-256, as `sha256sum` prints it, from the
    /// agent's check before the first cycle.
    pub const BINARY_DIGESTS: &str = "binary-sha256.txt";
    /// [`crate::ToolVersions`]: what each tool's version command printed.
    pub const TOOL_VERSIONS: &str = "tool-versions.json";

    /// The plan of a run's continuation from cycle `first` on (`plan.json`
    /// stays the run's first plan).
    pub fn continued_plan(first: u32) -> String {
        format!("plan-from-cycle-{first}.json")
    }
}

/// Tool name to the first line its version command printed (or why there
/// is none).
pub type ToolVersions = std::collections::BTreeMap<String, String>;
