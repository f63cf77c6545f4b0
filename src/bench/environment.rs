//! The environment a run had, host and guest, captured with one probe script
//! run on both sides so the two halves are described the same way.

use crate::bench::layout::sh_quote;
use labrun_evidence::ToolPlan;
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

pub async fn probe_guest(session: &Session) -> Machine {
    match session.exec(PROBE).await {
        Ok(out) => parse_probe(&String::from_utf8_lossy(&out.stdout)),
        Err(_) => Machine::default(),
    }
}

/// What each tool's `version` command prints in the guest (first line).
pub async fn tool_versions(
    session: &Session,
    tools: &[ToolPlan],
) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    for tool in tools {
        let Some(cmd) = &tool.commands.version else {
            continue;
        };
        let line = cmd
            .argv
            .iter()
            .map(|a| sh_quote(&a.replace("{bin}", &tool.binary)))
            .collect::<Vec<_>>()
            .join(" ");
        let text = match session.exec(&format!("{line} 2>&1")).await {
            Ok(o) => String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_string(),
            Err(e) => format!("(version command failed: {e})"),
        };
        out.insert(tool.name.clone(), text);
    }
    out
}

/// Everything but the VM-specific fields, which the caller fills in.
pub async fn capture(session: &Session, tools: &[ToolPlan]) -> Environment {
    Environment {
        host: probe_host(),
        guest: probe_guest(session).await,
        tool_versions: tool_versions(session, tools).await,
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
