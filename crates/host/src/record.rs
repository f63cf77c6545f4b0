//! The facts as `environment.json` records them. Every fact is optional: a
//! file that is missing or unreadable is unknown (`None`), never a guess,
//! and a pack written before these facts existed still reads.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The host's noise sources at the start and at the end of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NoiseRecord {
    /// Read while the agent was pushed, before the first timed step.
    pub before: Option<HostNoise>,
    /// Read once the run's evidence was pulled.
    pub after: Option<HostNoise>,
    /// Why a side was not read (e.g. an SSH target: the tools did not run
    /// on a host labrun can see).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_read: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostNoise {
    /// The host cores QEMU may run on (`/sys/devices/system/cpu/online`);
    /// empty when unknown.
    pub cores: Vec<u32>,
    /// Each core's cpufreq governor; a core of `cores` missing here had no
    /// readable `scaling_governor` (unknown: no cpufreq driver, or a VM).
    pub governors: BTreeMap<u32, String>,
    pub boost: Option<Boost>,
    pub smt: Option<Smt>,
    /// `/proc/loadavg`: 1, 5 and 15 minutes.
    pub load_average: Option<[f64; 3]>,
    pub memory: Option<Memory>,
    /// The mode in force of `transparent_hugepage/enabled` (`always`,
    /// `madvise`, `never`).
    pub transparent_hugepages: Option<String>,
    pub nmi_watchdog: Option<bool>,
    /// Recorded, not judged: labrun's meters read no perf counters, so it
    /// matters only to whoever profiles the host beside a run.
    pub perf_event_paranoid: Option<i32>,
    /// None: libvirt was not asked, or did not answer.
    pub other_domains: Option<OtherDomains>,
}

/// Turbo/boost: the clock goes above its base while the package is cool,
/// so the same work takes less time early and more once it is warm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Boost {
    pub on: bool,
    /// The file it was read from, which is the one that turns it off.
    pub control: BoostControl,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BoostControl {
    /// `/sys/devices/system/cpu/cpufreq/boost` (acpi-cpufreq, amd-pstate): 1 is on.
    CpufreqBoost,
    /// `/sys/devices/system/cpu/intel_pstate/no_turbo`: 0 is on.
    IntelPstateNoTurbo,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Smt {
    /// `smt/active`: a sibling thread is online.
    pub active: Option<bool>,
    /// `smt/control`: `on`, `off`, `forceoff`, `notsupported`, `notimplemented`.
    pub control: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Memory {
    pub total_mib: Option<u64>,
    /// `MemAvailable`: what can be had without swapping.
    pub available_mib: Option<u64>,
    pub swap_total_mib: Option<u64>,
    /// `SwapTotal - SwapFree`.
    pub swap_used_mib: Option<u64>,
}

/// The running libvirt domains at `uri` other than the lab's own.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct OtherDomains {
    pub uri: String,
    pub domains: Vec<Domain>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Domain {
    pub name: String,
    pub vcpus: u32,
}

impl HostNoise {
    /// The cores whose governor is unknown.
    pub fn cores_without_governor(&self) -> Vec<u32> {
        self.cores
            .iter()
            .copied()
            .filter(|c| !self.governors.contains_key(c))
            .collect()
    }
}

/// `0-3,6`: cores as the kernel writes CPU lists.
pub fn core_list(cores: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cores.len() {
        let start = cores[i];
        let mut end = start;
        while i + 1 < cores.len() && cores[i + 1] == end + 1 {
            i += 1;
            end = cores[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_lists_are_written_as_the_kernel_does() {
        assert_eq!(core_list(&[0, 1, 2, 3, 6, 8, 9]), "0-3,6,8-9");
        assert_eq!(core_list(&[]), "");
    }

    #[test]
    fn an_empty_record_reads_from_nothing() {
        let r: NoiseRecord = serde_json::from_str("{}").unwrap();
        assert_eq!(r, NoiseRecord::default());
        let n: HostNoise = serde_json::from_str(r#"{"later":1}"#).unwrap();
        assert_eq!(n, HostNoise::default());
    }
}
