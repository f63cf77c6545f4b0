//! The guest disk's speed: a lab's `vm: {disk_profile: ...}`, the limits
//! libvirt's `<iotune>` applies to it, and what `environment.json` records:
//! the report reads back the same type the lab asked for.

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// `unthrottled` (the default), `hdd`, `ssd`, or libvirt's iotune fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DiskProfile {
    #[default]
    Unthrottled,
    Hdd,
    Ssd,
    Custom(IoTune),
}

/// The names a lab may write, in the order they are listed to the user.
pub const NAMED: [&str; 3] = ["unthrottled", "hdd", "ssd"];

/// libvirt's `<iotune>` fields (bytes and operations per second). A field
/// left out is no limit. libvirt refuses a total beside a read or write
/// limit of the same kind; [`IoTune::problems`] says so before it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IoTune {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_bytes_sec: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_bytes_sec: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_bytes_sec: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_iops_sec: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_iops_sec: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_iops_sec: Option<u64>,
}

/// libvirt's bound for every iotune value (`QEMU_BLOCK_IOTUNE_MAX`, 1e15).
pub const IOTUNE_MAX: u64 = 1_000_000_000_000_000;

impl DiskProfile {
    /// The one place the named profiles' numbers live.
    pub fn iotune(self) -> IoTune {
        match self {
            DiskProfile::Unthrottled => IoTune::default(),
            // The issue's "about 150 MB/s, 200 IOPS": a 7200 rpm SATA disk's
            // sequential rate (WD Blue 1 TB WD10EZEX datasheet: 150 MB/s) and
            // its random operations (one seek + half a turn, ~5-8 ms: 125-200
            // per second; 200 is the generous end).
            DiskProfile::Hdd => IoTune {
                total_bytes_sec: Some(150_000_000),
                total_iops_sec: Some(200),
                ..IoTune::default()
            },
            // A SATA SSD: the 6 Gbit/s link caps it near 550 MB/s (Samsung
            // 870 EVO datasheet: 560 MB/s read, 530 MB/s write sequential;
            // random 4 KiB up to 98K read / 88K write IOPS at queue depth
            // 32, 13K / 36K at depth 1). 500 MB/s and 50,000 IOPS sit in
            // that order of magnitude.
            DiskProfile::Ssd => IoTune {
                total_bytes_sec: Some(500_000_000),
                total_iops_sec: Some(50_000),
                ..IoTune::default()
            },
            DiskProfile::Custom(t) => t,
        }
    }

    /// `unthrottled`, `hdd`, `ssd` or `custom`.
    pub fn name(self) -> &'static str {
        match self {
            DiskProfile::Unthrottled => "unthrottled",
            DiskProfile::Hdd => "hdd",
            DiskProfile::Ssd => "ssd",
            DiskProfile::Custom(_) => "custom",
        }
    }

    /// `hdd (total 150000000 B/s, 200 IOPS)`, `unthrottled`.
    pub fn describe(self) -> String {
        let limits = self.iotune();
        if limits.is_unlimited() {
            return self.name().to_string();
        }
        format!("{} ({})", self.name(), limits.describe())
    }
}

impl IoTune {
    /// Every field with its libvirt name, in libvirt's order.
    pub fn fields(&self) -> [(&'static str, Option<u64>); 6] {
        [
            ("total_bytes_sec", self.total_bytes_sec),
            ("read_bytes_sec", self.read_bytes_sec),
            ("write_bytes_sec", self.write_bytes_sec),
            ("total_iops_sec", self.total_iops_sec),
            ("read_iops_sec", self.read_iops_sec),
            ("write_iops_sec", self.write_iops_sec),
        ]
    }

    /// The fields that are set.
    pub fn limits(&self) -> impl Iterator<Item = (&'static str, u64)> {
        self.fields().into_iter().filter_map(|(k, v)| Some((k, v?)))
    }

    pub fn is_unlimited(&self) -> bool {
        self.limits().next().is_none()
    }

    /// `total_bytes_sec=150000000, total_iops_sec=200`.
    pub fn describe(&self) -> String {
        self.limits()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// What libvirt (or common sense) would refuse, each with its field:
    /// shared by `labrun check` and the VM crate's own check.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        for (field, value) in self.limits() {
            if value == 0 {
                out.push((
                    field,
                    "0 means no limit to libvirt: leave the field out, or give a rate above 0"
                        .to_string(),
                ));
            } else if value >= IOTUNE_MAX {
                out.push((
                    field,
                    format!("{value} is beyond libvirt's bound: use less than {IOTUNE_MAX}"),
                ));
            }
        }
        for (total, read, write, kind) in [
            (
                ("total_bytes_sec", self.total_bytes_sec),
                self.read_bytes_sec,
                self.write_bytes_sec,
                "bytes",
            ),
            (
                ("total_iops_sec", self.total_iops_sec),
                self.read_iops_sec,
                self.write_iops_sec,
                "iops",
            ),
        ] {
            if total.1.is_some() && (read.is_some() || write.is_some()) {
                out.push((
                    total.0,
                    format!(
                        "libvirt refuses a total limit beside a read or write limit of the same kind: \
                         give either `{}` or `read_{kind}_sec`/`write_{kind}_sec`",
                        total.0
                    ),
                ));
            }
        }
        out
    }
}

impl Serialize for DiskProfile {
    /// As a lab writes it: a name, or the map of a custom profile.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            DiskProfile::Custom(t) => t.serialize(s),
            named => s.serialize_str(named.name()),
        }
    }
}

impl<'de> Deserialize<'de> for DiskProfile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<DiskProfile, D::Error> {
        struct ProfileVisitor;
        impl<'de> Visitor<'de> for ProfileVisitor {
            type Value = DiskProfile;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(
                    f,
                    "a disk profile: {}, or a map of libvirt's iotune fields ({})",
                    NAMED.join(", "),
                    IoTune::default().fields().map(|(k, _)| k).join(", ")
                )
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<DiskProfile, E> {
                match v {
                    "unthrottled" => Ok(DiskProfile::Unthrottled),
                    "hdd" => Ok(DiskProfile::Hdd),
                    "ssd" => Ok(DiskProfile::Ssd),
                    other => Err(E::custom(format!(
                        "unknown disk profile `{other}`: use {}, or a map of libvirt's iotune fields \
                         such as `{{total_bytes_sec: 100000000, total_iops_sec: 500}}`",
                        NAMED.join(", ")
                    ))),
                }
            }

            fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<DiskProfile, M::Error> {
                IoTune::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(DiskProfile::Custom)
            }
        }
        d.deserialize_any(ProfileVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_maps_read_and_write_back() {
        for name in NAMED {
            let p: DiskProfile = serde_json::from_str(&format!("\"{name}\"")).unwrap();
            assert_eq!(p.name(), name);
            assert_eq!(serde_json::to_string(&p).unwrap(), format!("\"{name}\""));
        }
        let p: DiskProfile =
            serde_json::from_str(r#"{"read_bytes_sec": 1000000, "write_iops_sec": 10}"#).unwrap();
        assert_eq!(
            p,
            DiskProfile::Custom(IoTune {
                read_bytes_sec: Some(1_000_000),
                write_iops_sec: Some(10),
                ..IoTune::default()
            })
        );
        assert_eq!(
            serde_json::from_str::<DiskProfile>(&serde_json::to_string(&p).unwrap()).unwrap(),
            p
        );
        let e = serde_json::from_str::<DiskProfile>("\"nvme\"").unwrap_err();
        assert!(e.to_string().contains("unknown disk profile `nvme`"), "{e}");
        let e = serde_json::from_str::<DiskProfile>(r#"{"total_bytes": 1}"#).unwrap_err();
        assert!(e.to_string().contains("total_bytes"), "{e}");
    }

    #[test]
    fn named_profiles_are_the_issues_numbers_and_valid() {
        let hdd = DiskProfile::Hdd.iotune();
        assert_eq!(
            (hdd.total_bytes_sec, hdd.total_iops_sec),
            (Some(150_000_000), Some(200))
        );
        assert!(DiskProfile::Unthrottled.iotune().is_unlimited());
        for p in [DiskProfile::Hdd, DiskProfile::Ssd, DiskProfile::Unthrottled] {
            assert!(p.iotune().problems().is_empty(), "{p:?}");
        }
        assert_eq!(
            DiskProfile::Hdd.describe(),
            "hdd (total_bytes_sec=150000000, total_iops_sec=200)"
        );
        assert_eq!(DiskProfile::Unthrottled.describe(), "unthrottled");
    }

    #[test]
    fn refuses_zero_huge_and_a_total_beside_read_or_write() {
        let t = IoTune {
            total_bytes_sec: Some(1),
            write_bytes_sec: Some(1),
            read_iops_sec: Some(0),
            total_iops_sec: Some(IOTUNE_MAX),
            ..IoTune::default()
        };
        let fields: Vec<&str> = t.problems().iter().map(|(f, _)| *f).collect();
        assert_eq!(
            fields,
            [
                "total_iops_sec",
                "read_iops_sec",
                "total_bytes_sec",
                "total_iops_sec"
            ]
        );
        let ok = IoTune {
            read_bytes_sec: Some(1),
            write_bytes_sec: Some(2),
            total_iops_sec: Some(3),
            ..IoTune::default()
        };
        assert!(ok.problems().is_empty());
    }
}
