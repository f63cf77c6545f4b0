//! Sizes (`3GiB`, `536MB`, `4096`) and durations (`30s`, `5m`, `2h`, `1h30m`)
//! as lab files write them.
//!
//! Hand-written rather than taken from `bytesize`/`humantime`: both accept
//! spellings that are ambiguous in a benchmark file (`3gb`, `1 GB` meaning
//! GiB, `2 hours 3 minutes`), and their errors do not say which units exist.
//! Here a unit is matched exactly, and a wrong one is answered with the list
//! and the nearest spelling.

use serde::de::{self, Deserialize, Deserializer, Visitor};
use serde::{Serialize, Serializer};
use std::fmt;

/// Size units: decimal (10^3) and binary (2^10) multiples, exact case.
const SIZE_UNITS: &[(&str, u64)] = &[
    ("B", 1),
    ("kB", 1_000),
    ("KB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
    ("TB", 1_000_000_000_000),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("TiB", 1 << 40),
];

const DURATION_UNITS: &[(&str, u64)] = &[("s", 1), ("m", 60), ("h", 3600), ("d", 86_400)];

/// A number of bytes, written with a unit in lab files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(pub u64);

impl ByteSize {
    pub const fn gib(n: u64) -> ByteSize {
        ByteSize(n << 30)
    }

    pub fn bytes(self) -> u64 {
        self.0
    }

    /// `3GiB`, `512MiB`, `1.5GiB`, or plain bytes when no binary unit is exact
    /// (`labrun_vocab::human_bytes`: the VM limits say sizes the same way).
    pub fn human(self) -> String {
        labrun_vocab::human_bytes(self.0)
    }
}

impl std::str::FromStr for ByteSize {
    type Err = String;

    fn from_str(s: &str) -> Result<ByteSize, String> {
        let (number, unit) = split_number(s.trim());
        if number.is_empty() {
            return Err(format!(
                "`{s}` is not a size: expected a number and a unit, e.g. `3GiB`, `536MB`, `4096`"
            ));
        }
        let unit = unit.trim_start();
        let mult = if unit.is_empty() {
            1
        } else {
            lookup(unit, SIZE_UNITS).map_err(|hint| {
                format!("`{s}` has an unknown size unit `{unit}`: expected one of {hint}")
            })?
        };
        scale(number, mult)
            .map(ByteSize)
            .ok_or_else(|| format!("`{s}` is not a whole number of bytes below 2^64"))
    }
}

/// A span of time, written with units in lab files; whole seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub u64);

impl Duration {
    pub const fn secs(n: u64) -> Duration {
        Duration(n)
    }

    pub fn as_secs(self) -> u64 {
        self.0
    }

    /// `2h`, `5m`, `1h30m`, `45s`.
    pub fn human(self) -> String {
        if self.0 == 0 {
            return "0s".into();
        }
        let mut out = String::new();
        let mut rest = self.0;
        for (unit, mult) in [("d", 86_400), ("h", 3600), ("m", 60), ("s", 1)] {
            if rest >= mult {
                out.push_str(&format!("{}{unit}", rest / mult));
                rest %= mult;
            }
        }
        out
    }
}

impl std::str::FromStr for Duration {
    type Err = String;

    /// One or more `<integer><unit>` pairs: `300s`, `5m`, `2h`, `1h30m`.
    fn from_str(s: &str) -> Result<Duration, String> {
        let text = s.trim();
        if text.is_empty() {
            return Err("an empty duration: expected e.g. `30s`, `5m`, `2h`".into());
        }
        let mut rest = text;
        let mut total: u64 = 0;
        while !rest.is_empty() {
            let (number, after) = split_number(rest);
            if number.is_empty() {
                return Err(format!(
                    "`{s}` is not a duration: expected an integer and a unit, e.g. `30s`, `5m`, `2h`, `1h30m`"
                ));
            }
            let unit_len = after
                .find(|c: char| c.is_ascii_digit())
                .unwrap_or(after.len());
            let unit = &after[..unit_len];
            if unit.is_empty() {
                return Err(format!(
                    "`{s}` has no unit: write `{number}s`, `{number}m` or `{number}h`"
                ));
            }
            let mult = lookup(unit.trim(), DURATION_UNITS).map_err(|hint| {
                format!("`{s}` has an unknown time unit `{unit}`: expected one of {hint}")
            })?;
            let n: u64 = number
                .parse()
                .map_err(|_| format!("`{s}`: `{number}` is not a whole number"))?;
            total = n
                .checked_mul(mult)
                .and_then(|v| total.checked_add(v))
                .ok_or_else(|| format!("`{s}` is too long"))?;
            rest = &after[unit_len..];
        }
        Ok(Duration(total))
    }
}

/// Splits `"1.5GiB"` into `("1.5", "GiB")`.
fn split_number(s: &str) -> (&str, &str) {
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    s.split_at(end)
}

/// The multiplier of `unit`, or the list of units with the nearest one named.
fn lookup(unit: &str, table: &[(&str, u64)]) -> Result<u64, String> {
    if let Some((_, m)) = table.iter().find(|(u, _)| *u == unit) {
        return Ok(*m);
    }
    let names: Vec<&str> = table.iter().map(|(u, _)| *u).collect();
    let mut hint = names
        .iter()
        .map(|u| format!("`{u}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if let Some(near) = crate::suggest::nearest(unit, names.iter().copied()) {
        hint.push_str(&format!(" (did you mean `{near}`?)"));
    }
    Err(hint)
}

/// `number * mult` exactly, for `number` an integer or a decimal like `1.5`.
fn scale(number: &str, mult: u64) -> Option<u64> {
    match number.split_once('.') {
        None => number.parse::<u64>().ok()?.checked_mul(mult),
        Some((int, frac)) => {
            if frac.is_empty() || frac.contains('.') || frac.len() > 12 {
                return None;
            }
            let int: u64 = if int.is_empty() { 0 } else { int.parse().ok()? };
            let frac_val: u128 = frac.parse().ok()?;
            let denom = 10u128.pow(frac.len() as u32);
            let frac_bytes = frac_val * mult as u128;
            if !frac_bytes.is_multiple_of(denom) {
                return None; // not a whole number of bytes
            }
            int.checked_mul(mult)?
                .checked_add(u64::try_from(frac_bytes / denom).ok()?)
        }
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ByteSize, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ByteSize;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a size such as `3GiB`, `536MB` or a number of bytes")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ByteSize, E> {
                Ok(ByteSize(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ByteSize, E> {
                u64::try_from(v)
                    .map(ByteSize)
                    .map_err(|_| E::custom(format!("a size cannot be negative ({v})")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ByteSize, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Duration;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration such as `30s`, `5m` or `2h`")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Duration, E> {
                Err(E::custom(format!(
                    "a duration needs a unit: write `{v}s`, `{v}m` or `{v}h`"
                )))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Duration, E> {
                Err(E::custom(format!(
                    "a duration needs a unit and cannot be negative ({v})"
                )))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Duration, E> {
                Err(E::custom(format!(
                    "a duration is whole seconds with a unit, not `{v}`: e.g. `90s`"
                )))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Duration, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.human())
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.human())
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.human())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_exactly() {
        let cases = [
            ("3GiB", 3u64 << 30),
            ("40GiB", 40 << 30),
            ("536MB", 536_000_000),
            ("512MiB", 512 << 20),
            ("4096", 4096),
            ("1.5GiB", 3 << 29),
            ("2 KiB", 2048),
            ("7B", 7),
        ];
        for (text, want) in cases {
            assert_eq!(text.parse::<ByteSize>(), Ok(ByteSize(want)), "{text}");
        }
    }

    #[test]
    fn size_errors_name_the_units() {
        let e = "3Gib".parse::<ByteSize>().unwrap_err();
        assert!(e.contains("unknown size unit `Gib`"), "{e}");
        assert!(e.contains("did you mean `GiB`?"), "{e}");
        let e = "GiB".parse::<ByteSize>().unwrap_err();
        assert!(e.contains("expected a number and a unit"), "{e}");
        let e = "0.3B".parse::<ByteSize>().unwrap_err();
        assert!(e.contains("whole number of bytes"), "{e}");
        assert!("99999999999TiB".parse::<ByteSize>().is_err());
    }

    #[test]
    fn durations_parse_and_print() {
        for (text, want) in [("30s", 30), ("5m", 300), ("2h", 7200), ("1h30m", 5400)] {
            let d: Duration = text.parse().unwrap();
            assert_eq!(d, Duration(want));
            assert_eq!(d.human(), text);
        }
        let e = "300".parse::<Duration>().unwrap_err();
        assert!(e.contains("no unit"), "{e}");
        let e = "5min".parse::<Duration>().unwrap_err();
        assert!(e.contains("unknown time unit `min`"), "{e}");
    }

    #[test]
    fn human_sizes() {
        assert_eq!(ByteSize::gib(3).human(), "3GiB");
        assert_eq!(ByteSize(536_000_000).human(), "511.17MiB");
        assert_eq!(ByteSize(100).human(), "100B");
    }
}
