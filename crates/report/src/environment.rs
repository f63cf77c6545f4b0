//! `raw/environment.json`: the machine a run had, written by `bench` on the
//! host. Every field is optional and unknown fields are ignored, so an older
//! or newer bench, or a hand-made run on dedicated hardware, still reads.

use labrun_vocab::Acceleration;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// File name inside `raw/`.
pub const ENVIRONMENT_FILE: &str = "environment.json";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Environment {
    /// The machine that ran QEMU for a VM lab (this one, or the lab's
    /// remote hypervisor named in `hypervisor`); for an SSH target, the one
    /// that ran labrun.
    pub host: Machine,
    /// The name of the lab's `hosts:` entry the VM ran on, when it was
    /// another host than the one running labrun.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hypervisor: Option<String>,
    /// The machine the tools ran on: the VM, or the lab's SSH target.
    pub guest: Machine,
    /// e.g. `9.0.0`; absent for an SSH target.
    pub libvirt_version: Option<String>,
    /// e.g. `7.2.19`; absent for an SSH target.
    pub qemu_version: Option<String>,
    /// How the guest CPU ran: `kvm` (hardware) or `tcg` (software emulation);
    /// one this labrun does not know reads as unknown.
    #[serde(deserialize_with = "labrun_vocab::accel::known_or_none")]
    pub acceleration: Option<Acceleration>,
    /// The guest disk's cache mode as given to QEMU, e.g. `none`, `writeback`.
    pub disk_cache: Option<String>,
    /// The guest disk's profile as the lab named it (`unthrottled`, `hdd`,
    /// `ssd`, `custom`); absent for an SSH target and older runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_profile: Option<String>,
    /// The limits libvirt's `<iotune>` put on it (empty: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_iotune: Option<labrun_vocab::IoTune>,
    /// Where the vCPUs and QEMU's emulator threads were pinned on the host,
    /// as the lab asked and as `up` could (with why not more); absent when
    /// the lab asked for no pinning, for an SSH target and older runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_pinning: Option<labrun_vocab::Pinned>,
    /// Tool name to what the tool's version command printed (first line).
    /// The agent asks them during the run (`tool-versions.json`, which the
    /// report reads into here); runs before it had them in this file.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_versions: labrun_evidence::ToolVersions,
    /// Where the repositories lived when not on the machine's own disk: the
    /// server, the network asked for and the round trip the agent measured
    /// (`storage.json`, which the report reads into here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage: Option<labrun_evidence::StorageRecord>,
    /// The host's noise sources (governor, boost, SMT, load, swap, other
    /// VMs...) before and after the run; absent in runs before they were
    /// recorded, and for an SSH target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise: Option<labrun_host::NoiseRecord>,
    /// How the VM's first boot crashed, when its kernel crashed while
    /// booting and `up` booted it once more (absent: the first boot came up).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boot_retry: Option<String>,
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
    /// `hdd (total_bytes_sec=150000000, total_iops_sec=200)`, or None when
    /// the run did not record its disk's profile.
    pub fn disk_speed(&self) -> Option<String> {
        let name = self.disk_profile.as_deref()?;
        Some(match self.disk_iotune.filter(|t| !t.is_unlimited()) {
            Some(t) => format!("{name} ({})", t.describe()),
            None => name.to_string(),
        })
    }

    /// `sftp server, 25 ms round trip, 100 Mbit/s asked, 25.4 ms measured
    /// (median of 5 TCP connects)`; None for repositories on the machine's
    /// own disk.
    pub fn repositories(&self) -> Option<String> {
        let st = self.storage.as_ref()?;
        let asked = st.network.map_or_else(
            || "network unshaped".to_string(),
            |n| format!("{} asked", n.describe()),
        );
        let measured = match st.median_rtt_ms() {
            Some(ms) => format!(
                ", {ms:.1} ms measured (median of {} TCP connects)",
                st.connect_rtt_ms.len()
            ),
            None => ", round trip not measured".into(),
        };
        let version = st
            .server_version
            .as_deref()
            .map(|v| format!(" ({v})"))
            .unwrap_or_default();
        Some(format!(
            "{} server{version} in a network namespace of the agent's: {asked}{measured}",
            st.server
        ))
    }

    /// The machine QEMU ran on and how, in words: what makes two runs'
    /// figures comparable (`AMD EPYC, 2 CPUs, 4 GiB, kernel 6.1.0-27-amd64,
    /// kvm`). The report's "host class".
    pub fn host_class(&self) -> String {
        let m = &self.host;
        format!(
            "{}, {} CPUs, {} GiB, kernel {}, {}",
            m.cpu_model.as_deref().unwrap_or("unknown CPU"),
            m.cpus.map_or("?".into(), |c| c.to_string()),
            m.memory_mib
                .map_or("?".into(), |mib| format!("{:.0}", mib as f64 / 1024.0)),
            m.kernel.as_deref().unwrap_or("?"),
            self.acceleration
                .map_or("unknown acceleration", |a| a.as_str()),
        )
    }

    /// True when the guest ran under QEMU's software emulation (TCG): every
    /// time is then several times longer than on hardware virtualization.
    pub fn is_software_emulation(&self) -> bool {
        self.acceleration.is_some_and(Acceleration::is_emulated)
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

    /// A run made before the noise sources were recorded reads with none;
    /// one that has them reads them back.
    #[test]
    fn the_noise_record_is_optional() {
        let old: Environment = serde_json::from_str(r#"{"acceleration":"kvm"}"#).unwrap();
        assert_eq!(old.noise, None);
        assert!(!serde_json::to_string(&old).unwrap().contains("noise"));
        let new: Environment = serde_json::from_str(
            r#"{"noise":{"before":{"cores":[0,1],"governors":{"0":"powersave"},"transparent_hugepages":"always"}}}"#,
        )
        .unwrap();
        let before = new.noise.unwrap().before.unwrap();
        assert_eq!(
            before.governors.get(&0).map(String::as_str),
            Some("powersave")
        );
        assert_eq!(before.transparent_hugepages.as_deref(), Some("always"));
    }

    #[test]
    fn the_repositories_are_said_with_the_round_trip_measured() {
        let env: Environment = serde_json::from_str(
            r#"{"storage":{"server":"sftp","network":{"rtt_ms":25.0,"rate_bits_per_sec":100000000},
                "address":"10.250.0.2:22","connect_rtt_ms":[25.9,25.2,26.4],"server_version":"OpenSSH_10.2p1"}}"#,
        )
        .unwrap();
        assert_eq!(
            env.repositories().as_deref(),
            Some(
                "sftp server (OpenSSH_10.2p1) in a network namespace of the agent's: 25 ms round trip, 100 Mbit/s asked, 25.9 ms measured (median of 3 TCP connects)"
            )
        );
        assert_eq!(Environment::default().repositories(), None);
    }

    #[test]
    fn the_disk_profile_is_said_with_its_limits() {
        let env: Environment = serde_json::from_str(
            r#"{"disk_profile":"hdd","disk_iotune":{"total_bytes_sec":150000000,"total_iops_sec":200}}"#,
        )
        .unwrap();
        assert_eq!(
            env.disk_speed().as_deref(),
            Some("hdd (total_bytes_sec=150000000, total_iops_sec=200)")
        );
        let free: Environment =
            serde_json::from_str(r#"{"disk_profile":"unthrottled","disk_iotune":{}}"#).unwrap();
        assert_eq!(free.disk_speed().as_deref(), Some("unthrottled"));
        assert_eq!(Environment::default().disk_speed(), None);
        // Unset, the fields stay out of the file: older readers see nothing new.
        let json = serde_json::to_string(&Environment::default()).unwrap();
        assert!(!json.contains("disk_profile") && !json.contains("disk_iotune"));
    }

    #[test]
    fn the_pinning_applied_is_kept_with_why_not_more() {
        let env: Environment = serde_json::from_str(
            r#"{"acceleration":"kvm","cpu_pinning":{"asked":"auto","cpus":{"vcpus":[],"emulator":null},
                "notes":["cannot pin 4 vCPUs: the host has 2 cores, 2 online CPUs"]}}"#,
        )
        .unwrap();
        let p = env.cpu_pinning.clone().unwrap();
        assert_eq!(p.asked, labrun_vocab::CpuPinning::Auto);
        assert!(p.cpus.vcpus.is_empty());
        assert!(
            p.describe()
                .starts_with("auto: nothing pinned (cannot pin 4")
        );
        let back: Environment =
            serde_json::from_str(&serde_json::to_string(&env).unwrap()).unwrap();
        assert_eq!(back, env);
        // Unasked, it stays out of the file.
        let json = serde_json::to_string(&Environment::default()).unwrap();
        assert!(!json.contains("cpu_pinning"));
    }
}
