//! Where the guest's vCPUs run on the host: a lab's `vm: {cpu_pinning: ...}`
//! as asked, and [`Pinned`], what `up` gave the domain (libvirt's
//! `<cputune>`), which `environment.json` records.
//!
//! Host CPUs are numbered as the kernel numbers them
//! (`/sys/devices/system/cpu/cpuN`, `lscpu -e`): logical CPUs, so two SMT
//! siblings of one core are two numbers.

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// `auto`, a list of host CPUs (one per vCPU), or
/// `{vcpus: [2, 3], emulator: 1}` to place QEMU's own threads too.
/// Absent from the lab (None): nothing is pinned, as before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuPinning {
    /// labrun picks: each vCPU on a core of its own, no two on SMT siblings,
    /// the emulator threads on another core, as far as the host allows.
    Auto,
    /// The host CPUs the lab names.
    Cpus(CpuList),
}

/// The host CPU of each vCPU (vCPU 0 on the first), and where QEMU's
/// emulator threads go (None: they float).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuList {
    pub vcpus: Vec<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emulator: Option<u32>,
}

/// What `up` pinned, and why not more: recorded beside the acceleration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pinned {
    /// What the lab asked for.
    pub asked: CpuPinning,
    /// What the domain got; `vcpus` is empty when nothing could be pinned.
    pub cpus: CpuList,
    /// Why the pinning is less than asked (too few cores, SMT siblings
    /// shared, emulator threads floating): the warnings `check` and `up`
    /// printed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl CpuList {
    /// `vCPU 0 on CPU 3, vCPU 1 on CPU 5; emulator on CPU 1`.
    pub fn describe(&self) -> String {
        if self.vcpus.is_empty() {
            return "nothing pinned".into();
        }
        let vcpus = self
            .vcpus
            .iter()
            .enumerate()
            .map(|(v, c)| format!("vCPU {v} on CPU {c}"))
            .collect::<Vec<_>>()
            .join(", ");
        match self.emulator {
            Some(e) => format!("{vcpus}; emulator threads on CPU {e}"),
            None => format!("{vcpus}; emulator threads unpinned"),
        }
    }
}

impl Pinned {
    /// `auto: vCPU 0 on CPU 3, ...`, then each note.
    pub fn describe(&self) -> String {
        let mut out = format!("{}: {}", self.asked.describe(), self.cpus.describe());
        for n in &self.notes {
            out.push_str(&format!(" ({n})"));
        }
        out
    }
}

impl CpuPinning {
    /// `auto`, `[2, 3]` or `[2, 3] + emulator 1`: as the lab wrote it.
    pub fn describe(&self) -> String {
        match self {
            CpuPinning::Auto => "auto".into(),
            CpuPinning::Cpus(l) => {
                let list = l
                    .vcpus
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ");
                match l.emulator {
                    Some(e) => format!("[{list}] + emulator {e}"),
                    None => format!("[{list}]"),
                }
            }
        }
    }

    /// The rules that need no host: one CPU per vCPU, none twice, the
    /// emulator apart from them. Each problem as (field under
    /// `cpu_pinning`, message); the host's own CPUs are checked when `check`
    /// or `up` reads its topology.
    pub fn problems(&self, vcpus: u32) -> Vec<(&'static str, String)> {
        let CpuPinning::Cpus(l) = self else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if l.vcpus.len() != vcpus as usize {
            out.push((
                "vcpus",
                format!(
                    "names {} host CPU{} for {vcpus} vCPU{}: give exactly one per vCPU, or `auto`",
                    l.vcpus.len(),
                    plural(l.vcpus.len()),
                    plural(vcpus as usize)
                ),
            ));
        }
        let mut twice: Vec<u32> = l
            .vcpus
            .iter()
            .enumerate()
            .filter(|(i, c)| l.vcpus[..*i].contains(c))
            .map(|(_, c)| *c)
            .collect();
        twice.sort_unstable();
        twice.dedup();
        if !twice.is_empty() {
            out.push((
                "vcpus",
                format!(
                    "host CPU {} is named twice: two vCPUs on one CPU take turns, which is what pinning is meant to prevent",
                    join(&twice)
                ),
            ));
        }
        if let Some(e) = l.emulator
            && l.vcpus.contains(&e)
        {
            out.push((
                "emulator",
                format!(
                    "host CPU {e} also runs a vCPU: the emulator threads (disk and network I/O) would take its time; name another CPU"
                ),
            ));
        }
        out
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// `3, 7`.
pub fn join(cpus: &[u32]) -> String {
    cpus.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl Serialize for CpuPinning {
    /// As a lab writes it: `auto`, a list, or the map with an emulator CPU.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            CpuPinning::Auto => s.serialize_str("auto"),
            CpuPinning::Cpus(l) if l.emulator.is_none() => l.vcpus.serialize(s),
            CpuPinning::Cpus(l) => l.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for CpuPinning {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<CpuPinning, D::Error> {
        struct PinningVisitor;
        impl<'de> Visitor<'de> for PinningVisitor {
            type Value = CpuPinning;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "`auto`, a list of host CPUs (one per vCPU), or `{vcpus: [...], emulator: N}`",
                )
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<CpuPinning, E> {
                match v {
                    "auto" => Ok(CpuPinning::Auto),
                    other => Err(E::custom(format!(
                        "unknown cpu pinning `{other}`: use `auto`, a list of host CPUs such as `[2, 3]` (one per vCPU), or `{{vcpus: [2, 3], emulator: 1}}`; leave it out for none"
                    ))),
                }
            }

            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<CpuPinning, A::Error> {
                let vcpus = Vec::<u32>::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(CpuPinning::Cpus(CpuList {
                    vcpus,
                    emulator: None,
                }))
            }

            fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<CpuPinning, M::Error> {
                CpuList::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(CpuPinning::Cpus)
            }
        }
        d.deserialize_any(PinningVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> Result<CpuPinning, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[test]
    fn the_three_spellings_read_and_write_back() {
        for (json, want) in [
            (r#""auto""#, CpuPinning::Auto),
            (
                "[2,3]",
                CpuPinning::Cpus(CpuList {
                    vcpus: vec![2, 3],
                    emulator: None,
                }),
            ),
            (
                r#"{"vcpus":[2,3],"emulator":1}"#,
                CpuPinning::Cpus(CpuList {
                    vcpus: vec![2, 3],
                    emulator: Some(1),
                }),
            ),
        ] {
            let got = read(json).unwrap();
            assert_eq!(got, want);
            assert_eq!(serde_json::to_string(&got).unwrap(), json);
        }
        assert!(read(r#""none""#).unwrap_err().contains("use `auto`"));
        assert!(
            read(r#"{"vcpu":[1]}"#)
                .unwrap_err()
                .contains("unknown field `vcpu`")
        );
        assert!(read("[-1]").is_err());
    }

    #[test]
    fn a_list_needs_one_distinct_cpu_per_vcpu_and_the_emulator_apart() {
        assert!(CpuPinning::Auto.problems(4).is_empty());
        let list =
            |vcpus: Vec<u32>, emulator| CpuPinning::Cpus(CpuList { vcpus, emulator }).problems(4);
        assert!(list(vec![0, 1, 2, 3], Some(4)).is_empty());
        let p = list(vec![0, 1], None);
        assert_eq!(p.len(), 1);
        assert!(p[0].1.contains("names 2 host CPUs for 4 vCPUs"), "{p:?}");
        let p = list(vec![1, 1, 2, 2], Some(2));
        let msgs: Vec<&str> = p.iter().map(|(_, m)| m.as_str()).collect();
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(msgs[0].starts_with("host CPU 1, 2 is named twice"), "{p:?}");
        assert_eq!(p[1].0, "emulator");
    }

    #[test]
    fn what_was_pinned_reads_in_words() {
        let p = Pinned {
            asked: CpuPinning::Auto,
            cpus: CpuList {
                vcpus: vec![3, 5],
                emulator: None,
            },
            notes: vec!["the host has 2 cores".into()],
        };
        assert_eq!(
            p.describe(),
            "auto: vCPU 0 on CPU 3, vCPU 1 on CPU 5; emulator threads unpinned (the host has 2 cores)"
        );
        let back: Pinned = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back, p);
    }
}
