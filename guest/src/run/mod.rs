//! `labrun-agent run`: the timed cycles of a plan, measured and written down
//! as evidence as they happen. [`runner`] is the run itself; the other
//! modules each do one job for it.

pub mod agent_lock;
pub mod background;
pub mod cache;
pub mod cgroup;
pub mod dataset_store;
pub mod env;
pub mod error;
pub mod evidence;
pub mod flush;
pub mod interrupt;
pub mod leftover;
pub mod measure;
pub mod name_set;
pub mod oom;
pub mod owner_access;
pub mod placeholders;
pub mod plan_check;
pub mod private_paths;
pub mod process;
pub mod remove;
pub mod repo_size;
pub mod reset;
pub mod rotation;
pub mod run_dirs;
pub mod runner;
pub mod sampler;
pub mod scrub;
pub mod settle;
pub mod space;
pub mod storage;
pub mod tool_versions;
pub mod tree_memory;

pub use error::RunError;
pub use interrupt::Interrupt;
pub use runner::{RunOptions, RunOutcome, execute};
