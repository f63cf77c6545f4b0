//! The git-history protocol end to end with the real tools from Debian's
//! packages (restic, borg, duplicity; scripts/host-setup.sh installs them):
//! a small synthetic history, a backup per commit, then a restore of every
//! snapshot, each verified against its own commit. Commits differ from one
//! another, so a restore of the wrong snapshot fails its verification.
//! Also: a real repository read with git (a bundle), and a tool whose
//! restores are wrong.

mod common;

use common::*;
use labrun_evidence::{Step, StepRecord};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

const COMMITS: u32 = 4;

fn history_plan(run_id: &str, source: Value, tools: Vec<Value>) -> Value {
    let mut plan = base_plan(run_id, 1, tools);
    plan["dataset"] = json!({"kind": "git-history", "source": source});
    plan
}

fn generated() -> Value {
    json!({"generate": {"seed": 3, "commits": COMMITS, "files": 60, "mean_file_bytes": 3000, "churn": 0.1}})
}

fn restic() -> Value {
    json!({
        "name": "restic", "version": "0.14", "binary": "/usr/bin/restic",
        "env": {"RESTIC_PASSWORD": PASSWORD, "RESTIC_CACHE_DIR": "{work}/cache"},
        "secret_env": ["RESTIC_PASSWORD"],
        "commands": {
            "init": {"argv": ["{bin}", "init", "-r", "{repo}"]},
            "backup": {"argv": ["{bin}", "backup", "-r", "{repo}", "--tag", "{snapshot}", "."], "cwd": "{source}"},
            "restore": {"argv": ["{bin}", "restore", "latest", "--tag", "{snapshot}", "-r", "{repo}", "--target", "{target}"]}
        }
    })
}

fn borg() -> Value {
    json!({
        "name": "borg", "version": "1.2", "binary": "/usr/bin/borg",
        "env": {"BORG_PASSPHRASE": PASSWORD, "BORG_BASE_DIR": "{work}"},
        "secret_env": ["BORG_PASSPHRASE"],
        "commands": {
            "init": {"argv": ["{bin}", "init", "--encryption=repokey-blake2", "{repo}"]},
            "backup": {"argv": ["{bin}", "create", "{repo}::{snapshot}", "."], "cwd": "{source}"},
            "restore": {"argv": ["{bin}", "extract", "{repo}::{snapshot}"], "cwd": "{target}"}
        }
    })
}

fn duplicity() -> Value {
    let cache = "{work}/duplicity-cache";
    json!({
        "name": "duplicity", "version": "0.8", "binary": "/usr/bin/duplicity",
        "env": {"PASSPHRASE": PASSWORD, "HOME": "{work}"},
        "secret_env": ["PASSPHRASE"],
        "commands": {
            "init": {"argv": ["mkdir", "-p", "{repo}"]},
            "backup": {"argv": ["{bin}", "--archive-dir", cache, "--name", "lab", "{source}", "file://{repo}"]},
            // The time of the newest backup set, as duplicity names its files.
            "snapshot_id": {"argv": ["sh", "-c", "ls {repo} | sed -n 's/^duplicity-.*\\([0-9]\\{8\\}T[0-9]\\{6\\}Z\\)\\.manifest.*$/\\1/p' | sort | tail -n 1"]},
            "restore": {"argv": ["{bin}", "restore", "--archive-dir", cache, "--name", "lab", "--force", "--time", "{snapshot}", "file://{repo}", "{target}"]}
        }
    })
}

/// The steps of one tool cycle over a series of `n` commits.
fn series_steps(n: u32) -> Vec<(Step, Option<u32>)> {
    let mut out = vec![(Step::INIT, None)];
    for k in 1..=n {
        out.push((if k == 1 { Step::GENERATE } else { Step::CHANGE }, Some(k)));
        out.push((
            if k == 1 {
                Step::BACKUP_FULL
            } else {
                Step::BACKUP_INCREMENTAL
            },
            Some(k),
        ));
    }
    for k in 1..=n {
        out.push((Step::RESTORE, Some(k)));
        out.push((Step::VERIFY, Some(k)));
    }
    out
}

fn of_tool<'a>(records: &'a [StepRecord], tool: &str) -> Vec<&'a StepRecord> {
    records.iter().filter(|r| r.tool == tool).collect()
}

fn assert_series(records: &[StepRecord], tool: &str, n: u32) {
    let mine = of_tool(records, tool);
    let steps: Vec<_> = mine
        .iter()
        .map(|r| (r.step.clone(), r.history.as_ref().map(|h| h.index)))
        .collect();
    assert_eq!(steps, series_steps(n), "{tool}");
    for r in &mine {
        assert!(r.ok, "{tool} {} failed: {:?}", r.step, r.error);
        let timed =
            ["init", "backup_full", "backup_incremental", "restore"].contains(&r.step.as_str());
        assert_eq!(r.timed, timed, "{tool} {}", r.step);
    }
    let sizes: Vec<u64> = mine
        .iter()
        .filter(|r| [Step::BACKUP_FULL, Step::BACKUP_INCREMENTAL].contains(&r.step))
        .map(|r| r.repo_size_bytes.expect("repo size after each backup"))
        .collect();
    assert!(
        sizes.windows(2).all(|w| w[1] > w[0]),
        "{tool}: repository sizes {sizes:?}"
    );
    for r in mine.iter().filter(|r| r.step == Step::VERIFY) {
        let v = r.verify.as_ref().expect("verify outcome");
        assert!(v.passed && v.files_checked > 0, "{tool}: {v:?}");
    }
}

#[test]
fn restic_borg_and_duplicity_restore_every_snapshot_of_a_generated_history() {
    for bin in ["/usr/bin/restic", "/usr/bin/borg", "/usr/bin/duplicity"] {
        assert!(
            Path::new(bin).exists(),
            "{bin} is missing: run scripts/host-setup.sh"
        );
    }
    let lab = Lab::new();
    let plan = history_plan("hist", generated(), vec![restic(), borg(), duplicity()]);
    let out = lab.run(&plan);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}\nfailed steps:\n{}",
        stderr(&out),
        lab.failures()
    );
    let records = lab.records();
    for tool in ["restic", "borg", "duplicity"] {
        assert_series(&records, tool, COMMITS);
    }
    // One manifest per commit, each a different tree; the same in every
    // tool cycle (else a move would have failed).
    let manifests: Vec<Vec<u8>> = (1..=COMMITS)
        .map(|k| {
            std::fs::read(
                lab.evidence()
                    .join(format!("manifests/commit-{k:04}.jsonl")),
            )
            .unwrap()
        })
        .collect();
    assert!(manifests.windows(2).all(|w| w[0] != w[1]));
    // Each backup and restore has its own logs.
    for k in 1..=COMMITS {
        let log = lab
            .evidence()
            .join(format!("logs/borg/c1-s{k}-restore.err"));
        assert!(log.is_file(), "{}", log.display());
    }
    // duplicity restored by the time of each backup set, not the latest.
    let times: Vec<_> = of_tool(&records, "duplicity")
        .iter()
        .filter(|r| r.step == Step::RESTORE)
        .map(|r| r.snapshot.clone().unwrap_or_default())
        .collect();
    assert_eq!(times.len(), COMMITS as usize);
    assert!(
        times.iter().all(|t| t.len() == 16 && t.ends_with('Z')),
        "{times:?}"
    );
}

#[test]
fn a_restore_of_the_wrong_snapshot_fails_its_verification_and_the_others_still_run() {
    let lab = Lab::new();
    // Always restores the last snapshot, whatever it is asked.
    let tool = sh_tool(
        "wrong",
        json!({"restore": {"argv": ["{bin}", "-c", "cp -a {repo}/snapshots/s4/. {target}"]}}),
    );
    let out = lab.run(&history_plan("wrong", generated(), vec![tool]));
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let records = lab.records();
    let verified: Vec<(u32, bool)> = records
        .iter()
        .filter(|r| r.step == Step::VERIFY)
        .map(|r| (r.history.as_ref().unwrap().index, r.ok))
        .collect();
    assert_eq!(verified, [(1, false), (2, false), (3, false), (4, true)]);
    let first = records.iter().find(|r| r.step == Step::VERIFY).unwrap();
    assert!(
        first
            .error
            .as_deref()
            .unwrap_or("")
            .contains("snapshot 1 differs from commit 1"),
        "{:?}",
        first.error
    );
}

fn git(cwd: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .current_dir(cwd)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git (scripts/host-setup.sh installs it)");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn a_git_bundle_is_read_with_git_and_every_nth_commit_is_a_snapshot() {
    let lab = Lab::new();
    let repo = lab.path("upstream");
    std::fs::create_dir_all(repo.join("src/old")).unwrap();
    git(&repo, &["init", "-q"]);
    let mut ids = Vec::new();
    for i in 1..=7 {
        std::fs::write(repo.join(format!("src/file{i}.c")), format!("int v{i};\n")).unwrap();
        std::fs::write(repo.join("README"), format!("version {i}\n")).unwrap();
        if i == 1 {
            std::fs::write(repo.join("src/old/gone.c"), "x\n").unwrap();
        }
        if i == 4 {
            std::fs::remove_dir_all(repo.join("src/old")).unwrap();
        }
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", &format!("c{i}")]);
        ids.push(git(&repo, &["rev-parse", "HEAD"]));
    }
    git(&repo, &["tag", "first", &ids[0]]);
    let bundle = lab.path("upstream.bundle");
    git(
        &repo,
        &["bundle", "create", bundle.to_str().unwrap(), "--all"],
    );
    let source = json!({"repository": {
        "path": bundle.to_str().unwrap(),
        "commits": {"every": {"n": 2, "from": "first", "to": ids[6]}}
    }});
    let out = lab.run(&history_plan(
        "bundle",
        source,
        vec![sh_tool("copy", json!({}))],
    ));
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let records = lab.records();
    assert_eq!(
        (records[0].step.clone(), records[0].ok),
        (Step::GENERATE, true)
    );
    // first, then every 2nd after it: commits 1, 3, 5, 7.
    let moved: Vec<String> = records
        .iter()
        .filter(|r| [Step::GENERATE, Step::CHANGE].contains(&r.step) && r.history.is_some())
        .map(|r| r.history.as_ref().unwrap().commit.clone())
        .collect();
    assert_eq!(
        moved,
        [
            ids[0].clone(),
            ids[2].clone(),
            ids[4].clone(),
            ids[6].clone()
        ]
    );
    assert_series(&records, "copy", 4);
    // Commit 1 has src/old/gone.c, commit 5 has no src/old at all: git's move.
    let m1 = std::fs::read_to_string(lab.evidence().join("manifests/commit-0001.jsonl")).unwrap();
    let m3 = std::fs::read_to_string(lab.evidence().join("manifests/commit-0003.jsonl")).unwrap();
    assert!(
        m1.contains("src/old/gone.c") && !m3.contains("src/old"),
        "{m3}"
    );
    assert!(!m1.contains(".git"), "{m1}");
}

#[test]
fn a_missing_commit_stops_the_run_before_any_tool() {
    let lab = Lab::new();
    let repo = lab.path("upstream");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("a"), "a\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "a"]);
    let source = json!({"repository": {
        "path": repo.to_str().unwrap(),
        "commits": {"list": ["HEAD", "no-such-tag"]}
    }});
    let out = lab.run(&history_plan(
        "missing",
        source,
        vec![sh_tool("copy", json!({}))],
    ));
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(&out));
    assert!(
        stderr(&out).contains("`no-such-tag` names no commit"),
        "{}",
        stderr(&out)
    );
    assert!(lab.records().iter().all(|r| r.tool.is_empty()));
}
