//! `raw/environment.json`: the machine a run had, written by `bench` on the
//! host. Every field is optional and unknown fields are ignored, so an older
//! or newer bench, or a hand-made run on dedicated hardware, still reads.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// File name inside `raw/`.
pub const ENVIRONMENT_FILE: &str = "environment.json";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Environment {
    /// The machine that ran labrun (and QEMU, for a VM lab).
    pub host: Machine,
    /// The machine the tools ran on: the VM, or the lab's SSH target.
    pub guest: Machine,
    /// e.g. `9.0.0`; absent for an SSH target.
    pub libvirt_version: Option<String>,
    /// e.g. `7.2.19`; absent for an SSH target.
    pub qemu_version: Option<String>,
    /// How the guest CPU ran: `kvm` (hardware) or `tcg` (software emulation).
    pub acceleration: Option<String>,
    /// The guest disk's cache mode as given to QEMU, e.g. `none`, `writeback`.
    pub disk_cache: Option<String>,
    /// Tool name to what the tool's version command printed (first line).
    /// The agent asks them during the run (`tool-versions.json`, which the
    /// report reads into here); runs before it had them in this file.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_versions: labrun_evidence::ToolVersions,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Machine {
    pub cpu_model: Option<String>,
    /// `/proc/cpuinfo` flags (kept for the record; not printed in summaries).
    pub cpu_flags: Vec<String>,
    pub cpus: Option<u32>,
    pub memory_mib: Option<u64>,
    /// `uname -r`.
    pub kernel: Option<String>,
    /// `PRETTY_NAME` of `/etc/os-release`.
    pub os: Option<String>,
}

impl Environment {
    /// True when the guest ran under QEMU's software emulation (TCG): every
    /// time is then several times longer than on hardware virtualization.
    pub fn is_software_emulation(&self) -> bool {
        self.acceleration
            .as_deref()
            .is_some_and(|a| a.trim().eq_ignore_ascii_case("tcg"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_partial_and_unknown_fields() {
        let env: Environment = serde_json::from_str(
            r#"{"acceleration":"TCG","guest":{"kernel":"6.1.0-57-amd64","gpu":"none"},"later":1}"#,
        )
        .unwrap();
        assert!(env.is_software_emulation());
        assert_eq!(env.guest.kernel.as_deref(), Some("6.1.0-57-amd64"));
        assert_eq!(env.host, Machine::default());
        let kvm: Environment = serde_json::from_str(r#"{"acceleration":"kvm"}"#).unwrap();
        assert!(!kvm.is_software_emulation());
        assert!(!Environment::default().is_software_emulation());
    }
}
