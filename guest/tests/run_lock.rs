//! One agent per machine: a second agent on the same lock is refused, and a
//! tool left running by a killed agent is stopped by the next one.

mod common;

use common::*;
use labrun_evidence::AgentMarker;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn quick(mut plan: serde_json::Value) -> serde_json::Value {
    plan["drop_caches"] = json!(false);
    plan
}

/// The agent on `lab`'s plan, with the machine's lock at `lock`.
fn agent(lab: &Lab, lock: &Path) -> Command {
    let mut c = lab.command();
    c.arg("--lock").arg(lock);
    c
}

fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn marker(lock: &Path) -> Option<AgentMarker> {
    let text = std::fs::read_to_string(lock).ok()?;
    serde_json::from_str(text.trim()).ok()
}

fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| labrun_evidence::marker::parse_stat(&s))
        .is_some_and(|s| s.state != 'Z')
}

/// Kills a process this test made, whatever the test's outcome.
struct KillOnDrop(u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        // SAFETY: kill(2) on a pid this test started (a no-op once gone).
        unsafe { libc::kill(self.0 as i32, libc::SIGKILL) };
    }
}

/// A cgroup root no agent can make its tree under: it runs without one.
const NO_CGROUPS: &str = "/proc/labrun-no-cgroups";

fn kill_and_reap(child: &mut Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_second_agent_on_the_same_lock_is_refused() {
    let first = Lab::new();
    let lock = first.path("machine/agent.lock");
    let release = first.path("release");
    let script = format!(
        "mkdir -p {{repo}}/snapshots; while [ ! -e {} ]; do sleep 0.05; done",
        release.display()
    );
    let waiting = sh_tool(
        "waiting",
        json!({"init": {"argv": ["{bin}", "-c", script]}}),
    );
    first.write_plan(&quick(base_plan("first-run", 1, vec![waiting])));
    let mut a = agent(&first, &lock).stdout(Stdio::null()).spawn().unwrap();
    wait_for("the first agent's tool", || {
        marker(&lock).is_some_and(|m| m.tool.is_some())
    });

    let second = Lab::new();
    second.write_plan(&quick(base_plan(
        "second-run",
        1,
        vec![sh_tool("fine", json!({}))],
    )));
    let out = agent(&second, &lock).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("first-run")
            && err.contains(&format!("pid {}", a.id()))
            && err.contains("labrun bench --attach first-run"),
        "{err}"
    );
    assert!(
        !second.evidence().exists(),
        "the refused run wrote evidence"
    );
    assert!(!second.work().join("second-run").exists());

    std::fs::write(&release, "").unwrap();
    assert!(a.wait().unwrap().success());
    // Once the first is over, the second may run.
    let out = agent(&second, &lock).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn a_tool_left_running_by_a_killed_agent_is_stopped_by_the_next_one() {
    let first = Lab::new();
    let lock = first.path("agent.lock");
    let pid_file = first.path("sleeper.pid");
    let script = format!(
        "mkdir -p {{repo}}/snapshots; echo $$ > {}; exec sleep 1000",
        pid_file.display()
    );
    let sleeper = sh_tool(
        "sleeper",
        json!({"init": {"argv": ["{bin}", "-c", script]}}),
    );
    first.write_plan(&quick(base_plan("killed-run", 1, vec![sleeper])));
    // Outside the machine's cgroup tree: an agent of a test beside this one
    // that starts once this one is killed ends a dead agent's cgroups, and
    // with them the tool this test expects the *next* agent to stop (seen
    // in CI: "the tool should outlive a SIGKILLed agent").
    let mut a = agent(&first, &lock)
        .env("LABRUN_CGROUP_ROOT", NO_CGROUPS)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the sleeping tool", || {
        pid_file.exists() && marker(&lock).is_some_and(|m| m.tool.is_some())
    });
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let _cleanup = KillOnDrop(pid);
    assert_eq!(marker(&lock).unwrap().tool.unwrap().pid, pid);
    kill_and_reap(&mut a);
    std::thread::sleep(Duration::from_millis(200));
    assert!(running(pid), "the tool should outlive a SIGKILLed agent");

    let next = Lab::new();
    next.write_plan(&quick(base_plan(
        "next-run",
        1,
        vec![sh_tool("fine", json!({}))],
    )));
    let out = agent(&next, &lock)
        .env("LABRUN_CGROUP_ROOT", NO_CGROUPS)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!running(pid), "the leftover tool {pid} still runs");
    let warnings = next.warnings();
    assert!(
        warnings.iter().any(|w| w.contains("killed-run")
            && w.contains(&format!("process group {pid}"))
            && w.contains("SIGTERM")),
        "{warnings:?}"
    );
    // The marker is the new run's now, with no tool running.
    let m = marker(&lock).unwrap();
    assert_eq!((m.run_id.as_str(), m.tool), ("next-run", None));
}

#[test]
fn without_a_lock_argument_the_lock_is_in_the_work_folder() {
    let lab = Lab::new();
    let out = lab.run(&quick(base_plan(
        "default-lock",
        1,
        vec![sh_tool("fine", json!({}))],
    )));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lock: PathBuf = lab.work().join("labrun-agent.lock");
    assert_eq!(marker(&lock).unwrap().run_id, "default-lock");
}
