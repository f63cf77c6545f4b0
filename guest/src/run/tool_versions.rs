//! Each tool's own `version` command, run while the dataset is generated:
//! under emulation a tool's cold start takes seconds (borg's Python many),
//! and asked for before the run, one after another over SSH, they were the
//! largest fixed cost of a small run. Nothing timed runs meanwhile: the
//! versions are collected before the first tool cycle, whose cache drop
//! also throws away what they read.
//!
//! The output goes to the evidence (`logs/<tool>/version.out|.err`) and the
//! first line of it to `tool-versions.json`.

use crate::run::evidence::Evidence;
use crate::run::placeholders::{Vars, substitute};
use labrun_evidence::command::roles;
use labrun_evidence::{Plan, ToolVersions};
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A version command that has not answered by then is killed and said so:
/// it must not hold the run.
pub const DEADLINE: Duration = Duration::from_secs(120);

/// The version commands started, one a tool that has one.
pub struct VersionProbe {
    started: Instant,
    running: Vec<Running>,
}

struct Running {
    tool: String,
    outcome: Result<(Child, LogFiles), String>,
}

struct LogFiles {
    stdout: std::path::PathBuf,
    stderr: std::path::PathBuf,
}

impl VersionProbe {
    /// Starts every tool's version command (in a process group of its own,
    /// so a timeout kills all it started); a command that cannot start is
    /// recorded as such.
    pub fn start(plan: &Plan, ev: &Evidence) -> VersionProbe {
        let running = plan
            .tools
            .iter()
            .filter_map(|tool| {
                let template = tool.commands.get(roles::VERSION)?;
                let vars = Vars {
                    bin: tool.binary.clone(),
                    ..Vars::default()
                };
                let argv: Vec<String> =
                    template.argv.iter().map(|a| substitute(a, &vars)).collect();
                Some(Running {
                    tool: tool.name.clone(),
                    outcome: spawn(&argv, ev, &tool.name),
                })
            })
            .collect();
        VersionProbe {
            started: Instant::now(),
            running,
        }
    }

    /// Waits for every command until `deadline` after the start, kills what
    /// is left, and returns each tool's first line of output (stdout, else
    /// stderr) or what went wrong.
    pub fn collect(mut self, deadline: Duration) -> ToolVersions {
        let mut versions = ToolVersions::new();
        for run in std::mem::take(&mut self.running) {
            let text = match run.outcome {
                Err(why) => format!("(version command failed: {why})"),
                Ok((mut child, logs)) => match wait_until(&mut child, self.started + deadline) {
                    Ok(true) => first_line(&logs),
                    Ok(false) => format!(
                        "(version command did not finish in {} s; killed)",
                        deadline.as_secs()
                    ),
                    Err(e) => format!("(version command failed: {e})"),
                },
            };
            versions.insert(run.tool, text);
        }
        versions
    }
}

impl Drop for VersionProbe {
    /// A run stopped during generation leaves no version command behind.
    fn drop(&mut self) {
        for run in &mut self.running {
            if let Ok((child, _)) = &mut run.outcome {
                kill_group(child);
            }
        }
    }
}

fn spawn(argv: &[String], ev: &Evidence, tool: &str) -> Result<(Child, LogFiles), String> {
    let (program, args) = argv.split_first().ok_or("empty command")?;
    let logs = ev.log_paths(tool, "version").map_err(|e| e.to_string())?;
    let out = File::create(&logs.stdout).map_err(|e| e.to_string())?;
    let err = File::create(&logs.stderr).map_err(|e| e.to_string())?;
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("{program}: {e}"))?;
    Ok((
        child,
        LogFiles {
            stdout: logs.stdout,
            stderr: logs.stderr,
        },
    ))
}

/// `Ok(true)` when the child ended by `until`; else it is killed.
fn wait_until(child: &mut Child, until: Instant) -> std::io::Result<bool> {
    loop {
        if child.try_wait()?.is_some() {
            return Ok(true);
        }
        if Instant::now() >= until {
            kill_group(child);
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn kill_group(child: &mut Child) {
    if let Ok(None) = child.try_wait() {
        // The group's id is the child's pid (`process_group(0)`).
        let pid = child.id() as libc::pid_t;
        crate::run::process::signal_group(pid, libc::SIGKILL);
        let _ = child.wait();
    }
}

fn first_line(logs: &LogFiles) -> String {
    let texts = [&logs.stdout, &logs.stderr]
        .into_iter()
        .filter_map(|p| std::fs::read_to_string(p).ok());
    first_nonempty_line(texts).unwrap_or_default()
}

/// The first non-empty line (trimmed) of the first text that has one: a
/// program's version, from its stdout, else its stderr.
pub fn first_nonempty_line(texts: impl IntoIterator<Item = String>) -> Option<String> {
    texts.into_iter().find_map(|text| {
        text.lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(str::to_string)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_with(version_argv: &[&str], name: &str) -> Plan {
        let mut plan: Plan =
            serde_json::from_str(&crate::run::plan_check::tests::plan_json("")).expect("test plan");
        let tool = &mut plan.tools[0];
        tool.name = name.to_string();
        tool.commands.insert(
            roles::VERSION.to_string(),
            labrun_evidence::CommandTemplate {
                argv: version_argv.iter().map(|s| s.to_string()).collect(),
                cwd: None,
            },
        );
        plan
    }

    fn evidence() -> (tempfile::TempDir, Evidence) {
        let dir = tempfile::tempdir().unwrap();
        let ev = Evidence::create(&dir.path().join("ev"), false).unwrap();
        (dir, ev)
    }

    #[test]
    fn first_line_of_stdout_else_stderr_and_the_output_is_kept() {
        let (_dir, ev) = evidence();
        let plan = plan_with(&["{bin}", "-c", "echo; echo 'fake 1.2.3'; echo more"], "a");
        let got = VersionProbe::start(&plan, &ev).collect(DEADLINE);
        assert_eq!(got["a"], "fake 1.2.3");
        let kept = std::fs::read_to_string(ev.log_paths("a", "version").unwrap().stdout).unwrap();
        assert!(kept.contains("more"), "{kept}");

        let plan = plan_with(&["{bin}", "-c", "echo 'v9 on stderr' >&2"], "b");
        let got = VersionProbe::start(&plan, &ev).collect(DEADLINE);
        assert_eq!(got["b"], "v9 on stderr");
    }

    #[test]
    fn a_hung_command_is_killed_with_its_children_and_a_missing_one_is_said() {
        let (_dir, ev) = evidence();
        // A duration of its own, to find the backgrounded child by.
        let marker = format!("sleep {}", 4000 + std::process::id() % 1000);
        let script = format!("{marker} & exec sleep 301");
        let plan = plan_with(&["{bin}", "-c", &script], "slow");
        let started = Instant::now();
        let got = VersionProbe::start(&plan, &ev).collect(Duration::from_millis(300));
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(got["slow"].contains("did not finish"), "{}", got["slow"]);
        // The backgrounded sleep went with the group.
        std::thread::sleep(Duration::from_millis(200));
        let left = Command::new("pgrep")
            .args(["-f", &marker])
            .output()
            .unwrap();
        assert!(left.stdout.is_empty(), "left running: {:?}", left);

        let plan = plan_with(&["/nonexistent/tool", "--version"], "gone");
        let got = VersionProbe::start(&plan, &ev).collect(DEADLINE);
        assert!(got["gone"].starts_with("(version command failed: /nonexistent/tool"));
    }
}
