//! A real OOM kill: the agent runs a tool that holds far more memory than
//! a memory cgroup the test makes allows, the kernel's OOM killer kills it,
//! and the step's record says `oom` with the victim and the evidence.
//!
//! The limit is where this host has a memory controller: a cgroup v2 one
//! (a pure v2 host, like the guest) given to the agent as its cgroup root,
//! so the step's own cgroup counts the kill; or else the cgroup v1 memory
//! hierarchy of a hybrid host (this project's build machines), with the
//! agent inside it, where the kernel's log naming the tool's pid is the
//! evidence. Needs root and python3. Whatever happens, the cgroup goes.

mod common;

use common::*;
use labrun_evidence::Step;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What the tool may use, and what it tries to hold (written, so resident).
const LIMIT: u64 = 96 << 20;
const HOLD_MB: u64 = 1024;

/// Where the limit is.
enum Limit {
    /// A cgroup v2 folder: the agent's `LABRUN_CGROUP_ROOT`.
    V2(PathBuf),
    /// A cgroup v1 memory folder the agent itself runs in.
    V1(PathBuf),
}

impl Limit {
    fn dir(&self) -> &Path {
        match self {
            Limit::V2(d) | Limit::V1(d) => d,
        }
    }
}

impl Drop for Limit {
    /// Ends what is left in the folder (a failed test's agent), removes it.
    fn drop(&mut self) {
        let dir = self.dir().to_path_buf();
        for _ in 0..50 {
            let mut empty = true;
            for entry in walk(&dir) {
                for pid in std::fs::read_to_string(entry.join("cgroup.procs"))
                    .unwrap_or_default()
                    .split_whitespace()
                {
                    empty = false;
                    let _ = Command::new("kill").args(["-KILL", pid]).status();
                }
            }
            // Deepest first: a cgroup is removed once its children are.
            for entry in walk(&dir).into_iter().rev() {
                let _ = std::fs::remove_dir(entry);
            }
            if empty && !dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        eprintln!("could not remove the test's cgroup {}", dir.display());
    }
}

/// `dir` and every cgroup below it, parents first.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        if let Ok(entries) = std::fs::read_dir(&out[i]) {
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    out.push(e.path());
                }
            }
        }
        i += 1;
    }
    out
}

/// The memory controller's place on this host, or what is missing.
fn make_limit() -> Result<Limit, String> {
    let name = format!("labrun-oom-test-{}", std::process::id());
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").map_err(|e| e.to_string())?;
    let mount_of = |fstype: &str, option: Option<&str>| {
        mounts.lines().find_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mut r = right.split_whitespace();
            let ok = r.next()? == fstype
                && option
                    .is_none_or(|o| r.nth(1).is_some_and(|opts| opts.split(',').any(|x| x == o)));
            let point = left.split_whitespace().nth(4)?;
            ok.then(|| PathBuf::from(point))
        })
    };
    if let Some(v2) = mount_of("cgroup2", None) {
        let controllers =
            std::fs::read_to_string(v2.join("cgroup.controllers")).unwrap_or_default();
        if controllers.split_whitespace().any(|c| c == "memory") {
            let _ = std::fs::write(v2.join("cgroup.subtree_control"), "+memory");
            let dir = v2.join(&name);
            std::fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
            let limit = Limit::V2(dir);
            write(&limit.dir().join("memory.max"), &LIMIT.to_string())?;
            write(&limit.dir().join("memory.swap.max"), "0").ok();
            return Ok(limit);
        }
    }
    let Some(v1) = mount_of("cgroup", Some("memory")) else {
        return Err("no memory controller: neither cgroup v2's nor a v1 memory hierarchy".into());
    };
    // Under the test's own memory cgroup: a container may allow no other.
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            let mut f = l.splitn(3, ':');
            let (_, ctl, path) = (f.next()?, f.next()?, f.next()?);
            ctl.split(',')
                .any(|c| c == "memory")
                .then(|| path.to_string())
        })
        .unwrap_or_else(|| "/".into());
    let dir = v1.join(own.trim_start_matches('/')).join(&name);
    std::fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
    let limit = Limit::V1(dir);
    write(
        &limit.dir().join("memory.limit_in_bytes"),
        &LIMIT.to_string(),
    )?;
    Ok(limit)
}

fn write(path: &Path, value: &str) -> Result<(), String> {
    std::fs::write(path, value).map_err(|e| format!("writing {value} to {}: {e}", path.display()))
}

fn python3() -> Option<String> {
    let out = Command::new("sh")
        .args(["-c", "command -v python3"])
        .output()
        .ok()?;
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !path.is_empty()).then_some(path)
}

#[test]
#[ignore = "needs root and a memory cgroup: `make test` runs it"]
fn a_tool_the_oom_killer_ends_is_recorded_as_oom() {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    assert!(root, "this test needs root: it makes a memory cgroup");
    let python3 = python3().expect("this test needs python3 (its tool holds memory)");
    let limit = make_limit().unwrap_or_else(|why| panic!("this test needs a memory cgroup: {why}"));

    let lab = Lab::new();
    // The tool is python3 itself (the step's process is the victim), holding
    // HOLD_MB written megabytes, 8 MB at a time.
    let hog = json!({
        "name": "hog",
        "version": "1",
        "binary": python3,
        "commands": {
            "init": {"argv": ["{bin}", "-c", "import os; os.makedirs('{repo}', exist_ok=True)"]},
            "backup": {"argv": ["{bin}", "-c",
                format!("held = [b'\\x01' * 8_000_000 for _ in range({})]", HOLD_MB / 8)],
                "cwd": "{source}"},
            "restore": {"argv": ["{bin}", "-c", "pass"]},
        },
    });
    let mut plan = base_plan("oom", 1, vec![hog]);
    plan["drop_caches"] = json!(false);
    lab.write_plan(&plan);
    let mut cmd = lab.command();
    match &limit {
        Limit::V2(dir) => {
            cmd.env("LABRUN_CGROUP_ROOT", dir);
        }
        Limit::V1(dir) => {
            // The agent, and so its tools, inside the limit from its start.
            let procs = dir.join("cgroup.procs");
            use std::os::unix::process::CommandExt;
            // SAFETY: only open/write/close between fork and exec.
            unsafe {
                cmd.pre_exec(move || std::fs::write(&procs, "0"));
            }
        }
    }
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));

    let records = lab.records();
    let backup = records
        .iter()
        .find(|r| r.step == Step::BACKUP_FULL)
        .unwrap_or_else(|| panic!("no backup record: {records:#?}"));
    assert!(!backup.ok);
    assert_eq!(
        backup.exit.as_ref().and_then(|e| e.signal),
        Some(9),
        "{backup:#?}"
    );
    let oom = backup
        .oom
        .as_ref()
        .unwrap_or_else(|| panic!("the OOM kill was not recognized: {backup:#?}"));
    assert!(oom.tool_sigkilled);
    match &limit {
        // The step's cgroup, under the limit, counted the kill.
        Limit::V2(_) => assert_eq!(oom.cgroup_oom_kills, Some(1), "{oom:#?}"),
        // No v2 memory controller: the kernel's log named the tool's pid.
        Limit::V1(_) => {
            assert_eq!(oom.victim.as_deref(), Some("python3"), "{oom:#?}");
            assert!(
                oom.kernel_log
                    .iter()
                    .any(|l| l.contains(&format!("Killed process {} (python3)", oom.pid.unwrap()))),
                "{oom:#?}"
            );
        }
    }
    let error = backup.error.as_deref().unwrap();
    assert!(
        error.starts_with("killed by the kernel's OOM killer (")
            && error.contains("): give the VM more memory or lower the scale"),
        "{error}"
    );
    eprintln!(
        "the record's oom: {}",
        serde_json::to_string_pretty(oom).unwrap()
    );
}
