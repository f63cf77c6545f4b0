//! How the guest CPU runs: what a lab asks for ([`Accel`]) and what the
//! domain got ([`Acceleration`]), which `environment.json` records and the
//! report reads back.

use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;

/// What a lab asks for (`vm: {accel: ...}`); one type, one default: `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Accel {
    /// KVM where it boots a stock kernel, else TCG (with a loud warning).
    #[default]
    Auto,
    Kvm,
    Tcg,
}

impl Accel {
    pub fn as_str(self) -> &'static str {
        match self {
            Accel::Auto => "auto",
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }
}

/// What the domain runs with, from the host's probe to the report:
/// `kvm` (hardware) or `tcg` (QEMU's software emulation). Written in
/// lowercase; read in any case (a hand-made `environment.json` may say `TCG`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Acceleration {
    Kvm,
    Tcg,
}

impl Acceleration {
    pub fn as_str(self) -> &'static str {
        match self {
            Acceleration::Kvm => "kvm",
            Acceleration::Tcg => "tcg",
        }
    }

    /// True under software emulation (TCG): every time is then several times
    /// longer than under hardware virtualization, and not comparable with it.
    pub fn is_emulated(self) -> bool {
        self == Acceleration::Tcg
    }
}

impl fmt::Display for Acceleration {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Acceleration {
    type Err = String;

    /// `kvm` or `tcg`, in any case, spaces around ignored.
    fn from_str(s: &str) -> Result<Acceleration, String> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("kvm") {
            Ok(Acceleration::Kvm)
        } else if s.eq_ignore_ascii_case("tcg") {
            Ok(Acceleration::Tcg)
        } else {
            Err(format!("unknown acceleration `{s}`: use kvm or tcg"))
        }
    }
}

impl<'de> Deserialize<'de> for Acceleration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Acceleration, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// For a record every field of which is optional, so that a file from a newer
/// labrun (or made by hand) still reads: an acceleration this labrun does not
/// know is read as unknown (None) instead of failing the whole file.
/// `#[serde(default, deserialize_with = "labrun_vocab::accel::known_or_none")]`.
pub fn known_or_none<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Acceleration>, D::Error> {
    let s = Option::<String>::deserialize(d)?;
    Ok(s.and_then(|s| s.parse().ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_lowercase_read_in_any_case() {
        for (a, text) in [
            (Acceleration::Kvm, "\"kvm\""),
            (Acceleration::Tcg, "\"tcg\""),
        ] {
            assert_eq!(serde_json::to_string(&a).unwrap(), text);
            assert_eq!(serde_json::from_str::<Acceleration>(text).unwrap(), a);
        }
        assert_eq!(" TCG ".parse::<Acceleration>(), Ok(Acceleration::Tcg));
        let e = serde_json::from_str::<Acceleration>("\"hvf\"").unwrap_err();
        assert!(e.to_string().contains("unknown acceleration `hvf`"), "{e}");
        assert!(Acceleration::Tcg.is_emulated() && !Acceleration::Kvm.is_emulated());
        assert_eq!(Acceleration::Tcg.to_string(), "tcg");
    }

    #[test]
    fn an_unknown_acceleration_reads_as_none() {
        #[derive(Deserialize)]
        struct Env {
            #[serde(default, deserialize_with = "known_or_none")]
            acceleration: Option<Acceleration>,
        }
        let read = |json: &str| serde_json::from_str::<Env>(json).unwrap().acceleration;
        assert_eq!(read(r#"{"acceleration":"TCG"}"#), Some(Acceleration::Tcg));
        assert_eq!(read(r#"{"acceleration":"hvf"}"#), None);
        assert_eq!(read(r#"{"acceleration":null}"#), None);
        assert_eq!(read("{}"), None);
        // A wrong type is still an error: that file is not an environment.
        assert!(serde_json::from_str::<Env>(r#"{"acceleration":1}"#).is_err());
    }

    #[test]
    fn the_lab_asks_in_lowercase_with_auto_by_default() {
        assert_eq!(Accel::default(), Accel::Auto);
        for a in [Accel::Auto, Accel::Kvm, Accel::Tcg] {
            let text = format!("\"{}\"", a.as_str());
            assert_eq!(serde_json::to_string(&a).unwrap(), text);
            assert_eq!(serde_json::from_str::<Accel>(&text).unwrap(), a);
        }
        assert!(serde_json::from_str::<Accel>("\"KVM\"").is_err());
    }
}
