//! The vocabulary the lab file, the VM and the evidence share: how the guest
//! CPU is accelerated (asked for and in effect), where its vCPUs are pinned
//! (asked for and in effect), the guest disk's cache mode
//! and speed profile, the limits a VM must stay within, and the lab name rule.
//!
//! Why a crate of its own: the lab schema (`labrun-lab`) reads these words
//! from YAML, the VM (`labrun-vm`) turns them into a libvirt domain, and the
//! report (`labrun-report`) reads them back from `environment.json`. Each of
//! them needs the words, none of them needs the others: the VM knows nothing
//! of lab files, the report nothing of libvirt. They are not in
//! `labrun-evidence` either, because that crate is what the host and the
//! guest agent share, and the agent never sees a disk profile or an
//! acceleration (`environment.json` is written on the host). So the words
//! live here, depending on nothing but serde, and every rule is written once:
//! what `labrun check` accepts is what `labrun up` accepts, and what `up`
//! chose is what the report reads.

pub mod accel;
pub mod bytes;
pub mod cpu_pinning;
pub mod disk_cache;
pub mod disk_profile;
pub mod names;
pub mod vm_limits;

pub use accel::{Accel, Acceleration};
pub use bytes::human_bytes;
pub use cpu_pinning::{CpuList, CpuPinning, Pinned};
pub use disk_cache::DiskCache;
pub use disk_profile::{DiskProfile, IoTune};
