//! The environment a run had, host and guest, captured with one probe script
//! run on both sides so the two halves are described the same way. In the
//! guest the probe and every tool's version command go in one exec: each
//! exec is a round trip and a shell start there.

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

/// Marks the start of a tool's version output in the combined script.
const VERSION_MARK: &str = "labrun-version-of=";

/// The probe, then each tool's `version` command (stdout and stderr) after
/// a marker line naming the tool; a tool's failure does not stop the rest.
/// The version commands run side by side, each into a file of its own,
/// printed in order once all have ended: a Python tool takes seconds to
/// start under emulation, and nothing is being measured yet.
fn guest_script(tools: &[ToolPlan]) -> String {
    let versioned: Vec<(&ToolPlan, &labrun_evidence::CommandTemplate)> = tools
        .iter()
        .filter_map(|tool| {
            let cmd = tool
                .commands
                .get(labrun_evidence::command::roles::VERSION)?;
            Some((tool, cmd))
        })
        .collect();
    let commands: Vec<String> = versioned
        .iter()
        .map(|(tool, cmd)| {
            cmd.argv
                .iter()
                .map(|a| sh_quote(&a.replace("{bin}", &tool.binary)))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let versions = crate::bench::side_by_side::script(&commands, "2>&1 < /dev/null", |i, file| {
        format!(
            "echo {}\ncat {file}\n",
            sh_quote(&format!("{VERSION_MARK}{}", versioned[i].0.name))
        )
    });
    format!("{PROBE}{versions}")
}

/// Splits the combined output: the probe's lines, and the first line each
/// tool's version command printed.
fn parse_guest(text: &str) -> (Machine, std::collections::BTreeMap<String, String>) {
    let (probe, rest) = match text.find(&format!("\n{VERSION_MARK}")) {
        Some(i) => (&text[..i], &text[i + 1..]),
        None if text.starts_with(VERSION_MARK) => ("", text),
        None => (text, ""),
    };
    let mut versions = std::collections::BTreeMap::new();
    let mut current: Option<&str> = None;
    for line in rest.lines() {
        if let Some(name) = line.strip_prefix(VERSION_MARK) {
            versions.insert(name.to_string(), String::new());
            current = Some(name);
        } else if let Some(name) = current.take() {
            versions.insert(name.to_string(), line.trim().to_string());
        }
    }
    (parse_probe(probe), versions)
}

fn failed_versions(tools: &[ToolPlan], why: &str) -> std::collections::BTreeMap<String, String> {
    tools
        .iter()
        .filter(|t| {
            t.commands
                .contains_key(labrun_evidence::command::roles::VERSION)
        })
        .map(|t| (t.name.clone(), format!("(version command failed: {why})")))
        .collect()
}

/// Everything but the VM-specific fields, which the caller fills in. The
/// host is probed while the guest answers.
pub async fn capture(session: &Session, tools: &[ToolPlan]) -> Environment {
    let host = tokio::task::spawn_blocking(probe_host);
    let (guest, tool_versions) = match session.exec(&guest_script(tools)).await {
        Ok(o) => parse_guest(&String::from_utf8_lossy(&o.stdout)),
        Err(e) => (Machine::default(), failed_versions(tools, &e.to_string())),
    };
    Environment {
        host: host.await.unwrap_or_default(),
        guest,
        tool_versions,
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
    fn one_script_probes_and_asks_every_tool_its_version() {
        let tool = |name: &str, argv: &[&str]| -> ToolPlan {
            let mut commands = serde_json::json!({
                "init": {"argv": ["{bin}"]}, "backup": {"argv": ["{bin}"]},
                "restore": {"argv": ["{bin}"]},
            });
            if !argv.is_empty() {
                commands["version"] = serde_json::json!({ "argv": argv });
            }
            serde_json::from_value(serde_json::json!({
                "name": name, "version": "1", "binary": format!("/opt/{name}"),
                "commands": commands,
            }))
            .unwrap()
        };
        let tools = [
            tool("restic", &["{bin}", "version"]),
            tool("quiet", &[]),
            tool("borg", &["{bin}", "--version"]),
            tool("silent", &["{bin}", "-V"]),
        ];
        let script = guest_script(&tools);
        assert!(script.contains("/opt/restic version >"), "{script}");
        assert!(!script.contains("/opt/quiet"), "{script}");
        // What sh prints for it: the probe, then each marker and output, in
        // the tools' order. The commands run side by side: each says its
        // version only once it has seen the other start (run one after the
        // other, the first would give up waiting and say "alone").
        let dir = tempfile::tempdir().unwrap();
        let meet = |me: &str, other: &str, says: &str| {
            let d = dir.path().display();
            format!(
                "sh -c 'touch {d}/{me}; for i in $(seq 100); do [ -e {d}/{other} ] && break; sleep 0.05; done; \
                 if [ -e {d}/{other} ]; then {says}; else echo alone; fi'"
            )
        };
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(
                script
                    .replace(
                        "/opt/restic version",
                        &meet("a", "b", "echo restic 0.14.0; echo more"),
                    )
                    .replace("/opt/borg --version", &meet("b", "a", "echo borg 1.2.4"))
                    .replace("/opt/silent -V", "true"),
            )
            .output()
            .unwrap();
        let (machine, versions) = parse_guest(&String::from_utf8_lossy(&out.stdout));
        assert!(
            machine.kernel.is_some() && machine.cpus.is_some(),
            "{machine:?}"
        );
        assert_eq!(versions["restic"], "restic 0.14.0");
        assert_eq!(versions["borg"], "borg 1.2.4");
        assert_eq!(versions["silent"], "");
        assert_eq!(versions.len(), 3);
    }

    #[test]
    fn probe_runs_here() {
        let m = probe_host();
        assert!(m.cpus.unwrap_or(0) >= 1);
        assert!(m.kernel.is_some());
    }
}
