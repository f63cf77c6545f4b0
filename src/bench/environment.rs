//! The environment a run had, host and guest, captured with one probe script
//! run on both sides so the two halves are described the same way.

use labrun_report::{Environment, Machine};
use labrun_ssh::Session;

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

    #[test]
    fn probe_runs_here() {
        let m = probe_host();
        assert!(m.cpus.unwrap_or(0) >= 1);
        assert!(m.kernel.is_some());
    }
}
