//! `storage:`: where the tools' repositories live, and the network to them.
//! The published test kept them on the machine's own disk (`local`); its
//! readers ask how the tools do against a server far away. A lab (or a
//! variant) names the kind of server and the network's round trip and
//! bandwidth; each tool says how it names a repository on that kind of
//! server (`repository:` in the tool); `servers:` pins the binaries labrun
//! installs for a server (restic's rest-server). The agent builds the network
//! and runs the server inside the machine under test
//! (`labrun_evidence::storage`).
//!
//! ```yaml
//! storage:
//!   server: sftp                          # local (default), sftp, rest, s3
//!   network: {latency: 25ms, bandwidth: 100Mbit}
//! tools:
//!   - name: restic
//!     repository:
//!       sftp: {repo: "sftp:{repo_user}@{repo_host}:{repo_path}"}
//! ```

use crate::variant::ExtraArgs;
use labrun_artifact::ArtifactSpec;
use labrun_evidence::{Network, Server, ToolCommands};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The lab's `storage:` block.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StorageSpec {
    pub server: Server,
    /// Between the tools and the server; absent: the virtual link as it is.
    pub network: Option<NetworkSpec>,
}

/// `{latency: 25ms, bandwidth: 100Mbit}`: the round trip added (half each
/// way) and the bandwidth each way.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSpec {
    pub latency: Latency,
    #[serde(default)]
    pub bandwidth: Option<Rate>,
}

impl NetworkSpec {
    pub fn to_network(self) -> Network {
        Network {
            rtt_ms: self.latency.0,
            rate_bits_per_sec: self.bandwidth.map(|r| r.0),
        }
    }

    /// As a lab would write it: `25ms, 100Mbit`.
    pub fn describe(self) -> String {
        self.to_network().describe()
    }
}

/// A round trip in milliseconds, written `25ms` or `0.27s`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(try_from = "String")]
pub struct Latency(pub f64);

impl TryFrom<String> for Latency {
    type Error = String;
    fn try_from(s: String) -> Result<Latency, String> {
        let text = s.trim();
        let (number, unit) = split_unit(text);
        let mult = match unit {
            "ms" => 1.0,
            "s" => 1000.0,
            "us" | "µs" => 0.001,
            _ => {
                return Err(format!(
                    "`{s}` is not a latency: write a number and `ms` or `s`, e.g. `25ms`, `0.27s`"
                ));
            }
        };
        let value = number
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| format!("`{s}`: `{number}` is not a number of {unit}"))?;
        let ms = value * mult;
        if ms > labrun_evidence::storage::MAX_RTT_MS {
            return Err(format!(
                "`{s}` is more than 10 s of round trip: no network a backup crosses is that slow"
            ));
        }
        Ok(Latency(ms))
    }
}

/// Bits per second, written as `tc` writes rates: `100Mbit`, `1Gbit`,
/// `512kbit` (`/s` may follow).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(try_from = "String")]
pub struct Rate(pub u64);

impl TryFrom<String> for Rate {
    type Error = String;
    fn try_from(s: String) -> Result<Rate, String> {
        let text = s.trim();
        let text = text.strip_suffix("/s").unwrap_or(text);
        let (number, unit) = split_unit(text);
        let mult: f64 = match unit {
            "kbit" => 1e3,
            "Mbit" => 1e6,
            "Gbit" => 1e9,
            "bit" => 1.0,
            _ => {
                return Err(format!(
                    "`{s}` is not a bandwidth: write a number and `kbit`, `Mbit` or `Gbit`, e.g. `100Mbit`"
                ));
            }
        };
        let bits = number
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v > 0.0)
            .map(|v| (v * mult).round())
            .filter(|b| *b >= 8_000.0 && *b <= 1e12)
            .ok_or_else(|| format!("`{s}`: a bandwidth from 8kbit to 1000Gbit, e.g. `100Mbit`"))?;
        Ok(Rate(bits as u64))
    }
}

fn split_unit(s: &str) -> (&str, &str) {
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (n, u) = s.split_at(end);
    (n, u.trim())
}

/// A server's binary labrun installs, pinned like a tool's
/// (`servers: {rest: {version, artifact}}`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    pub version: String,
    pub artifact: ArtifactSpec,
    /// Absolute path in the guest; default `/usr/local/bin/<kind>-server`.
    #[serde(default)]
    pub install: Option<String>,
}

impl ServerSpec {
    /// The name its binary goes by in installs and digests: `rest-server`.
    pub fn install_name(kind: Server) -> String {
        format!("{kind}-server")
    }

    /// The server as an install: labrun fetches, checks and installs it
    /// exactly as it does a tool (the same pipeline, the same digests); it
    /// runs no commands of its own.
    pub fn as_install(&self, kind: Server) -> crate::ToolSpec {
        crate::ToolSpec {
            name: Self::install_name(kind),
            version: self.version.clone(),
            artifact: self.artifact.clone(),
            install: self.install.clone(),
            env: BTreeMap::new(),
            secret_env: Vec::new(),
            commands: ToolCommands::new(),
            args: ExtraArgs::new(),
            snapshot_id_pattern: None,
            repository: BTreeMap::new(),
            versions: Vec::new(),
            anchor: None,
        }
    }
}

/// How one tool names its repository on one kind of server: what `{repo}`
/// becomes, and what else changes (an ssh option on every command, a
/// different `init`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepoForm {
    /// `{repo}` on this server, from the storage placeholders:
    /// `sftp:{repo_user}@{repo_host}:{repo_path}`, `rest:{repo_url}`.
    pub repo: String,
    /// Appended to the named commands (after the tool's own `args`).
    #[serde(default)]
    pub args: ExtraArgs,
    /// Set in the tool's environment (`BORG_RSH: ssh -F {ssh_config}`).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Commands that differ on this server, replacing the tool's own.
    #[serde(default)]
    pub commands: ToolCommands,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies() {
        assert_eq!(Latency::try_from("25ms".to_string()), Ok(Latency(25.0)));
        assert_eq!(Latency::try_from("0.27s".to_string()), Ok(Latency(270.0)));
        assert_eq!(Latency::try_from("0ms".to_string()), Ok(Latency(0.0)));
        for bad in ["25", "25 min", "-1ms", "20s", "ms"] {
            let e = Latency::try_from(bad.to_string()).unwrap_err();
            assert!(e.contains(bad), "{bad}: {e}");
        }
    }

    #[test]
    fn rates() {
        assert_eq!(Rate::try_from("100Mbit".to_string()), Ok(Rate(100_000_000)));
        assert_eq!(
            Rate::try_from("1.5Gbit/s".to_string()),
            Ok(Rate(1_500_000_000))
        );
        for bad in ["100", "100MB", "0Mbit", "1bit"] {
            assert!(Rate::try_from(bad.to_string()).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_network_block_reads_and_refuses_typos() {
        let s: StorageSpec =
            serde_saphyr::from_str("server: sftp\nnetwork: {latency: 25ms, bandwidth: 100Mbit}")
                .unwrap();
        assert_eq!(s.server, Server::Sftp);
        assert_eq!(
            s.network.map(NetworkSpec::describe).as_deref(),
            Some("25 ms round trip, 100 Mbit/s")
        );
        let e = serde_saphyr::from_str::<StorageSpec>(
            "server: sftp\nnetwork: {latency: 25ms, rate: 1Gbit}",
        )
        .unwrap_err();
        assert!(e.to_string().contains("rate"), "{e}");
        let e = serde_saphyr::from_str::<StorageSpec>("server: ftp").unwrap_err();
        assert!(e.to_string().contains("ftp"), "{e}");
    }
}
