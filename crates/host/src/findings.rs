//! What counts as noise, and the command that removes it: the one rule the
//! run's summary and `labrun doctor` both print. Unknown facts are never
//! findings: a host without cpufreq files has no governor to blame.

use crate::record::{BoostControl, HostNoise, core_list};
use serde::{Deserialize, Serialize};

/// A 1-minute load at or above this means other work shares the cores
/// (under a run, the lab's own VM counts too).
const BUSY_LOAD: f64 = 1.0;
/// Less memory available than this share of the total: the guest's pages
/// compete with other work, and the host may reclaim or swap under a run.
const LOW_MEMORY_PERCENT: u64 = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Governor,
    Boost,
    Smt,
    Load,
    Memory,
    Swap,
    TransparentHugepages,
    NmiWatchdog,
    OtherDomains,
}

/// One noise source found, in words, and the command that removes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub source: Source,
    pub found: String,
    pub fix: String,
}

impl HostNoise {
    /// Each noise source found, in a fixed order.
    pub fn findings(&self) -> Vec<Finding> {
        let mut out = Vec::new();
        let mut add = |source, found: String, fix: &str| {
            out.push(Finding {
                source,
                found,
                fix: fix.to_string(),
            })
        };
        let slow: Vec<u32> = self
            .governors
            .iter()
            .filter(|(_, g)| g.as_str() != "performance")
            .map(|(c, _)| *c)
            .collect();
        if !slow.is_empty() {
            let mut names: Vec<&str> = slow
                .iter()
                .filter_map(|c| self.governors.get(c).map(String::as_str))
                .collect();
            names.sort_unstable();
            names.dedup();
            add(
                Source::Governor,
                format!(
                    "cpufreq governor `{}` on cores {}: the clock ramps up and down under the timed steps",
                    names.join("`, `"),
                    core_list(&slow)
                ),
                "cpupower frequency-set -g performance",
            );
        }
        if let Some(b) = self.boost.filter(|b| b.on) {
            add(
                Source::Boost,
                "turbo boost is on: the clock depends on how warm the package is".into(),
                match b.control {
                    BoostControl::CpufreqBoost => "echo 0 > /sys/devices/system/cpu/cpufreq/boost",
                    BoostControl::IntelPstateNoTurbo => {
                        "echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo"
                    }
                },
            );
        }
        if let Some(smt) = &self.smt
            && smt.active == Some(true)
        {
            add(
                Source::Smt,
                "SMT is on: a vCPU can share a physical core with another thread".into(),
                "echo off > /sys/devices/system/cpu/smt/control",
            );
        }
        if let Some([one, five, _]) = self.load_average
            && one >= BUSY_LOAD
        {
            add(
                Source::Load,
                format!(
                    "load average {one:.2} (1 min), {five:.2} (5 min): other work shares the cores (a running lab VM counts too); find it and stop it before the run"
                ),
                "top -o %CPU",
            );
        }
        if let Some(m) = &self.memory {
            if let (Some(avail), Some(total)) = (m.available_mib, m.total_mib)
                && avail * 100 < total * LOW_MEMORY_PERCENT
            {
                add(
                    Source::Memory,
                    format!(
                        "only {avail} MiB of {total} MiB memory available: stop what holds it, or give the guest less"
                    ),
                    "ps aux --sort=-rss | head",
                );
            }
            if let Some(used) = m.swap_used_mib.filter(|u| *u > 0) {
                add(
                    Source::Swap,
                    format!(
                        "{used} MiB of swap in use: a page the guest touches may be read back from disk (swapoff needs free memory for them; `swapon -a` after the run)"
                    ),
                    "swapoff -a",
                );
            }
        }
        if self.transparent_hugepages.as_deref() == Some("always") {
            add(
                Source::TransparentHugepages,
                "transparent huge pages `always`: khugepaged compacts memory beside the run".into(),
                "echo never > /sys/kernel/mm/transparent_hugepage/enabled",
            );
        }
        if self.nmi_watchdog == Some(true) {
            add(
                Source::NmiWatchdog,
                "the NMI watchdog is on: a periodic interrupt on every core".into(),
                "sysctl -w kernel.nmi_watchdog=0",
            );
        }
        if let Some(other) = &self.other_domains {
            for d in &other.domains {
                out.push(Finding {
                    source: Source::OtherDomains,
                    found: format!(
                        "libvirt domain `{}` runs beside the lab's VM with {} vCPU{}",
                        d.name,
                        d.vcpus,
                        if d.vcpus == 1 { "" } else { "s" }
                    ),
                    fix: format!("virsh -c {} shutdown {}", other.uri, d.name),
                });
            }
        }
        out
    }
}
