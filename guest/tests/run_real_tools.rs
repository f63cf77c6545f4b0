//! End to end with the real restic and borg from Debian's packages (installed
//! by scripts/host-setup.sh): two cycles on a tiny dataset, every step
//! recorded, both restores verified, repositories that grow after the change.

mod common;

use common::*;
use labrun_evidence::{Event, Step};
use serde_json::json;

fn restic() -> serde_json::Value {
    json!({
        "name": "restic", "version": "0.14", "binary": "/usr/bin/restic",
        "env": {"RESTIC_PASSWORD": PASSWORD, "RESTIC_CACHE_DIR": "{work}/cache"},
        "secret_env": ["RESTIC_PASSWORD"],
        "commands": {
            "init": {"argv": ["{bin}", "init", "-r", "{repo}"]},
            // Relative paths in the snapshot, so the restore lands in {target} itself.
            "backup": {"argv": ["{bin}", "backup", "-r", "{repo}", "."], "cwd": "{source}"},
            "restore": {"argv": ["{bin}", "restore", "latest", "-r", "{repo}", "--target", "{target}"]}
        }
    })
}

fn borg() -> serde_json::Value {
    json!({
        "name": "borg", "version": "1.2", "binary": "/usr/bin/borg",
        "env": {"BORG_PASSPHRASE": PASSWORD, "BORG_BASE_DIR": "{work}"},
        "secret_env": ["BORG_PASSPHRASE"],
        "commands": {
            "init": {"argv": ["{bin}", "init", "--encryption=repokey-blake2", "{repo}"]},
            "backup": {"argv": ["{bin}", "create", "--stats", "{repo}::{snapshot}", "."], "cwd": "{source}"},
            "restore": {"argv": ["{bin}", "extract", "{repo}::{snapshot}"], "cwd": "{target}"},
            "repo_size": {"argv": ["du", "-sB1", "{repo}"]}
        }
    })
}

#[test]
fn restic_and_borg_two_cycles_end_to_end() {
    for bin in ["/usr/bin/restic", "/usr/bin/borg"] {
        assert!(
            std::path::Path::new(bin).exists(),
            "{bin} is missing: run scripts/host-setup.sh (installs restic and borgbackup)"
        );
    }
    let lab = Lab::new();
    let plan = base_plan("e2e", 2, vec![restic(), borg()]);
    let out = lab.run(&plan);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));

    let records = lab.records();
    // The dataset once, then every step of every tool cycle.
    assert_eq!(records[0].step, Step::GENERATE);
    assert_eq!((records[0].tool.as_str(), records[0].cycle), ("", 0));
    assert_eq!(records.len(), 1 + 2 * 2 * full_cycle().len());
    for tool in ["restic", "borg"] {
        for cycle in 1..=2 {
            assert_eq!(
                steps_of(&records, tool, cycle),
                full_cycle(),
                "{tool} cycle {cycle}"
            );
        }
    }
    assert!(records.iter().all(|r| r.ok), "{records:#?}");

    // Rotation: restic first in cycle 1, borg first in cycle 2.
    let order = |tool: &str, cycle| {
        records
            .iter()
            .find(|r| r.tool == tool && r.cycle == cycle)
            .unwrap()
            .order
    };
    assert_eq!((order("restic", 1), order("borg", 1)), (0, 1));
    assert_eq!((order("restic", 2), order("borg", 2)), (1, 0));

    for r in &records {
        let timed =
            ["init", "backup_full", "backup_incremental", "restore"].contains(&r.step.as_str());
        assert_eq!(r.timed, timed, "{r:?}");
        if timed {
            assert!(r.wall_secs > 0.0 && r.max_rss_kib > 1000, "{r:?}");
            assert!(r.user_secs > 0.0, "{r:?}");
            assert_eq!(r.exit.as_ref().unwrap().code, Some(0));
            // CI runs as root: the cache is really dropped.
            assert!(r.cache_dropped, "{r:?}");
            let err = lab.evidence().join(r.stderr_path.as_ref().unwrap());
            assert!(err.is_file(), "{}", err.display());
            // Each timed step ran in a cgroup of its own (this host's
            // cgroup v2): the tree's CPU is at least the tool's own, nothing
            // was left running, and its timeline is in the evidence.
            let tree = r.tree.as_ref().expect("tree meters on a timed step");
            assert_eq!(tree.unavailable, None, "{tree:?}");
            assert!(tree.source.starts_with("cgroup2 "), "{tree:?}");
            let tree_cpu = tree.user_secs.unwrap() + tree.sys_secs.unwrap();
            assert!(
                tree_cpu >= 0.9 * (r.user_secs + r.sys_secs),
                "{tree:?} {r:?}"
            );
            assert!(tree.leftovers.is_empty(), "{tree:?}");
            // The agent's own CPU while it waits and samples: a few ms plus
            // at most 1% of the step.
            assert!(
                tree.agent_cpu_secs <= 0.02 + 0.01 * r.wall_secs,
                "{tree:?} {r:?}"
            );
            let timeline = lab.evidence().join(tree.timeline_path.as_ref().unwrap());
            assert!(timeline.is_file(), "{}", timeline.display());
        } else {
            assert_eq!(r.tree, None, "{r:?}");
        }
    }

    for tool in ["restic", "borg"] {
        for cycle in 1..=2 {
            let find = |step| {
                records
                    .iter()
                    .find(|r| r.tool == tool && r.cycle == cycle && r.step == step)
                    .unwrap()
            };
            let full = find(Step::BACKUP_FULL).repo_size_bytes.unwrap();
            let incr = find(Step::BACKUP_INCREMENTAL).repo_size_bytes.unwrap();
            assert!(
                full > 0 && incr > full,
                "{tool} c{cycle}: {full} then {incr}"
            );
            let v = find(Step::VERIFY).verify.clone().unwrap();
            assert!(v.passed && v.files_checked > 10, "{tool} c{cycle}: {v:?}");
        }
    }

    // Events: stdout and events.jsonl say the same, start to finish.
    let events = lab.events();
    let stdout: Vec<Event> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(stdout, events);
    assert!(matches!(
        events.first(),
        Some(Event::RunStarted { cycles: 2, .. })
    ));
    assert!(matches!(
        events.last(),
        Some(Event::RunFinished {
            ok: true,
            stopped_because: None
        })
    ));
    let cycles_ok = events
        .iter()
        .filter(|e| matches!(e, Event::CycleFinished { ok: true, .. }))
        .count();
    assert_eq!(cycles_ok, 4);

    // The rest of the evidence; no password anywhere in it.
    let done: serde_json::Value =
        serde_json::from_slice(&std::fs::read(lab.evidence().join("done.json")).unwrap()).unwrap();
    assert_eq!(done["ok"], true);
    for m in [
        "manifests/generated.jsonl",
        "manifests/changed.jsonl",
        "plan.json",
    ] {
        assert!(lab.evidence().join(m).is_file(), "{m}");
    }
    for (path, bytes) in lab.evidence_files() {
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(PASSWORD), "password in {}", path.display());
    }
    // The work tree is cleaned up.
    assert!(!lab.work().join("e2e").exists());
}
