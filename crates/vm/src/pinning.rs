//! Which host CPU each vCPU gets (a lab's `cpu_pinning`), decided from the
//! host's topology as the kernel shows it under `/sys/devices/system/cpu`:
//! `cpuN/online`, `cpuN/topology/{package_id,core_id,thread_siblings_list}`.
//! The folder is a parameter so tests read fake trees.
//!
//! `auto` gives each vCPU a core of its own and QEMU's emulator threads
//! (disk and network I/O) another one, so no two vCPUs share an SMT sibling
//! pair. A host with fewer cores gets what it can hold, and the reason in
//! [`Pinned::notes`]: vCPUs on cores of their own with the emulator
//! floating, then vCPUs on SMT siblings, then nothing. A list is taken as
//! written, once every CPU it names is online here.

use crate::error::VmError;
use labrun_vocab::cpu_pinning::join;
use labrun_vocab::{CpuList, CpuPinning, Pinned};
use std::collections::BTreeMap;
use std::path::Path;

/// The kernel's CPU folder on a real host.
pub const SYS_CPU: &str = "/sys/devices/system/cpu";

/// The host's online CPUs grouped by physical core.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// Each core's online CPUs, lowest first; cores ordered by their
    /// lowest CPU.
    cores: Vec<Vec<u32>>,
}

impl Topology {
    /// This host's topology.
    pub fn here() -> Result<Topology, VmError> {
        Topology::read(Path::new(SYS_CPU))
    }

    /// Reads `root/cpuN/...`. A CPU without an `online` file is online (the
    /// kernel gives the boot CPU none); one without topology files is a
    /// core of its own, as nothing says it shares one.
    pub fn read(root: &Path) -> Result<Topology, VmError> {
        let entries = std::fs::read_dir(root).map_err(VmError::io(root))?;
        let mut by_core: BTreeMap<CoreKey, Vec<u32>> = BTreeMap::new();
        for e in entries {
            let e = e.map_err(VmError::io(root))?;
            let name = e.file_name();
            let Some(id) = name
                .to_str()
                .and_then(|n| n.strip_prefix("cpu"))
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let dir = e.path();
            let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
            if read("online").is_some_and(|s| s.trim() == "0") {
                continue;
            }
            let number = |f: &str| read(f).and_then(|s| s.trim().parse::<u32>().ok());
            let key = match (
                number("topology/package_id"),
                number("topology/core_id"),
                read("topology/thread_siblings_list"),
            ) {
                (Some(p), Some(c), _) => CoreKey::Ids(p, c),
                (_, _, Some(list)) => CoreKey::Siblings(list.trim().to_string()),
                _ => CoreKey::Alone(id),
            };
            by_core.entry(key).or_default().push(id);
        }
        let mut cores: Vec<Vec<u32>> = by_core.into_values().collect();
        for c in &mut cores {
            c.sort_unstable();
        }
        cores.sort();
        Ok(Topology { cores })
    }

    /// Parses `lscpu -p=CPU,CORE,SOCKET` (online CPUs only, its default):
    /// how a remote hypervisor's host tells its topology.
    pub fn from_lscpu(text: &str) -> Option<Topology> {
        let mut by_core: BTreeMap<(u32, u32), Vec<u32>> = BTreeMap::new();
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        {
            let f: Vec<Option<u32>> = line.split(',').map(|x| x.trim().parse().ok()).collect();
            match f.as_slice() {
                [Some(cpu), Some(core), socket] => by_core
                    .entry((socket.unwrap_or(0), *core))
                    .or_default()
                    .push(*cpu),
                // No core id (some VMs' lscpu): a core of its own.
                [Some(cpu), ..] => by_core.entry((u32::MAX, *cpu)).or_default().push(*cpu),
                _ => return None,
            }
        }
        (!by_core.is_empty()).then(|| Topology::from_cores(by_core.into_values().collect()))
    }

    /// A topology from its cores, each a list of CPUs (tests, and a remote
    /// host's topology read some other way).
    pub fn from_cores(mut cores: Vec<Vec<u32>>) -> Topology {
        cores.retain(|c| !c.is_empty());
        for c in &mut cores {
            c.sort_unstable();
        }
        cores.sort();
        Topology { cores }
    }

    pub fn cpus(&self) -> Vec<u32> {
        let mut all: Vec<u32> = self.cores.iter().flatten().copied().collect();
        all.sort_unstable();
        all
    }

    fn core_of(&self, cpu: u32) -> Option<usize> {
        self.cores.iter().position(|c| c.contains(&cpu))
    }

    /// `8 cores, 16 CPUs`.
    pub fn describe(&self) -> String {
        let cpus = self.cpus().len();
        format!(
            "{} core{}, {cpus} online CPU{}",
            self.cores.len(),
            if self.cores.len() == 1 { "" } else { "s" },
            if cpus == 1 { "" } else { "s" }
        )
    }
}

/// The pinning `up` gives the lab's domain: the host's topology read here,
/// or over `shell` on a remote hypervisor's host, only when the lab asks.
pub async fn for_up(
    cfg: &crate::config::VmConfig,
    shell: Option<&crate::remote::HostShell>,
) -> Result<Option<Pinned>, VmError> {
    if cfg.cpu_pinning.is_none() {
        return Ok(None);
    }
    let topo = match shell {
        None => Topology::here()?,
        Some(sh) => sh.cpu_topology().await?,
    };
    choose(cfg.cpu_pinning.as_ref(), cfg.vcpus, &topo)
}

/// What makes two CPUs one core.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum CoreKey {
    Ids(u32, u32),
    Siblings(String),
    Alone(u32),
}

/// The pinning a lab's VM gets on a host of `topo`: None when the lab asks
/// for none; an error (the lab's mistake, naming the CPUs) when its list
/// names CPUs this host does not have online.
pub fn choose(
    asked: Option<&CpuPinning>,
    vcpus: u32,
    topo: &Topology,
) -> Result<Option<Pinned>, VmError> {
    let Some(asked) = asked else {
        return Ok(None);
    };
    let (cpus, notes) = match asked {
        CpuPinning::Auto => auto(vcpus as usize, topo),
        CpuPinning::Cpus(list) => (list.clone(), listed(list, topo)?),
    };
    Ok(Some(Pinned {
        asked: asked.clone(),
        cpus,
        notes,
    }))
}

fn auto(n: usize, topo: &Topology) -> (CpuList, Vec<String>) {
    let cores = &topo.cores;
    let threads = topo.cpus().len();
    let have = topo.describe();
    // The highest cores for the guest: the kernel's housekeeping and
    // interrupts favour CPU 0.
    if cores.len() > n {
        let first = cores.len() - n;
        let list = CpuList {
            vcpus: cores[first..].iter().map(|c| c[0]).collect(),
            emulator: Some(cores[first - 1][0]),
        };
        return (list, Vec::new());
    }
    if cores.len() == n {
        let list = CpuList {
            vcpus: cores.iter().map(|c| c[0]).collect(),
            emulator: None,
        };
        let note = format!(
            "the emulator threads are not pinned: the host has {have}, one core per vCPU and none to spare"
        );
        return (list, vec![note]);
    }
    if threads >= n {
        // First threads of every core, then second threads: as few vCPUs
        // on shared cores as the host allows.
        let depth = cores.iter().map(Vec::len).max().unwrap_or(0);
        let order: Vec<u32> = (0..depth)
            .flat_map(|t| cores.iter().filter_map(move |c| c.get(t).copied()))
            .take(n)
            .collect();
        let shared = (2 * (n - cores.len())).min(n);
        let note = format!(
            "{shared} of {n} vCPUs share a core with another vCPU (SMT siblings): the host has {have}; the emulator threads are not pinned"
        );
        let list = CpuList {
            vcpus: order,
            emulator: None,
        };
        return (list, vec![note]);
    }
    let note = format!(
        "cannot pin {n} vCPUs: the host has {have}, fewer than one CPU per vCPU; the vCPUs float over the host's CPUs (give the VM at most {threads} vCPUs to pin it)"
    );
    (CpuList::default(), vec![note])
}

/// A list as written: every CPU must be online here. Sharing a core is
/// allowed (the host may have no better) and said.
fn listed(list: &CpuList, topo: &Topology) -> Result<Vec<String>, VmError> {
    let online = topo.cpus();
    let mut missing: Vec<u32> = list
        .vcpus
        .iter()
        .chain(list.emulator.iter())
        .filter(|c| !online.contains(c))
        .copied()
        .collect();
    missing.sort_unstable();
    missing.dedup();
    if !missing.is_empty() {
        return Err(VmError::Config {
            field: "cpu_pinning",
            reason: format!(
                "names host CPU{} {} that this host does not have online (its CPUs: {}; {})",
                if missing.len() == 1 { "" } else { "s" },
                join(&missing),
                join(&online),
                topo.describe()
            ),
        });
    }
    let mut notes = Vec::new();
    let mut by_core: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
    for &c in &list.vcpus {
        if let Some(core) = topo.core_of(c) {
            by_core.entry(core).or_default().push(c);
        }
    }
    for cpus in by_core.values().filter(|c| c.len() > 1) {
        notes.push(format!(
            "host CPUs {} run vCPUs and are SMT siblings of one core",
            join(cpus)
        ));
    }
    match list.emulator {
        Some(e) => {
            let core = topo.core_of(e);
            if list.vcpus.iter().any(|&c| topo.core_of(c) == core) {
                notes.push(format!(
                    "the emulator's CPU {e} is an SMT sibling of a vCPU's"
                ));
            }
        }
        None => notes.push("the emulator threads are not pinned".into()),
    }
    Ok(notes)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A fake `/sys/devices/system/cpu` of `cores` cores with `smt` threads
    /// each, numbered as Linux numbers them on x86 (the siblings of core
    /// `c` are `c`, `c + cores`, ...); `offline` CPUs are marked so.
    pub(crate) fn fake_sys(cores: u32, smt: u32, offline: &[u32]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for t in 0..smt {
            for c in 0..cores {
                let id = c + t * cores;
                let cpu = dir.path().join(format!("cpu{id}"));
                std::fs::create_dir_all(cpu.join("topology")).unwrap();
                if id != 0 {
                    let on = if offline.contains(&id) { "0" } else { "1" };
                    std::fs::write(cpu.join("online"), format!("{on}\n")).unwrap();
                }
                if offline.contains(&id) {
                    continue; // the kernel drops an offline CPU's topology
                }
                let siblings = (0..smt)
                    .map(|s| (c + s * cores).to_string())
                    .collect::<Vec<_>>()
                    .join(",");
                for (f, v) in [
                    ("package_id", "0".to_string()),
                    ("core_id", c.to_string()),
                    ("thread_siblings_list", siblings),
                ] {
                    std::fs::write(cpu.join("topology").join(f), format!("{v}\n")).unwrap();
                }
            }
        }
        // Files beside the CPUs that are not CPUs.
        std::fs::create_dir_all(dir.path().join("cpufreq")).unwrap();
        std::fs::write(dir.path().join("online"), "0-15\n").unwrap();
        dir
    }

    #[test]
    fn reads_cores_and_siblings_and_skips_offline_cpus() {
        let sys = fake_sys(8, 2, &[15]);
        let t = Topology::read(sys.path()).unwrap();
        assert_eq!(t.cores.len(), 8);
        assert_eq!(t.cores[0], vec![0, 8]);
        assert_eq!(t.cores[7], vec![7]);
        assert_eq!(t.describe(), "8 cores, 15 online CPUs");
        // Without topology files each CPU is a core of its own.
        let bare = tempfile::tempdir().unwrap();
        for i in 0..3 {
            std::fs::create_dir(bare.path().join(format!("cpu{i}"))).unwrap();
        }
        let t = Topology::read(bare.path()).unwrap();
        assert_eq!(t.cores, vec![vec![0], vec![1], vec![2]]);
        assert!(Topology::read(&bare.path().join("none")).is_err());
    }

    fn pinned(asked: CpuPinning, vcpus: u32, topo: &Topology) -> Pinned {
        choose(Some(&asked), vcpus, topo).unwrap().unwrap()
    }

    #[test]
    fn lscpu_listing_reads_as_the_same_cores() {
        let text = "# The following is the parsable format\n# CPU,Core,Socket\n0,0,0\n1,1,0\n2,0,0\n3,1,0\n";
        let t = Topology::from_lscpu(text).unwrap();
        assert_eq!(t, Topology::from_cores(vec![vec![0, 2], vec![1, 3]]));
        assert_eq!(
            Topology::from_lscpu("0,,\n1,,\n").unwrap().cores,
            vec![vec![0], vec![1]]
        );
        assert!(Topology::from_lscpu("# nothing\n").is_none());
        assert!(Topology::from_lscpu("cpu zero\n").is_none());
    }

    #[test]
    fn auto_on_enough_cores_gives_each_vcpu_a_core_and_the_emulator_another() {
        let sys = fake_sys(8, 2, &[]);
        let topo = Topology::read(sys.path()).unwrap();
        let p = pinned(CpuPinning::Auto, 4, &topo);
        assert_eq!(p.cpus.vcpus, vec![4, 5, 6, 7]);
        assert_eq!(p.cpus.emulator, Some(3));
        assert!(p.notes.is_empty(), "{:?}", p.notes);
        // No two vCPUs, nor the emulator, on one core's siblings.
        let mut cores: Vec<_> = p
            .cpus
            .vcpus
            .iter()
            .chain(p.cpus.emulator.iter())
            .map(|&c| topo.core_of(c))
            .collect();
        cores.dedup();
        assert_eq!(cores.len(), 5);
        assert_eq!(choose(None, 4, &topo).unwrap(), None);
    }

    #[test]
    fn auto_on_too_few_cores_pins_what_it_can_and_says_why() {
        // As many cores as vCPUs: the emulator floats.
        let topo = Topology::from_cores(vec![vec![0, 2], vec![1, 3]]);
        let p = pinned(CpuPinning::Auto, 2, &topo);
        assert_eq!((p.cpus.vcpus.clone(), p.cpus.emulator), (vec![0, 1], None));
        assert!(p.notes[0].contains("none to spare"), "{:?}", p.notes);
        // Fewer cores than vCPUs, enough threads: siblings shared.
        let p = pinned(CpuPinning::Auto, 3, &topo);
        assert_eq!(p.cpus.vcpus, vec![0, 1, 2]);
        assert!(
            p.notes[0].starts_with("2 of 3 vCPUs share a core"),
            "{:?}",
            p.notes
        );
        // This host: 2 CPUs, a lab of 4 vCPUs.
        let topo = Topology::from_cores(vec![vec![0], vec![1]]);
        let p = pinned(CpuPinning::Auto, 4, &topo);
        assert!(p.cpus.vcpus.is_empty() && p.cpus.emulator.is_none());
        assert_eq!(
            p.notes,
            vec![
                "cannot pin 4 vCPUs: the host has 2 cores, 2 online CPUs, fewer than one CPU per vCPU; the vCPUs float over the host's CPUs (give the VM at most 2 vCPUs to pin it)"
            ]
        );
    }

    #[test]
    fn a_list_is_taken_as_written_when_the_host_has_its_cpus() {
        let sys = fake_sys(8, 2, &[15]);
        let topo = Topology::read(sys.path()).unwrap();
        let list = |vcpus: Vec<u32>, emulator| CpuPinning::Cpus(CpuList { vcpus, emulator });
        let p = pinned(list(vec![2, 3], Some(1)), 2, &topo);
        assert_eq!(
            (p.cpus.vcpus.clone(), p.cpus.emulator),
            (vec![2, 3], Some(1))
        );
        assert!(p.notes.is_empty(), "{:?}", p.notes);
        let p = pinned(list(vec![2, 10], Some(3)), 2, &topo);
        assert_eq!(
            p.notes,
            vec!["host CPUs 2, 10 run vCPUs and are SMT siblings of one core"]
        );
        let e = choose(Some(&list(vec![2, 15, 16], Some(40))), 3, &topo).unwrap_err();
        assert_eq!(
            e.to_string(),
            VmError::Config {
                field: "cpu_pinning",
                reason: "names host CPUs 15, 16, 40 that this host does not have online (its CPUs: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14; 8 cores, 15 online CPUs)".into()
            }
            .to_string()
        );
    }
}
