//! The host's noise sources, read-only (what `pyperf system show` reports):
//! the cpufreq governor and boost of the cores QEMU may run on, SMT, the
//! load average, free memory and swap in use, transparent huge pages, the
//! NMI watchdog, and the other libvirt domains running beside the lab's.
//!
//! Why a crate of its own: `bench` records these facts in
//! `environment.json` before and after a run, `labrun doctor` prints them,
//! and the report warns about them from the evidence alone. The report must
//! not link libvirt (`labrun-vm`), so the facts, the reader (plain files
//! under a root folder, or the same files printed by a remote host's shell)
//! and the rule of what counts as noise live here, once.
//!
//! Nothing here changes the host: each [`Finding`] carries the command that
//! would remove it, for the user to run.

pub mod describe;
pub mod findings;
pub mod read;
pub mod record;

pub use findings::{Finding, Source};
pub use read::{DUMP_SCRIPT, Dump, Files, Root, read};
pub use record::{Boost, BoostControl, Domain, HostNoise, Memory, NoiseRecord, OtherDomains, Smt};
