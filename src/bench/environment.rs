//! The environment a run had, host and guest, captured with one probe script
//! run on both sides so the two halves are described the same way.

use labrun_host::{HostNoise, NoiseRecord};
use labrun_report::{Environment, Machine};
use labrun_ssh::Session;
use std::path::Path;

/// Prints `key=value` lines; plain POSIX sh + coreutils, present on any target.
const PROBE: &str = r#"
echo "cpu_model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "cpu_flags=$(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "cpus=$(nproc)"
echo "memory_kib=$(awk '/^MemTotal/{print $2}' /proc/meminfo)"
echo "kernel=$(uname -r)"
echo "os=$(. /etc/os-release 2>/dev/null; echo "$PRETTY_NAME")"
"#;

pub fn parse_probe(text: &str) -> Machine {
    let mut m = Machine::default();
    for line in text.lines() {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let v = v.trim();
        if v.is_empty() {
            continue;
        }
        match k {
            "cpu_model" => m.cpu_model = Some(v.to_string()),
            "cpu_flags" => m.cpu_flags = v.split_whitespace().map(str::to_string).collect(),
            "cpus" => m.cpus = v.parse().ok(),
            "memory_kib" => m.memory_mib = v.parse::<u64>().ok().map(|k| k / 1024),
            "kernel" => m.kernel = Some(v.to_string()),
            "os" => m.os = Some(v.to_string()),
            _ => {}
        }
    }
    m
}

pub fn probe_host() -> Machine {
    match std::process::Command::new("sh")
        .arg("-c")
        .arg(PROBE)
        .output()
    {
        Ok(out) => parse_probe(&String::from_utf8_lossy(&out.stdout)),
        Err(_) => Machine::default(),
    }
}

/// A remote hypervisor's libvirt and QEMU, beside its machine.
/// libvirtd lives in /usr/sbin, outside an ordinary user's PATH.
const VERSIONS: &str = r#"
PATH="$PATH:/usr/sbin:/sbin"
echo "libvirt=$(libvirtd --version 2>/dev/null | head -n 1)"
echo "qemu=$(qemu-system-x86_64 --version 2>/dev/null | head -n 1)"
"#;

/// Everything but the VM-specific fields, which the caller fills in. The
/// host (this one, or the remote hypervisor's, over its own SSH) is probed
/// while the guest answers. The tools' versions are not here: the agent
/// asks them while it generates the dataset (`tool-versions.json`), where a
/// tool's cold start costs nothing.
pub async fn capture(session: &Session, hypervisor: Option<&labrun_vm::RemoteHost>) -> Environment {
    let mut env = probe_machine(hypervisor).await;
    env.guest = match session.exec(PROBE).await {
        Ok(o) => parse_probe(&String::from_utf8_lossy(&o.stdout)),
        Err(_) => Machine::default(),
    };
    env
}

/// The machine QEMU runs on: this host, or a remote hypervisor's (with its
/// libvirt and QEMU versions).
pub async fn probe_machine(hypervisor: Option<&labrun_vm::RemoteHost>) -> Environment {
    match hypervisor {
        None => Environment {
            host: tokio::task::spawn_blocking(probe_host)
                .await
                .unwrap_or_default(),
            ..Environment::default()
        },
        Some(r) => probe_hypervisor(r).await,
    }
}

/// The remote hypervisor's machine, libvirt and QEMU: its fingerprint in the
/// evidence. A host that does not answer leaves them empty (the run is not
/// stopped for its description).
async fn probe_hypervisor(r: &labrun_vm::RemoteHost) -> Environment {
    let text = match labrun_ssh::connect(&r.ssh, std::time::Duration::from_secs(30)).await {
        Ok(s) => {
            let out = s.exec(&format!("{PROBE}{VERSIONS}")).await;
            let _ = s.close().await;
            out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default()
        }
        Err(_) => String::new(),
    };
    let value = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    Environment {
        host: parse_probe(&text),
        hypervisor: Some(r.name.clone()),
        libvirt_version: value("libvirt"),
        qemu_version: value("qemu"),
        ..Environment::default()
    }
}

/// Where a run's host noise is read: the host QEMU runs on (this one, or
/// the lab's remote hypervisor, through the same files printed by its shell)
/// and its libvirt, the lab's own domain left out. An SSH target has none:
/// its tools do not run on a host labrun sees, so nothing is recorded.
pub struct NoiseProbe {
    uri: String,
    own_domain: String,
    remote: Option<labrun_vm::RemoteHost>,
}

impl NoiseProbe {
    /// None for an SSH target, or a VM whose settings do not resolve here
    /// (then `up` itself would have refused).
    pub fn of(ctx: &crate::context::Context, lab: &labrun_lab::Lab) -> Option<NoiseProbe> {
        if !matches!(lab.machine(), labrun_lab::Machine::Vm(_)) {
            return None;
        }
        let cfg = crate::lab_vm::vm_of(lab, ctx).ok()?;
        Some(NoiseProbe {
            own_domain: cfg.domain_name(),
            uri: cfg.uri,
            remote: cfg.remote,
        })
    }

    /// The facts now. A remote host that does not answer gives none, with
    /// why; libvirt not answering leaves only the other domains unknown.
    pub async fn read(&self) -> Result<HostNoise, String> {
        let mut noise = match &self.remote {
            None => {
                let (uri, own) = (self.uri.clone(), self.own_domain.clone());
                return tokio::task::spawn_blocking(move || {
                    noise_here(Path::new("/"), &uri, Some(&own))
                })
                .await
                .map_err(|e| e.to_string());
            }
            Some(r) => remote_noise(r).await?,
        };
        let (uri, own) = (self.uri.clone(), self.own_domain.clone());
        noise.other_domains = tokio::task::spawn_blocking(move || other_domains(&uri, Some(&own)))
            .await
            .ok()
            .flatten();
        Ok(noise)
    }
}

/// This host's noise sources, its files read under `root` ("/" but in
/// tests), and the domains at `uri` but `own`.
pub fn noise_here(root: &Path, uri: &str, own: Option<&str>) -> HostNoise {
    let mut noise = labrun_host::read(&labrun_host::Root(root.to_path_buf()));
    noise.other_domains = other_domains(uri, own);
    noise
}

/// None when libvirt does not answer at `uri`: unknown, not "none".
fn other_domains(uri: &str, own: Option<&str>) -> Option<labrun_host::OtherDomains> {
    let domains = labrun_vm::hypervisor::Hypervisor::open(uri)
        .ok()?
        .running_domains_except(own.unwrap_or(""))
        .ok()?;
    Some(labrun_host::OtherDomains {
        uri: uri.to_string(),
        domains: domains
            .into_iter()
            .map(|d| labrun_host::Domain {
                name: d.name,
                vcpus: d.vcpus,
            })
            .collect(),
    })
}

async fn remote_noise(r: &labrun_vm::RemoteHost) -> Result<HostNoise, String> {
    let s = labrun_ssh::connect(&r.ssh, std::time::Duration::from_secs(30))
        .await
        .map_err(|e| format!("{} did not answer over SSH: {e}", r.name))?;
    let out = s.exec(labrun_host::DUMP_SCRIPT).await;
    let _ = s.close().await;
    let out = out.map_err(|e| format!("{} did not run the probe: {e}", r.name))?;
    Ok(labrun_host::read(&labrun_host::Dump::parse(
        &String::from_utf8_lossy(&out.stdout),
    )))
}

/// The noise before the run, for `environment.json`.
pub async fn noise_before(probe: Option<&NoiseProbe>) -> Option<NoiseRecord> {
    let probe = probe?;
    Some(match probe.read().await {
        Ok(n) => NoiseRecord {
            before: Some(n),
            ..NoiseRecord::default()
        },
        Err(why) => NoiseRecord {
            not_read: Some(why),
            ..NoiseRecord::default()
        },
    })
}

/// Adds the noise at the run's end to `raw/environment.json`. The run's
/// evidence is not at stake: a failure is said and the file left as it was.
pub async fn record_noise_after(raw: &Path, probe: Option<&NoiseProbe>) {
    let Some(probe) = probe else {
        return;
    };
    let path = raw.join(labrun_report::ENVIRONMENT_FILE);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return;
    };
    let Ok(mut env) = serde_json::from_str::<Environment>(&text) else {
        return;
    };
    let record = env.noise.get_or_insert_with(NoiseRecord::default);
    match probe.read().await {
        Ok(n) => record.after = Some(n),
        Err(why) => record.not_read = Some(why),
    }
    let written = serde_json::to_vec_pretty(&env)
        .map_err(std::io::Error::other)
        .and_then(|json| std::fs::write(&path, json));
    if let Err(e) = written {
        safe_eprintln!(
            "labrun: the host's noise after the run was not recorded in {}: {e}",
            path.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_probe_output() {
        let m = parse_probe(
            "cpu_model=QEMU TCG CPU version 2.5+\ncpu_flags=fpu sse2\ncpus=4\nmemory_kib=2973696\nkernel=6.1.0-57-amd64\nos=Debian GNU/Linux 12 (bookworm)\nnoise\n",
        );
        assert_eq!(m.cpus, Some(4));
        assert_eq!(m.memory_mib, Some(2904));
        assert_eq!(m.cpu_flags, vec!["fpu", "sse2"]);
        assert_eq!(m.os.as_deref(), Some("Debian GNU/Linux 12 (bookworm)"));
    }

    /// No libvirt at the URI: the other domains are unknown, not "none".
    const NO_LIBVIRT: &str = "qemu+unix:///system?socket=/nonexistent/labrun-test-sock";

    #[test]
    fn noise_is_read_under_a_root_and_unknown_domains_stay_unknown() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("proc")).unwrap();
        std::fs::write(root.path().join("proc/loadavg"), "3.00 2.00 1.00 1/2 3\n").unwrap();
        let n = noise_here(root.path(), NO_LIBVIRT, None);
        assert_eq!(n.load_average, Some([3.0, 2.0, 1.0]));
        assert_eq!(n.other_domains, None);
        assert!(n.cores.is_empty() && n.boost.is_none());
    }

    /// The run's end adds `after` to the file `prepare` wrote, keeping the rest.
    #[tokio::test]
    async fn the_noise_after_the_run_joins_the_one_before() {
        let raw = tempfile::tempdir().unwrap();
        let before = Environment {
            qemu_version: Some("QEMU emulator version 7.2.19".into()),
            noise: Some(NoiseRecord {
                before: Some(HostNoise::default()),
                ..NoiseRecord::default()
            }),
            ..Environment::default()
        };
        let path = raw.path().join(labrun_report::ENVIRONMENT_FILE);
        std::fs::write(&path, serde_json::to_vec(&before).unwrap()).unwrap();
        let probe = NoiseProbe {
            uri: NO_LIBVIRT.into(),
            own_domain: "labrun-t".into(),
            remote: None,
        };
        record_noise_after(raw.path(), Some(&probe)).await;
        let env: Environment =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(env.qemu_version, before.qemu_version);
        let noise = env.noise.unwrap();
        assert_eq!(noise.before, Some(HostNoise::default()));
        let after = noise.after.expect("read at the end");
        assert!(!after.cores.is_empty(), "this host's own /sys was read");
        // No probe (an SSH target): the file is left as it was.
        std::fs::write(&path, "{}").unwrap();
        record_noise_after(raw.path(), None).await;
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}");
    }

    /// A remote hypervisor's noise is its files printed by its shell, read
    /// by the same parser: an sshd on this host gives this host's facts.
    #[tokio::test]
    async fn a_remote_hypervisor_is_read_through_its_shell() {
        let sshd = labrun_ssh::test_support::Sshd::start().expect("sshd");
        let probe = NoiseProbe {
            uri: NO_LIBVIRT.into(),
            own_domain: "labrun-t".into(),
            remote: Some(labrun_vm::RemoteHost {
                name: "rack2".into(),
                ssh: sshd.target(),
                dir: "/var/tmp/labrun".into(),
            }),
        };
        let there = probe.read().await.expect("read over SSH");
        let here = labrun_host::read(&labrun_host::Root::host());
        assert!(!there.cores.is_empty(), "{there:?}\n{}", sshd.log());
        assert_eq!(there.cores, here.cores);
        assert_eq!(there.governors, here.governors);
        assert_eq!(there.smt, here.smt);
        assert_eq!(there.transparent_hugepages, here.transparent_hugepages);
        assert_eq!(there.other_domains, None, "no libvirt at the URI: unknown");
    }

    #[test]
    fn probe_runs_here() {
        let m = probe_host();
        assert!(m.cpus.unwrap_or(0) >= 1);
        assert!(m.kernel.is_some());
    }
}
