//! The noise sources read from fake `/sys` and `/proc` trees
//! (tests/fixtures/host-noise/<case>), and what each case is told to do.

use labrun_host::{Boost, BoostControl, Domain, HostNoise, OtherDomains, Root, Source, read};
use std::path::Path;

fn case(name: &str) -> HostNoise {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/host-noise")
        .join(name);
    assert!(root.is_dir(), "{}", root.display());
    read(&Root(root))
}

fn sources(n: &HostNoise) -> Vec<Source> {
    n.findings().iter().map(|f| f.source).collect()
}

fn fix(n: &HostNoise, s: Source) -> String {
    n.findings()
        .into_iter()
        .find(|f| f.source == s)
        .unwrap_or_else(|| panic!("no {s:?} finding in {:?}", n.findings()))
        .fix
}

#[test]
fn a_busy_laptop_is_told_every_source_with_its_fix() {
    let n = case("busy-laptop");
    assert_eq!(n.cores, vec![0, 1, 2, 3]);
    assert!(
        n.governors.values().all(|g| g == "powersave"),
        "{:?}",
        n.governors
    );
    assert_eq!(
        n.boost,
        Some(Boost {
            on: true,
            control: BoostControl::IntelPstateNoTurbo
        })
    );
    let smt = n.smt.clone().unwrap();
    assert_eq!(
        (smt.active, smt.control.as_deref()),
        (Some(true), Some("on"))
    );
    assert_eq!(n.load_average, Some([2.51, 1.80, 1.20]));
    let m = n.memory.clone().unwrap();
    assert_eq!(m.swap_used_mib, Some(512));
    assert_eq!(m.available_mib, Some(1024));
    assert_eq!(n.transparent_hugepages.as_deref(), Some("always"));
    assert_eq!(n.nmi_watchdog, Some(true));
    assert_eq!(n.perf_event_paranoid, Some(2));

    assert_eq!(
        sources(&n),
        vec![
            Source::Governor,
            Source::Boost,
            Source::Smt,
            Source::Load,
            Source::Memory,
            Source::Swap,
            Source::TransparentHugepages,
            Source::NmiWatchdog,
        ]
    );
    assert_eq!(
        fix(&n, Source::Governor),
        "cpupower frequency-set -g performance"
    );
    assert_eq!(
        fix(&n, Source::Boost),
        "echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo"
    );
    assert_eq!(
        fix(&n, Source::Smt),
        "echo off > /sys/devices/system/cpu/smt/control"
    );
    assert_eq!(fix(&n, Source::Swap), "swapoff -a");
    assert_eq!(
        fix(&n, Source::TransparentHugepages),
        "echo never > /sys/kernel/mm/transparent_hugepage/enabled"
    );
    let governor = &n.findings()[0].found;
    assert!(governor.contains("`powersave` on cores 0-3"), "{governor}");
}

#[test]
fn a_tuned_server_has_nothing_to_fix() {
    let n = case("tuned-server");
    assert!(n.governors.values().all(|g| g == "performance"));
    assert_eq!(
        n.boost,
        Some(Boost {
            on: false,
            control: BoostControl::CpufreqBoost
        })
    );
    assert_eq!(n.smt.as_ref().and_then(|s| s.active), Some(false));
    assert_eq!(n.memory.as_ref().and_then(|m| m.swap_used_mib), Some(0));
    assert_eq!(n.transparent_hugepages.as_deref(), Some("never"));
    assert_eq!(n.nmi_watchdog, Some(false));
    assert_eq!(n.perf_event_paranoid, Some(-1));
    assert!(n.findings().is_empty(), "{:?}", n.findings());
}

#[test]
fn boost_through_cpufreq_is_turned_off_there() {
    let n = case("amd-boost");
    assert_eq!(
        n.boost,
        Some(Boost {
            on: true,
            control: BoostControl::CpufreqBoost
        })
    );
    assert_eq!(
        fix(&n, Source::Boost),
        "echo 0 > /sys/devices/system/cpu/cpufreq/boost"
    );
    // schedutil ramps too: anything but `performance` is named.
    assert!(fix(&n, Source::Governor).contains("-g performance"));
}

#[test]
fn missing_files_are_unknown_never_a_guess() {
    let n = case("no-cpufreq");
    assert_eq!(n.cores, vec![0, 1]);
    assert!(n.governors.is_empty());
    assert_eq!(n.cores_without_governor(), vec![0, 1]);
    assert_eq!((n.boost, n.smt.clone()), (None, None));
    assert_eq!(n.transparent_hugepages, None);
    assert_eq!((n.nmi_watchdog, n.perf_event_paranoid), (None, None));
    let m = n.memory.clone().unwrap();
    // meminfo without swap lines: swap unknown, not zero.
    assert_eq!((m.swap_total_mib, m.swap_used_mib), (None, None));
    assert!(n.findings().is_empty(), "{:?}", n.findings());
    let facts = n.facts();
    let said = |k: &str| facts.iter().find(|(s, _)| *s == k).unwrap().1.clone();
    assert_eq!(said("cpufreq governor"), "unknown on cores 0-1");
    assert_eq!(said("boost"), "unknown");
    assert_eq!(said("SMT"), "unknown");
    assert!(said("memory").contains("swap unknown used of unknown"));

    // An empty root: every fact unknown.
    let empty = tempfile::tempdir().unwrap();
    let n = read(&Root(empty.path().to_path_buf()));
    assert_eq!(n, HostNoise::default());
    assert!(n.facts()[0].1.starts_with("unknown"));
}

#[test]
fn other_domains_are_named_with_the_command_that_stops_them() {
    let n = HostNoise {
        other_domains: Some(OtherDomains {
            uri: "qemu:///system".into(),
            domains: vec![Domain {
                name: "ci-runner".into(),
                vcpus: 2,
            }],
        }),
        ..HostNoise::default()
    };
    let f = n.findings();
    assert_eq!(f.len(), 1);
    assert!(f[0].found.contains("`ci-runner`") && f[0].found.contains("2 vCPUs"));
    assert_eq!(f[0].fix, "virsh -c qemu:///system shutdown ci-runner");
}

/// The record survives environment.json: written and read back equal.
#[test]
fn the_record_round_trips_through_json() {
    let n = case("busy-laptop");
    let json = serde_json::to_string(&n).unwrap();
    let back: HostNoise = serde_json::from_str(&json).unwrap();
    assert_eq!(back, n);
}

/// A remote host answers the dump script; read through it, this host gives
/// what its own files give (the facts that do not move between two reads).
#[test]
fn the_dump_script_reads_this_host_as_its_files_do() {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(labrun_host::DUMP_SCRIPT)
        .output()
        .unwrap();
    assert!(out.status.success());
    let dumped = read(&labrun_host::Dump::parse(&String::from_utf8_lossy(
        &out.stdout,
    )));
    let direct = read(&Root::host());
    assert!(
        !direct.cores.is_empty(),
        "this host has /sys/devices/system/cpu/online"
    );
    assert_eq!(dumped.cores, direct.cores);
    assert_eq!(dumped.governors, direct.governors);
    assert_eq!(dumped.boost, direct.boost);
    assert_eq!(dumped.smt, direct.smt);
    assert_eq!(dumped.transparent_hugepages, direct.transparent_hugepages);
    assert_eq!(dumped.nmi_watchdog, direct.nmi_watchdog);
    assert_eq!(dumped.perf_event_paranoid, direct.perf_event_paranoid);
    assert_eq!(
        dumped.memory.map(|m| m.total_mib),
        direct.memory.map(|m| m.total_mib)
    );
    assert!(dumped.load_average.is_some());
}
