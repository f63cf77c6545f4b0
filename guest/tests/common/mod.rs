//! Helpers shared by the agent's integration tests: plans, a run of the real
//! binary, and readers for the evidence it leaves.

#![allow(dead_code)] // each test file uses its own subset

use labrun_evidence::{Event, Step, StepRecord};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const AGENT: &str = env!("CARGO_BIN_EXE_labrun-agent");
pub const PASSWORD: &str = "lab-only-not-a-secret-7f3a";

pub struct Lab {
    pub dir: tempfile::TempDir,
}

impl Lab {
    pub fn new() -> Lab {
        Lab {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
    pub fn plan_path(&self) -> PathBuf {
        self.path("plan.json")
    }
    pub fn work(&self) -> PathBuf {
        self.path("work")
    }
    pub fn evidence(&self) -> PathBuf {
        self.path("evidence")
    }

    pub fn write_plan(&self, plan: &Value) {
        std::fs::write(self.plan_path(), serde_json::to_vec_pretty(plan).unwrap()).unwrap();
    }

    pub fn command(&self) -> Command {
        let mut cmd = Command::new(AGENT);
        cmd.arg("run")
            .arg("--plan")
            .arg(self.plan_path())
            .arg("--work")
            .arg(self.work())
            .arg("--evidence")
            .arg(self.evidence());
        cmd
    }

    pub fn run(&self, plan: &Value) -> Output {
        self.write_plan(plan);
        self.command().output().unwrap()
    }

    pub fn records(&self) -> Vec<StepRecord> {
        read_lines(&self.evidence().join("records.jsonl"))
    }

    /// The failed records with their errors and the end of their stderr
    /// logs: what an assertion on the exit status should show.
    pub fn failures(&self) -> String {
        let mut out = String::new();
        for r in self.records().iter().filter(|r| !r.ok) {
            let log = r
                .stderr_path
                .as_ref()
                .and_then(|p| std::fs::read_to_string(self.evidence().join(p)).ok())
                .unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(8).collect();
            out.push_str(&format!(
                "{} c{} {:?} {:?}: {}\n  {}\n",
                r.tool,
                r.cycle,
                r.step,
                r.history,
                r.error.as_deref().unwrap_or("-"),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n  ")
            ));
        }
        out
    }

    pub fn events(&self) -> Vec<Event> {
        read_lines(&self.evidence().join("events.jsonl"))
    }

    /// The messages of the run's warning events, in order.
    pub fn warnings(&self) -> Vec<String> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Warning { message } => Some(message),
                _ => None,
            })
            .collect()
    }

    /// Every file under the evidence directory, as bytes.
    pub fn evidence_files(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        let mut stack = vec![self.evidence()];
        while let Some(p) = stack.pop() {
            if p.is_dir() {
                for e in std::fs::read_dir(&p).unwrap() {
                    stack.push(e.unwrap().path());
                }
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
        out
    }
}

pub fn read_lines<T: serde::de::DeserializeOwned>(path: &Path) -> Vec<T> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

pub fn base_plan(run_id: &str, cycles: u32, tools: Vec<Value>) -> Value {
    json!({
        "schema_version": labrun_evidence::SCHEMA_VERSION,
        "run_id": run_id,
        "cycles": cycles,
        "dataset": {"kind": "synthetic", "seed": 11, "scale": 0.001},
        "step_timeout_secs": 300,
        "tools": tools,
    })
}

/// A stand-in backup tool made of `sh` and `cp`: snapshots are copies of
/// the source under the repository. `overrides` replaces commands by name.
pub fn sh_tool(name: &str, overrides: Value) -> Value {
    let mut commands = json!({
        "init": {"argv": ["{bin}", "-c", "mkdir -p {repo}/snapshots"]},
        "backup": {"argv": ["{bin}", "-c", "cp -a . {repo}/snapshots/{snapshot}"], "cwd": "{source}"},
        "restore": {"argv": ["{bin}", "-c", "cp -a {repo}/snapshots/{snapshot}/. {target}"]},
    });
    for (k, v) in overrides.as_object().unwrap() {
        commands[k] = v.clone();
    }
    json!({
        "name": name,
        "version": "1",
        "binary": "/bin/sh",
        "env": {"TOOL_PASSWORD": PASSWORD},
        "secret_env": ["TOOL_PASSWORD"],
        "commands": commands,
    })
}

pub fn steps_of(records: &[StepRecord], tool: &str, cycle: u32) -> Vec<Step> {
    records
        .iter()
        .filter(|r| r.tool == tool && r.cycle == cycle)
        .map(|r| r.step.clone())
        .collect()
}

pub fn full_cycle() -> Vec<Step> {
    vec![
        Step::GENERATE,
        Step::INIT,
        Step::BACKUP_FULL,
        Step::CHANGE,
        Step::BACKUP_INCREMENTAL,
        Step::RESTORE,
        Step::VERIFY,
    ]
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}
