//! Where the tools' repositories live: on the disk of the machine under test
//! (the published setting), or on a storage server the tools reach over a
//! network of a set round-trip time and bandwidth. The host writes it into
//! the plan; the agent builds the network (a namespace of its own, a veth
//! pair, `tc netem` on both ends) and starts the server inside it, so nothing
//! leaves the machine under test.
//!
//! A tool names its repository on a server with the placeholders below, in
//! the form its lab gives for that kind of server (`ToolPlan::repo`); the
//! tool's commands keep saying `{repo}`.

use serde::{Deserialize, Serialize};

/// The kind of storage server. Each speaks one protocol the tools know.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Server {
    /// The repository is a folder on the machine's own disk.
    #[default]
    Local,
    /// OpenSSH's sshd with its SFTP subsystem (the machine's own OpenSSH),
    /// for `sftp:`/`ssh://` repositories (restic, borg, kopia, duplicity).
    Sftp,
    /// restic's rest-server (its own pinned binary), for `rest:` repositories.
    Rest,
    /// An S3-compatible server (its own pinned binary: Versity's versitygw
    /// serving the work root from a POSIX folder), for `s3:` repositories
    /// (restic, kopia, rustic, duplicity). A tool cycle's folder is its
    /// bucket and the repository the `repo/` prefix in it.
    S3,
}

impl Server {
    pub const ALL: [Server; 4] = [Server::Local, Server::Sftp, Server::Rest, Server::S3];

    pub fn as_str(self) -> &'static str {
        match self {
            Server::Local => "local",
            Server::Sftp => "sftp",
            Server::Rest => "rest",
            Server::S3 => "s3",
        }
    }

    /// The TCP port the server listens on, inside its namespace.
    pub fn port(self) -> Option<u16> {
        match self {
            Server::Local => None,
            Server::Sftp => Some(22),
            Server::Rest => Some(8000),
            Server::S3 => Some(7070),
        }
    }

    /// Whether labrun installs a binary of the lab's for it (OpenSSH is the
    /// machine's own).
    pub fn needs_binary(self) -> bool {
        matches!(self, Server::Rest | Server::S3)
    }
}

impl std::fmt::Display for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// The network between the tools and the server: `tc netem` on both ends of
/// the veth pair, half the round trip each way.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// Round-trip time added, in milliseconds (0: none).
    pub rtt_ms: f64,
    /// Bandwidth each way, in bits per second; absent: not limited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_bits_per_sec: Option<u64>,
}

/// The longest round trip a network may add, in milliseconds: no network a
/// backup crosses is slower, and `tc netem` refuses far larger delays.
pub const MAX_RTT_MS: f64 = 10_000.0;

impl Network {
    /// `25 ms, 100 Mbit/s` or `25 ms, unlimited`.
    pub fn describe(&self) -> String {
        let rate = match self.rate_bits_per_sec {
            Some(b) if b >= 1_000_000_000 && b % 1_000_000_000 == 0 => {
                format!("{} Gbit/s", b / 1_000_000_000)
            }
            Some(b) if b >= 1_000_000 => format!("{} Mbit/s", fmt_num(b as f64 / 1e6)),
            Some(b) => format!("{} kbit/s", fmt_num(b as f64 / 1e3)),
            None => "unlimited".into(),
        };
        format!("{} ms round trip, {rate}", fmt_num(self.rtt_ms))
    }
}

fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// The plan's `storage`: absent means [`Server::Local`] with no network.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoragePlan {
    pub server: Server,
    /// The shaped network; absent: the veth pair as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<Network>,
    /// The server's binary where labrun installs one ([`Server::needs_binary`]),
    /// and its pinned SHA-256, checked by the agent like a tool's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// The placeholders a repository form (and any command) may use besides the
/// tool's own: where the repository is on the server and how to reach it.
/// For a local repository `repo_path` and `repo_url` are the folder and the
/// others are empty.
pub mod placeholders {
    /// The repository's folder on the server's disk.
    pub const REPO_PATH: &str = "repo_path";
    /// The server's address (inside the agent's network namespace).
    pub const REPO_HOST: &str = "repo_host";
    pub const REPO_PORT: &str = "repo_port";
    /// The user the server lets in (the agent's own, with a key of the run's).
    pub const REPO_USER: &str = "repo_user";
    /// `sftp://user@host:port/path`, `http://host:port/<path under the
    /// server's root>/` (rest), `http://host:port/<bucket>/repo` (s3).
    pub const REPO_URL: &str = "repo_url";
    /// An ssh_config file naming the run's key and the server's pinned host
    /// key: `ssh -F {ssh_config}`.
    pub const SSH_CONFIG: &str = "ssh_config";
    /// The run's private key, and a known_hosts file with the server's key
    /// (for tools that speak SSH themselves, as kopia does).
    pub const SSH_KEY: &str = "ssh_key";
    pub const KNOWN_HOSTS: &str = "known_hosts";
    /// On an S3 server: the bucket (the tool cycle's folder, `c1-restic`),
    /// the repository being its `repo/` prefix, and the run's credentials,
    /// made for the run (`AWS_ACCESS_KEY_ID: "{s3_access_key}"`).
    pub const S3_BUCKET: &str = "s3_bucket";
    pub const S3_ACCESS_KEY: &str = "s3_access_key";
    pub const S3_SECRET_KEY: &str = "s3_secret_key";

    pub const ALL: &[&str] = &[
        REPO_PATH,
        REPO_HOST,
        REPO_PORT,
        REPO_USER,
        REPO_URL,
        SSH_CONFIG,
        SSH_KEY,
        KNOWN_HOSTS,
        S3_BUCKET,
        S3_ACCESS_KEY,
        S3_SECRET_KEY,
    ];
}

/// `raw/storage.json` beside the records: the network and the server as the
/// agent measured them before the first cycle.
pub const STORAGE_FILE: &str = "storage.json";

/// What the agent found: the network's round trip measured by TCP connects
/// to the server (each connect takes one round trip), what `tc` says was
/// applied, and the server's version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StorageRecord {
    pub server: Server,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<Network>,
    /// The server's address and port in the namespace.
    pub address: String,
    /// Round trips of TCP connects to the server, in milliseconds, in order.
    pub connect_rtt_ms: Vec<f64>,
    /// `tc qdisc show` of both ends, as printed.
    #[serde(default)]
    pub qdiscs: Vec<String>,
    /// The server's version line, when it prints one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
}

impl StorageRecord {
    /// The median of the measured round trips.
    pub fn median_rtt_ms(&self) -> Option<f64> {
        let mut v = self.connect_rtt_ms.clone();
        v.sort_by(f64::total_cmp);
        match v.len() {
            0 => None,
            n if n % 2 == 1 => Some(v[n / 2]),
            n => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_the_network() {
        let n = Network {
            rtt_ms: 25.0,
            rate_bits_per_sec: Some(100_000_000),
        };
        assert_eq!(n.describe(), "25 ms round trip, 100 Mbit/s");
        let n = Network {
            rtt_ms: 2.5,
            rate_bits_per_sec: None,
        };
        assert_eq!(n.describe(), "2.5 ms round trip, unlimited");
    }

    #[test]
    fn median() {
        let mut r = StorageRecord {
            server: Server::Sftp,
            network: None,
            address: "x".into(),
            connect_rtt_ms: vec![3.0, 1.0, 2.0],
            qdiscs: vec![],
            server_version: None,
        };
        assert_eq!(r.median_rtt_ms(), Some(2.0));
        r.connect_rtt_ms.push(10.0);
        assert_eq!(r.median_rtt_ms(), Some(2.5));
    }

    #[test]
    fn plan_refuses_unknown_fields() {
        let e =
            serde_json::from_str::<StoragePlan>(r#"{"server":"sftp","netwrok":{}}"#).unwrap_err();
        assert!(e.to_string().contains("netwrok"), "{e}");
        let p: StoragePlan = serde_json::from_str(r#"{"server":"rest"}"#).unwrap();
        assert_eq!(p.server, Server::Rest);
    }
}
