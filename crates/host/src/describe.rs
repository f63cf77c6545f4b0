//! Each fact in words, one line per source, for `labrun doctor`; an
//! unknown fact says so.

use crate::record::{BoostControl, HostNoise, core_list};

const UNKNOWN: &str = "unknown";

impl HostNoise {
    /// `(source, what was read)` in the order [`HostNoise::findings`] uses.
    pub fn facts(&self) -> Vec<(&'static str, String)> {
        vec![
            ("cpufreq governor", self.governor_fact()),
            (
                "boost",
                self.boost.map_or(UNKNOWN.to_string(), |b| {
                    let file = match b.control {
                        BoostControl::CpufreqBoost => "cpufreq/boost",
                        BoostControl::IntelPstateNoTurbo => "intel_pstate/no_turbo",
                    };
                    format!("{} ({file})", if b.on { "on" } else { "off" })
                }),
            ),
            (
                "SMT",
                self.smt.as_ref().map_or(UNKNOWN.to_string(), |s| {
                    format!(
                        "active {}, control {}",
                        s.active.map_or(UNKNOWN, |a| if a { "yes" } else { "no" }),
                        s.control.as_deref().unwrap_or(UNKNOWN)
                    )
                }),
            ),
            (
                "load average",
                self.load_average.map_or(UNKNOWN.to_string(), |[a, b, c]| {
                    format!("{a:.2} {b:.2} {c:.2}")
                }),
            ),
            (
                "memory",
                self.memory.as_ref().map_or(UNKNOWN.to_string(), |m| {
                    let mib =
                        |v: Option<u64>| v.map_or(UNKNOWN.to_string(), |v| format!("{v} MiB"));
                    format!(
                        "{} available of {}, swap {} used of {}",
                        mib(m.available_mib),
                        mib(m.total_mib),
                        mib(m.swap_used_mib),
                        mib(m.swap_total_mib)
                    )
                }),
            ),
            (
                "transparent huge pages",
                self.transparent_hugepages
                    .clone()
                    .unwrap_or_else(|| UNKNOWN.into()),
            ),
            (
                "NMI watchdog",
                self.nmi_watchdog
                    .map_or(UNKNOWN, |w| if w { "on" } else { "off" })
                    .to_string(),
            ),
            (
                "perf_event_paranoid",
                self.perf_event_paranoid.map_or(UNKNOWN.to_string(), |p| {
                    format!("{p} (labrun's meters read no perf counters: recorded only)")
                }),
            ),
            (
                "other libvirt domains",
                self.other_domains.as_ref().map_or(
                    "unknown (libvirt not asked or not answering)".to_string(),
                    |o| {
                        if o.domains.is_empty() {
                            format!("none running at {}", o.uri)
                        } else {
                            o.domains
                                .iter()
                                .map(|d| format!("{} ({} vCPU)", d.name, d.vcpus))
                                .collect::<Vec<_>>()
                                .join(", ")
                        }
                    },
                ),
            ),
        ]
    }

    fn governor_fact(&self) -> String {
        if self.cores.is_empty() {
            return format!("{UNKNOWN} (no /sys/devices/system/cpu/online)");
        }
        let mut by_governor: Vec<(String, Vec<u32>)> = Vec::new();
        for c in &self.cores {
            let g = self
                .governors
                .get(c)
                .cloned()
                .unwrap_or_else(|| UNKNOWN.into());
            match by_governor.iter_mut().find(|(name, _)| *name == g) {
                Some((_, cores)) => cores.push(*c),
                None => by_governor.push((g, vec![*c])),
            }
        }
        by_governor
            .iter()
            .map(|(g, cores)| format!("{g} on cores {}", core_list(cores)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
