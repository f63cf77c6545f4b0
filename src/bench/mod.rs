//! `labrun bench`: push the agent, start the plan detached in the guest,
//! follow its events, pull evidence as it lands, summarize at the end.
//!
//! The runner emits events; the display (`progress`) and the evidence puller
//! (`pull`) consume them, the way nextest separates running from reporting.

pub mod dataset_push;
pub mod environment;
pub mod estimate;
pub mod host_phases;
pub mod interleave;
pub mod layout;
pub mod machine;
pub mod more_pairs;
pub mod pool;
pub mod progress;
pub mod pull;
pub mod remote;
pub mod session_file;
pub mod timestamp;
pub mod variants;
