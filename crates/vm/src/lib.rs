//! The machine under test: base image, libvirt domain, host checks,
//! lifecycle state.
//!
//! The crate has its own typed [`VmConfig`]; the lab file's `vm:` section
//! converts into it. Entry points: [`up()`], [`down()`], [`down_all`],
//! [`status()`], [`image::build`], [`preflight()`], [`install_tools`].
//! What works on these hosts (TCG on PVM, slirp via `qemu:commandline`, the
//! raw-tar seed disk, cloud-init NoCloud for a pinned cloud image) comes from
//! `shared/notes/vm-on-this-host.md`.

pub mod accel;
pub mod access;
pub use labrun_artifact::apt_sources;
pub mod cloud;
pub mod config;
pub mod console_watch;
mod disks;
pub mod down;
pub mod error;
pub mod host;
pub mod hypervisor;
pub mod image;
pub mod lock;
pub mod nocloud;
pub mod pinning;
pub mod preflight;
pub mod recipe;
pub mod remote;
pub mod seed;
pub mod state;
pub mod status;
pub mod tools;
pub mod up;
pub mod xml;

pub use accel::Acceleration;
pub use config::{
    Accel, CloudImage, CpuPinning, DiskCache, DiskProfile, ImageSource, ImageSpec, IoTune, Pinned,
    VmConfig,
};
pub use down::{DownReport, down, down_all, down_host};
pub use error::VmError;
pub use preflight::{HostReport, preflight};
pub use remote::RemoteHost;
pub use state::{LabDir, Phase, VmState};
pub use status::{LabStatus, status};
pub use tools::{GuestInstall, InstalledTool, ToolInstall, install_tools};
pub use up::{Cancel, Paths, UpOutcome, UpProgress, up};
