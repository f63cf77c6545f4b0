//! Reading the facts: from files under a root folder (this host is `/`; a
//! test's fake tree is any folder), or from the same files printed by a
//! remote host's shell ([`DUMP_SCRIPT`]). One parser reads both.

use crate::record::{Boost, BoostControl, HostNoise, Memory, Smt};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const CPU: &str = "/sys/devices/system/cpu";
const ONLINE: &str = "/sys/devices/system/cpu/online";
const BOOST: &str = "/sys/devices/system/cpu/cpufreq/boost";
const NO_TURBO: &str = "/sys/devices/system/cpu/intel_pstate/no_turbo";
const SMT_ACTIVE: &str = "/sys/devices/system/cpu/smt/active";
const SMT_CONTROL: &str = "/sys/devices/system/cpu/smt/control";
const LOADAVG: &str = "/proc/loadavg";
const MEMINFO: &str = "/proc/meminfo";
const THP: &str = "/sys/kernel/mm/transparent_hugepage/enabled";
const NMI_WATCHDOG: &str = "/proc/sys/kernel/nmi_watchdog";
const PERF_EVENT_PARANOID: &str = "/proc/sys/kernel/perf_event_paranoid";

/// Prints each readable file of the probe as `==> PATH` and its text:
/// plain POSIX sh and `cat`, so any Linux hypervisor host answers it.
/// [`Dump::parse`] reads its output.
pub const DUMP_SCRIPT: &str = r#"
for f in /sys/devices/system/cpu/online /sys/devices/system/cpu/cpufreq/boost \
  /sys/devices/system/cpu/intel_pstate/no_turbo /sys/devices/system/cpu/smt/active \
  /sys/devices/system/cpu/smt/control /proc/loadavg /proc/meminfo \
  /sys/kernel/mm/transparent_hugepage/enabled /proc/sys/kernel/nmi_watchdog \
  /proc/sys/kernel/perf_event_paranoid /sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor; do
  if [ -r "$f" ]; then echo "==> $f"; cat "$f"; fi
done
"#;

/// Where the probe's files come from.
pub trait Files {
    /// The text of an absolute path such as `/proc/loadavg`; None when it
    /// is missing or unreadable.
    fn read(&self, path: &str) -> Option<String>;
}

/// Files under a root folder: `/` for this host.
pub struct Root(pub PathBuf);

impl Files for Root {
    fn read(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.0.join(path.trim_start_matches('/'))).ok()
    }
}

impl Root {
    pub fn host() -> Root {
        Root(Path::new("/").to_path_buf())
    }
}

/// Files as [`DUMP_SCRIPT`] printed them.
#[derive(Debug, Default)]
pub struct Dump(BTreeMap<String, String>);

impl Dump {
    pub fn parse(text: &str) -> Dump {
        let mut files = BTreeMap::new();
        let mut current: Option<(String, String)> = None;
        for line in text.lines() {
            if let Some(path) = line.strip_prefix("==> ") {
                files.extend(current.take());
                current = Some((path.to_string(), String::new()));
            } else if let Some((_, body)) = current.as_mut() {
                body.push_str(line);
                body.push('\n');
            }
        }
        files.extend(current);
        Dump(files)
    }
}

impl Files for Dump {
    fn read(&self, path: &str) -> Option<String> {
        self.0.get(path).cloned()
    }
}

/// Every fact the files give; `other_domains` is left for the caller, who
/// has libvirt.
pub fn read(files: &dyn Files) -> HostNoise {
    let text = |p: &str| files.read(p).map(|t| t.trim().to_string());
    let cores = text(ONLINE).map(|t| parse_cpu_list(&t)).unwrap_or_default();
    let governors = cores
        .iter()
        .filter_map(|c| {
            let g = text(&format!("{CPU}/cpu{c}/cpufreq/scaling_governor"))?;
            (!g.is_empty()).then_some((*c, g))
        })
        .collect();
    HostNoise {
        cores,
        governors,
        boost: boost(&text),
        smt: smt(&text),
        load_average: text(LOADAVG).and_then(|t| parse_loadavg(&t)),
        memory: text(MEMINFO).map(|t| parse_meminfo(&t)),
        transparent_hugepages: text(THP).and_then(|t| selected_mode(&t)),
        nmi_watchdog: text(NMI_WATCHDOG).and_then(|t| parse_flag(&t)),
        perf_event_paranoid: text(PERF_EVENT_PARANOID).and_then(|t| t.parse().ok()),
        other_domains: None,
    }
}

fn boost(text: &dyn Fn(&str) -> Option<String>) -> Option<Boost> {
    if let Some(on) = text(BOOST).and_then(|t| parse_flag(&t)) {
        return Some(Boost {
            on,
            control: BoostControl::CpufreqBoost,
        });
    }
    let no_turbo = text(NO_TURBO).and_then(|t| parse_flag(&t))?;
    Some(Boost {
        on: !no_turbo,
        control: BoostControl::IntelPstateNoTurbo,
    })
}

fn smt(text: &dyn Fn(&str) -> Option<String>) -> Option<Smt> {
    let smt = Smt {
        active: text(SMT_ACTIVE).and_then(|t| parse_flag(&t)),
        control: text(SMT_CONTROL).filter(|t| !t.is_empty()),
    };
    (smt != Smt::default()).then_some(smt)
}

/// `0` or `1`; anything else is unknown.
fn parse_flag(t: &str) -> Option<bool> {
    match t {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

/// `0-3,5,7-8`.
fn parse_cpu_list(t: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in t.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
            out.extend(a..=b);
        }
    }
    out
}

/// `0.52 0.58 0.59 1/123 4567`.
fn parse_loadavg(t: &str) -> Option<[f64; 3]> {
    let mut it = t.split_whitespace().map(str::parse::<f64>);
    Some([it.next()?.ok()?, it.next()?.ok()?, it.next()?.ok()?])
}

fn parse_meminfo(t: &str) -> Memory {
    let kib = |key: &str| {
        t.lines().find_map(|l| {
            let rest = l.strip_prefix(key)?.strip_prefix(':')?;
            rest.split_whitespace().next()?.parse::<u64>().ok()
        })
    };
    let mib = |k: Option<u64>| k.map(|k| k / 1024);
    Memory {
        total_mib: mib(kib("MemTotal")),
        available_mib: mib(kib("MemAvailable")),
        swap_total_mib: mib(kib("SwapTotal")),
        swap_used_mib: match (kib("SwapTotal"), kib("SwapFree")) {
            (Some(total), Some(free)) => Some(total.saturating_sub(free) / 1024),
            _ => None,
        },
    }
}

/// `always [madvise] never` -> `madvise`.
fn selected_mode(t: &str) -> Option<String> {
    let start = t.find('[')?;
    let end = t[start..].find(']')? + start;
    Some(t[start + 1..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_formats_are_read() {
        assert_eq!(parse_cpu_list("0-3,6,8-9\n"), vec![0, 1, 2, 3, 6, 8, 9]);
        assert_eq!(parse_cpu_list("0"), vec![0]);
        assert_eq!(parse_cpu_list("junk"), Vec::<u32>::new());
        assert_eq!(
            parse_loadavg("0.52 0.58 0.59 1/123 4567"),
            Some([0.52, 0.58, 0.59])
        );
        assert_eq!(parse_loadavg("0.52"), None);
        assert_eq!(
            selected_mode("always [madvise] never").as_deref(),
            Some("madvise")
        );
        assert_eq!(selected_mode("always madvise never"), None);
        assert_eq!(parse_flag("2"), None);
    }

    #[test]
    fn a_dump_reads_as_the_files_it_printed() {
        let d = Dump::parse(
            "==> /proc/loadavg\n1.00 2.00 3.00 1/1 1\n==> /proc/meminfo\nMemTotal: 2048 kB\nSwapTotal: 0 kB\n",
        );
        assert_eq!(
            d.read("/proc/loadavg").as_deref(),
            Some("1.00 2.00 3.00 1/1 1\n")
        );
        assert!(d.read("/proc/meminfo").unwrap().contains("SwapTotal"));
        assert_eq!(d.read("/sys/devices/system/cpu/online"), None);
        let noise = read(&d);
        assert_eq!(noise.load_average, Some([1.0, 2.0, 3.0]));
        assert_eq!(noise.memory.unwrap().total_mib, Some(2));
        assert!(noise.cores.is_empty() && noise.boost.is_none());
    }

    /// The dump script asks for every file the reader reads: one list.
    #[test]
    fn the_dump_script_names_every_file_read() {
        for p in [
            ONLINE,
            BOOST,
            NO_TURBO,
            SMT_ACTIVE,
            SMT_CONTROL,
            LOADAVG,
            MEMINFO,
            THP,
            NMI_WATCHDOG,
            PERF_EVENT_PARANOID,
        ] {
            assert!(DUMP_SCRIPT.contains(p), "{p}");
        }
        assert!(DUMP_SCRIPT.contains("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor"));
    }
}
