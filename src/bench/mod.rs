//! `labrun bench`: push the agent, start the plan detached in the guest,
//! follow its events, pull evidence as it lands, summarize at the end.
//!
//! The command hands a [`request::BenchRequest`] to [`start`] or [`attach`];
//! nothing here reads the command line. While a run is followed the event
//! tail ([`tail`]) produces and the display ([`progress`]), the evidence
//! writer ([`evidence_writer`]) and the log puller ([`log_puller`]) consume,
//! each at its own pace ([`consumers`]), the way nextest separates running
//! from reporting.

pub mod agent_binary;
pub mod attach;
pub mod connect;
pub mod consumers;
pub mod dataset_push;
pub mod environment;
pub mod estimate;
pub mod events;
pub mod evidence_writer;
pub mod follow;
pub mod host_phases;
pub mod interleave;
pub mod layout;
pub mod log_puller;
pub mod machine;
pub mod more_pairs;
pub mod pool;
pub mod prepare;
pub mod progress;
pub mod remote;
pub mod request;
pub mod run_facts;
pub mod session_file;
pub mod start;
pub mod store_import;
pub mod tail;
pub mod target_checks;
pub mod timestamp;
pub mod variants;
