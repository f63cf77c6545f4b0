//! The protocol's interpreter with a stand-in executor: no process runs, so
//! what is checked is the interpreter alone — which commands it asks for, in
//! which order, with which placeholders, and what it records.

use super::{RunOptions, RunOutcome, execute_with};
use crate::run::interrupt::Interrupt;
use crate::run::measure::{CommandSpec, Executor, MeasureError, Measurement};
use labrun_evidence::{ExitStatus, OomKill, StepRecord};
use serde_json::json;
use std::sync::Mutex;

/// Records each argv; `{bin} id` prints the next snapshot id, `{bin} slow`
/// runs into its watchdog (as a killed tool does), `{bin} fail` exits 1,
/// `{bin} oom` dies of SIGKILL with the OOM killer's evidence.
#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<String>>,
}

impl Executor for Recorder {
    fn run(&self, spec: &CommandSpec, _: &Interrupt) -> Result<Measurement, MeasureError> {
        let line = spec.argv.join(" ");
        let mut seen = self.seen.lock().unwrap();
        seen.push(line.clone());
        let ids = seen.iter().filter(|l| l.ends_with(" id")).count();
        let stdout = if line.ends_with(" id") {
            format!("id-{ids}\n")
        } else {
            String::new()
        };
        std::fs::write(spec.stdout, stdout).unwrap();
        // A backup says what it made, as kopia does, on stderr.
        let backups = seen.iter().filter(|l| l.contains(" backup ")).count();
        let stderr = if line.contains(" backup ") {
            format!("saved snapshot snap-{backups} in 1s\n")
        } else {
            String::new()
        };
        std::fs::write(spec.stderr, stderr).unwrap();
        let killed = line.ends_with(" slow") || line.ends_with(" oom");
        Ok(Measurement {
            wall_secs: 0.1,
            user_secs: 0.05,
            sys_secs: 0.01,
            max_rss_kib: 1000,
            exit: ExitStatus {
                code: (!killed).then_some(i32::from(line.ends_with(" fail"))),
                signal: killed.then_some(9),
            },
            timed_out: line.ends_with(" slow"),
            interrupted_by: None,
            tree: None,
            oom: line.ends_with(" oom").then(|| OomKill {
                victim: Some("sh".into()),
                pid: Some(4242),
                cgroup_oom_kills: Some(1),
                kernel_log: vec!["Out of memory: Killed process 4242 (sh)".into()],
                tool_sigkilled: true,
            }),
        })
    }
}

fn tool(name: &str, with_stats: bool) -> serde_json::Value {
    let mut commands = json!({
        "init": {"argv": ["{bin}", "init", "{repo}"]},
        "backup": {"argv": ["{bin}", "backup", "{snapshot}"], "cwd": "{source}"},
        "snapshot_id": {"argv": ["{bin}", "id"]},
        "forget": {"argv": ["{bin}", "forget", "{snapshot}"]},
        "slow": {"argv": ["{bin}", "slow"]},
        "fail": {"argv": ["{bin}", "fail"]},
        "hog": {"argv": ["{bin}", "oom"]},
    });
    if with_stats {
        commands["stats"] = json!({"argv": ["{bin}", "stats"]});
    }
    json!({"name": name, "version": "1", "binary": "/bin/sh", "commands": commands})
}

/// What a run left: its outcome, the argv lines asked for, the records, and
/// the folder it ran in (paths in the lines are under it).
struct Ran {
    outcome: RunOutcome,
    seen: Vec<String>,
    records: Vec<StepRecord>,
    dir: tempfile::TempDir,
}

/// Runs `protocol` for tools alpha (with `stats`) and beta.
fn run(protocol: serde_json::Value) -> Ran {
    run_tools(protocol, json!([tool("alpha", true), tool("beta", false)]))
}

fn run_tools(protocol: serde_json::Value, tools: serde_json::Value) -> Ran {
    let dir = tempfile::tempdir().unwrap();
    let plan = json!({
        "schema_version": labrun_evidence::SCHEMA_VERSION,
        "run_id": "interp-2",
        "cycles": 1,
        "dataset": {"kind": "synthetic", "seed": 3, "scale": 0.0002},
        "rotate_tools": false,
        "tools": tools,
        "protocol": protocol,
    });
    let plan_path = dir.path().join("plan.json");
    std::fs::write(&plan_path, plan.to_string()).unwrap();
    let recorder = Recorder::default();
    let opts = RunOptions {
        plan: plan_path,
        work: dir.path().join("work"),
        evidence: dir.path().join("evidence"),
        datasets: None,
        lock: None,
        remove_plan: false,
        echo_events: false,
    };
    let outcome = execute_with(&opts, Interrupt::new(), &recorder).unwrap();
    let records = std::fs::read_to_string(dir.path().join("evidence/records.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seen = recorder.seen.lock().unwrap().clone();
    Ran {
        outcome,
        seen,
        records,
        dir,
    }
}

#[test]
fn a_step_the_oom_killer_ended_says_so() {
    let Ran { records, .. } = run(json!([
        "source",
        {"run": "init"},
        {"run": "hog", "name": "backup_full", "may_fail": true},
        {"run": "fail", "name": "plain_failure", "may_fail": true}
    ]));
    let of = |step: &str| {
        records
            .iter()
            .find(|r| r.tool == "alpha" && r.step.as_str() == step)
            .unwrap_or_else(|| panic!("no {step}"))
    };
    let hog = of("backup_full");
    assert!(!hog.ok);
    assert_eq!(hog.oom.as_ref().and_then(|o| o.pid), Some(4242));
    let error = hog.error.as_deref().unwrap();
    assert!(
        error.starts_with(
            "killed by the kernel's OOM killer (sh, pid 4242; cgroup memory.events oom_kill 1, \
             kernel log, the tool died of SIGKILL): give the VM more memory or lower the scale; see "
        ),
        "{error}"
    );
    let plain = of("plain_failure");
    assert!(plain.oom.is_none());
    assert!(
        plain
            .error
            .as_deref()
            .unwrap()
            .starts_with("exited with code 1")
    );
}

#[test]
fn a_kill_at_a_fraction_of_an_earlier_step_and_a_failure_allowed() {
    let Ran {
        outcome,
        seen,
        records,
        ..
    } = run(json!([
        "source",
        {"run": "init"},
        {"run": "backup", "name": "backup_full", "makes": "s1"},
        {"run": "slow", "name": "killed", "kill_after": {"fraction": 0.5, "of": "backup_full"}},
        {"run": "fail", "name": "check_after_kill", "may_fail": true, "timed": false},
        {"run": "init", "name": "after"}
    ]));
    // The failure allowed ends nothing: both tools ran every step, and the
    // run passed.
    assert_eq!(outcome, RunOutcome::Passed);
    assert_eq!(
        seen.iter().filter(|l| l.contains(" init ")).count(),
        4,
        "{seen:#?}"
    );
    for tool in ["alpha", "beta"] {
        let of = |step: &str| {
            records
                .iter()
                .find(|r| r.tool == tool && r.step.as_str() == step)
                .unwrap_or_else(|| panic!("no {tool} {step}"))
        };
        let kill = of("killed").planned_kill.clone().expect("planned kill");
        let base = of("backup_full").wall_secs;
        assert!((kill.after_secs - 0.5 * base).abs() < 1e-9, "{kill:?}");
        let from = kill.fraction_of.expect("fraction_of");
        assert_eq!(
            (from.step.as_str(), from.step_wall_secs),
            ("backup_full", base)
        );
        let failed = of("check_after_kill");
        assert!(!failed.ok && failed.may_fail, "{failed:?}");
        assert!(of("after").ok);
    }
}

#[test]
fn the_protocol_runs_as_written() {
    let Ran {
        outcome,
        seen,
        records,
        dir,
    } = run(json!([
        "source",
        {"run": "init"},
        {"run": "backup", "name": "backup_full", "makes": "s1"},
        {"run": "backup", "name": "backup_2", "makes": "s2"},
        {"run": "forget", "name": "forget_s1", "snapshot": "s1"},
        {"run": "slow", "name": "killed", "kill_after_secs": 5},
        {"run": "stats", "optional": true}
    ]));
    assert_eq!(outcome, RunOutcome::Passed);

    let tail = |l: &str| l.split_whitespace().skip(1).collect::<Vec<_>>().join(" ");
    let wanted_alpha = [
        "cp -a --reflink=auto",
        "init",
        "backup s1",
        "id",
        "backup s2",
        "id",
        "forget id-1",
        "slow",
        "stats",
    ];
    let alpha_seen: Vec<String> = seen
        .iter()
        .take_while(|l| !l.contains("c1-beta"))
        .map(|l| {
            if l.starts_with("cp ") {
                "cp -a --reflink=auto".to_string()
            } else {
                tail(l).replace(&*dir.path().to_string_lossy(), "")
            }
        })
        .map(|l| {
            // `init <repo>`: the repository's path is the work tree's.
            if l.starts_with("init ") {
                "init".to_string()
            } else {
                l
            }
        })
        .collect();
    assert_eq!(alpha_seen, wanted_alpha, "all: {seen:#?}");
    // beta has no `stats`: the optional step is skipped, nothing asked.
    let beta_last = seen.last().unwrap();
    assert!(beta_last.ends_with(" slow"), "{seen:#?}");

    let of = |tool: &str, step: &str| {
        records
            .iter()
            .find(|r| r.tool == tool && r.step.as_str() == step)
            .unwrap_or_else(|| panic!("no {tool} {step}"))
    };
    assert_eq!(of("alpha", "backup_full").snapshot.as_deref(), Some("id-1"));
    assert_eq!(of("alpha", "forget_s1").snapshot.as_deref(), Some("id-1"));
    let killed = of("alpha", "killed");
    assert!(
        killed.ok && killed.planned_kill.as_ref().is_some_and(|k| k.killed),
        "{killed:?}"
    );
    assert!(of("alpha", "stats").timed);
    assert!(
        !records
            .iter()
            .any(|r| r.tool == "beta" && r.step.as_str() == "stats")
    );
}

#[test]
fn a_snapshot_id_read_from_the_backups_output_runs_no_second_command() {
    let with_pattern = |name: &str, pattern: &str| {
        let mut t = tool(name, false);
        t["commands"].as_object_mut().unwrap().remove("snapshot_id");
        t["snapshot_id_pattern"] = json!(pattern);
        t
    };
    let Ran { seen, records, .. } = run_tools(
        json!([
            "source",
            {"run": "init"},
            {"run": "backup", "name": "backup_full", "makes": "s1"},
            {"run": "forget", "name": "forget_s1", "snapshot": "s1"}
        ]),
        json!([
            with_pattern("gamma", r"saved snapshot (\S+) in"),
            with_pattern("delta", r"made ID (\S+)")
        ]),
    );
    assert!(!seen.iter().any(|l| l.ends_with(" id")), "{seen:#?}");
    let of = |tool: &str, step: &str| {
        records
            .iter()
            .find(|r| r.tool == tool && r.step.as_str() == step)
            .unwrap_or_else(|| panic!("no {tool} {step}"))
    };
    assert_eq!(
        of("gamma", "backup_full").snapshot.as_deref(),
        Some("snap-1")
    );
    assert!(
        seen.iter().any(|l| l.ends_with("forget snap-1")),
        "{seen:#?}"
    );
    // A pattern that finds nothing fails the backup, saying where it looked.
    let d = of("delta", "backup_full");
    assert!(!d.ok, "{d:?}");
    let why = d.error.as_deref().unwrap_or_default();
    assert!(
        why.contains("made ID (\\S+)") && why.contains("logs/delta/c1-backup_full.err"),
        "{why}"
    );
}

/// The [`Recorder`], with an `fstrim` that answers as a file system whose
/// disk passes no discards.
#[derive(Default)]
struct NoDiscard(Recorder);

impl Executor for NoDiscard {
    fn run(&self, spec: &CommandSpec, i: &Interrupt) -> Result<Measurement, MeasureError> {
        self.0.run(spec, i)
    }

    fn fstrim(&self, mount: &std::path::Path) -> std::io::Result<std::process::Output> {
        use std::os::unix::process::ExitStatusExt;
        let mount = mount.display();
        self.0
            .seen
            .lock()
            .unwrap()
            .push(format!("fstrim -v {mount}"));
        Ok(std::process::Output {
            status: std::process::ExitStatus::from_raw(1 << 8),
            stdout: Vec::new(),
            stderr: format!("fstrim: {mount}: the discard operation is not supported\n").into(),
        })
    }
}

#[test]
fn a_timed_step_is_settled_by_a_trim_after_the_cache_drop_and_the_labs_cooldown() {
    use labrun_evidence::record::TrimOutcome;
    let dir = tempfile::tempdir().unwrap();
    let plan = json!({
        "schema_version": labrun_evidence::SCHEMA_VERSION,
        "run_id": "settle-1",
        "cycles": 1,
        "dataset": {"kind": "synthetic", "seed": 3, "scale": 0.0002},
        "rotate_tools": false,
        "trim": true,
        "cooldown_secs": 1,
        "tools": [tool("alpha", false)],
        "protocol": ["source", {"run": "init"}],
    });
    let plan_path = dir.path().join("plan.json");
    std::fs::write(&plan_path, plan.to_string()).unwrap();
    let executor = NoDiscard::default();
    let opts = RunOptions {
        plan: plan_path,
        work: dir.path().join("work"),
        evidence: dir.path().join("evidence"),
        datasets: None,
        lock: None,
        remove_plan: false,
        echo_events: false,
    };
    let started = std::time::Instant::now();
    let outcome = execute_with(&opts, Interrupt::new(), &executor).unwrap();
    assert_eq!(outcome, RunOutcome::Passed);
    let records: Vec<StepRecord> =
        std::fs::read_to_string(dir.path().join("evidence/records.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    let init = records
        .iter()
        .find(|r| r.step.as_str() == "init")
        .expect("an init record");
    assert!(init.timed);
    // The cool-down happened, and only before the timed step.
    assert_eq!(init.cooldown_secs, Some(1));
    assert!(started.elapsed() >= std::time::Duration::from_secs(1));
    assert!(
        records
            .iter()
            .filter(|r| !r.timed)
            .all(|r| r.cooldown_secs.is_none() && r.trim.is_none())
    );
    // The trim follows the cache drop, which only root may do.
    let seen = executor.0.seen.lock().unwrap().clone();
    let trims = seen.iter().filter(|l| l.starts_with("fstrim -v ")).count();
    if init.cache_dropped {
        let trim = init.trim.as_ref().expect("a trim after the cache drop");
        assert!(
            dir.path().starts_with(&trim.mount),
            "{} does not hold the work folder",
            trim.mount
        );
        assert!(
            matches!(&trim.outcome, TrimOutcome::NotSupported { detail } if detail.ends_with("the discard operation is not supported")),
            "{trim:?}"
        );
        assert_eq!(trims, 1, "{seen:?}");
    } else {
        assert!(init.trim.is_none() && trims == 0, "{seen:?}");
    }
}
