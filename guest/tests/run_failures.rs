//! What bad input and bad luck get: a failing tool, a missing binary, a bad
//! plan, a timeout, a restore that does not match, a leaking tool, SIGTERM.
//! The tools here are `sh` scripts, so each case is exact and quick.

mod common;

use common::*;
use labrun_evidence::{Event, Step};
use serde_json::json;
use std::time::{Duration, Instant};

fn no_cache_drop(mut plan: serde_json::Value) -> serde_json::Value {
    plan["drop_caches"] = json!(false);
    plan
}

#[test]
fn a_failing_tool_fails_its_cycle_and_the_others_still_run() {
    let lab = Lab::new();
    let failing = sh_tool(
        "failing",
        json!({"backup": {"argv": ["{bin}", "-c", "echo 'repository locked' >&2; exit 3"], "cwd": "{source}"}}),
    );
    let plan = no_cache_drop(base_plan(
        "fail",
        1,
        vec![failing, sh_tool("fine", json!({}))],
    ));
    let out = lab.run(&plan);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));

    let records = lab.records();
    assert_eq!(
        steps_of(&records, "failing", 1),
        vec![Step::GENERATE, Step::INIT, Step::BACKUP_FULL],
        "the rest of the failed cycle is skipped"
    );
    let failed = records
        .iter()
        .find(|r| r.tool == "failing" && r.step == Step::BACKUP_FULL)
        .unwrap();
    assert!(!failed.ok);
    assert_eq!(failed.exit.as_ref().unwrap().code, Some(3));
    assert!(
        failed
            .error
            .as_ref()
            .unwrap()
            .contains("exited with code 3"),
        "{failed:?}"
    );
    let err_log =
        std::fs::read_to_string(lab.evidence().join(failed.stderr_path.as_ref().unwrap())).unwrap();
    assert_eq!(err_log, "repository locked\n");

    assert_eq!(steps_of(&records, "fine", 1), full_cycle());
    assert!(records.iter().filter(|r| r.tool == "fine").all(|r| r.ok));
    let events = lab.events();
    assert!(events.contains(&Event::CycleFinished {
        tool: "failing".into(),
        cycle: 1,
        ok: false
    }));
    assert!(events.contains(&Event::CycleFinished {
        tool: "fine".into(),
        cycle: 1,
        ok: true
    }));
    assert!(matches!(
        events.last(),
        Some(Event::RunFinished {
            ok: false,
            stopped_because: None
        })
    ));
    let done: serde_json::Value =
        serde_json::from_slice(&std::fs::read(lab.evidence().join("done.json")).unwrap()).unwrap();
    assert_eq!(done["ok"], false);
    assert_eq!(
        done["failed_cycles"],
        json!([{"tool": "failing", "cycle": 1}])
    );
}

#[test]
fn a_missing_binary_stops_everything_before_it_starts() {
    let lab = Lab::new();
    let mut tool = sh_tool("ghost", json!({}));
    tool["binary"] = json!("/opt/nowhere/restic");
    let out = lab.run(&base_plan(
        "missing",
        1,
        vec![sh_tool("fine", json!({})), tool],
    ));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("\"ghost\"")
            && err.contains("/opt/nowhere/restic")
            && err.contains("does not exist"),
        "{err}"
    );
    assert!(!lab.evidence().exists(), "nothing ran, nothing written");
}

#[test]
fn a_bad_plan_names_the_field() {
    let lab = Lab::new();
    let mut plan = base_plan("bad", 1, vec![sh_tool("fine", json!({}))]);
    plan["cycels"] = json!(3);
    let out = lab.run(&plan);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cycels"), "{}", stderr(&out));

    let mut plan = base_plan("bad", 1, vec![sh_tool("fine", json!({}))]);
    plan["tools"][0]["commands"]["init"]["argv"] = json!(["{bin}", "{repository}"]);
    let out = lab.run(&plan);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("{repository}"), "{}", stderr(&out));

    let mut plan = base_plan("bad", 1, vec![sh_tool("fine", json!({}))]);
    plan["schema_version"] = json!(99);
    let out = lab.run(&plan);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("schema_version 99"),
        "{}",
        stderr(&out)
    );
    assert!(!lab.evidence().exists());

    // Evidence inside the work tree would be deleted with it.
    let plan = base_plan("bad", 1, vec![sh_tool("fine", json!({}))]);
    lab.write_plan(&plan);
    let out = std::process::Command::new(AGENT)
        .arg("run")
        .arg("--plan")
        .arg(lab.plan_path())
        .arg("--work")
        .arg(lab.work())
        .arg("--evidence")
        .arg(lab.work().join("bad/evidence"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("overlap"), "{}", stderr(&out));
    let mut plan = base_plan("bad", 1, vec![sh_tool("fine", json!({}))]);
    plan["schema_version"] = json!(99);
    let out = lab.run(&plan);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("schema_version 99"),
        "{}",
        stderr(&out)
    );
    assert!(!lab.evidence().exists());
}

#[test]
fn a_step_over_the_time_limit_is_killed_and_recorded() {
    let lab = Lab::new();
    let slow = sh_tool(
        "slow",
        json!({"init": {"argv": ["{bin}", "-c", "sleep 60 & sleep 60"]}}),
    );
    let mut plan = no_cache_drop(base_plan("timeout", 1, vec![slow]));
    plan["step_timeout_secs"] = json!(1);
    let started = Instant::now();
    let out = lab.run(&plan);
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let init = lab
        .records()
        .into_iter()
        .find(|r| r.step == Step::INIT)
        .unwrap();
    assert!(!init.ok);
    assert!(
        init.error.as_ref().unwrap().contains("timed out after 1 s"),
        "{init:?}"
    );
    assert_eq!(init.exit.as_ref().unwrap().signal, Some(libc::SIGKILL));
    assert!(init.wall_secs >= 1.0 && init.wall_secs < 10.0, "{init:?}");
}

#[test]
fn a_restore_that_does_not_match_is_a_failed_verify_with_the_differences() {
    let lab = Lab::new();
    // Restores everything, then loses one file, damages another and adds
    // one: the streamed verify (the manifest merged with the walk) counts
    // each as the in-memory compare did.
    let script = "cp -a {repo}/snapshots/{snapshot}/. {target} && cd {target} \
                  && f=$(find . -type f | sort | head -n 1) && rm \"$f\" \
                  && g=$(find . -type f | sort | head -n 1) && printf x >> \"$g\" \
                  && printf x > zz-extra";
    let lossy = sh_tool(
        "lossy",
        json!({"restore": {"argv": ["{bin}", "-c", script]}}),
    );
    let out = lab.run(&no_cache_drop(base_plan("mismatch", 1, vec![lossy])));
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let records = lab.records();
    let restore = records.iter().find(|r| r.step == Step::RESTORE).unwrap();
    assert!(restore.ok, "the tool itself succeeded: {restore:?}");
    let verify = records.iter().find(|r| r.step == Step::VERIFY).unwrap();
    assert!(!verify.ok);
    let outcome = verify.verify.as_ref().unwrap();
    assert!(!outcome.passed);
    assert_eq!(
        (outcome.missing, outcome.changed, outcome.extra),
        (1, 1, 1),
        "{outcome:?}"
    );
    assert_eq!(outcome.first_differences.len(), 3, "{outcome:?}");
    let error = verify.error.as_ref().unwrap();
    assert!(
        error.contains("1 missing") && error.contains("1 changed") && error.contains("1 extra"),
        "{error}"
    );
}

#[test]
fn secrets_never_reach_evidence_even_when_a_tool_prints_them() {
    let lab = Lab::new();
    let leaky = sh_tool(
        "leaky",
        json!({
            "init": {"argv": ["{bin}", "-c", "mkdir -p {repo}/snapshots; echo \"password is $TOOL_PASSWORD\"; echo \"$TOOL_PASSWORD\" >&2"]},
            "snapshot_id": {"argv": ["{bin}", "-c", "echo \"$TOOL_PASSWORD\" >&2; echo {snapshot}"]}
        }),
    );
    let out = lab.run(&no_cache_drop(base_plan("secret", 1, vec![leaky])));
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(!String::from_utf8_lossy(&out.stdout).contains(PASSWORD));
    assert!(!stderr(&out).contains(PASSWORD));
    for (path, bytes) in lab.evidence_files() {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(PASSWORD),
            "password in {}",
            path.display()
        );
    }
    let init_log = std::fs::read_to_string(lab.evidence().join("logs/leaky/c1-init.out")).unwrap();
    assert_eq!(init_log, "password is <redacted>\n");
    let plan: serde_json::Value =
        serde_json::from_slice(&std::fs::read(lab.evidence().join("plan.json")).unwrap()).unwrap();
    assert_eq!(plan["tools"][0]["env"]["TOOL_PASSWORD"], "<redacted>");
}

#[test]
fn snapshot_ids_and_repo_size_commands_are_used() {
    let lab = Lab::new();
    // Snapshots are stored under an id the tool chooses; restore must use it.
    let tool = sh_tool(
        "ids",
        json!({
            "backup": {"argv": ["{bin}", "-c", "cp -a . {repo}/snapshots/id-{snapshot} && echo id-{snapshot} > {repo}/latest"], "cwd": "{source}"},
            "restore": {"argv": ["{bin}", "-c", "test {snapshot} = id-s2 && cp -a {repo}/snapshots/{snapshot}/. {target}"]},
            "snapshot_id": {"argv": ["{bin}", "-c", "echo listing; cat {repo}/latest; echo"]},
            "repo_size": {"argv": ["du", "-sB1", "{repo}"]}
        }),
    );
    let out = lab.run(&no_cache_drop(base_plan("ids", 1, vec![tool])));
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let records = lab.records();
    let snap = |step| {
        records
            .iter()
            .find(|r| r.step == step && r.tool == "ids")
            .unwrap()
    };
    assert_eq!(snap(Step::BACKUP_FULL).snapshot.as_deref(), Some("id-s1"));
    assert_eq!(
        snap(Step::BACKUP_INCREMENTAL).snapshot.as_deref(),
        Some("id-s2")
    );
    assert_eq!(snap(Step::RESTORE).snapshot.as_deref(), Some("id-s2"));
    let full = snap(Step::BACKUP_FULL).repo_size_bytes.unwrap();
    let incr = snap(Step::BACKUP_INCREMENTAL).repo_size_bytes.unwrap();
    assert!(full > 1_000_000 && incr > full, "{full} {incr}");
    assert!(
        lab.evidence()
            .join("logs/ids/c1-backup_full.snapshot_id.out")
            .is_file()
    );
}

#[test]
fn sigterm_mid_run_keeps_the_evidence_and_stops_the_tool() {
    let lab = Lab::new();
    let marker = lab.path("backup-started");
    let pid_file = lab.path("tool-pid");
    let script = format!(
        "echo $$ > {}; touch {}; sleep 60; cp -a . {{repo}}/snapshots/{{snapshot}}",
        pid_file.display(),
        marker.display()
    );
    let stuck = sh_tool(
        "stuck",
        json!({"backup": {"argv": ["{bin}", "-c", script], "cwd": "{source}"}}),
    );
    lab.write_plan(&no_cache_drop(base_plan("sigterm", 1, vec![stuck])));
    let mut child = lab
        .command()
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !marker.exists() {
        assert!(Instant::now() < deadline, "the backup never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let stopped_at = Instant::now();
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert!(stopped_at.elapsed() < Duration::from_secs(10));
    assert_eq!(status.code(), Some(128 + libc::SIGTERM));

    let records = lab.records();
    assert_eq!(
        steps_of(&records, "stuck", 1),
        vec![Step::GENERATE, Step::INIT, Step::BACKUP_FULL]
    );
    let last = records.last().unwrap();
    assert!(!last.ok);
    assert_eq!(last.error.as_deref(), Some("interrupted by SIGTERM"));
    assert_eq!(last.exit.as_ref().unwrap().signal, Some(libc::SIGKILL));
    let events = lab.events();
    assert_eq!(
        events.last(),
        Some(&Event::RunFinished {
            ok: false,
            stopped_because: Some("interrupted by SIGTERM".into())
        })
    );
    assert!(!lab.evidence().join("done.json").exists());
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    assert!(
        !std::path::Path::new(&format!("/proc/{}", pid.trim())).exists()
            || std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()))
                .unwrap_or_default()
                .contains(") Z"),
        "the tool survived the agent"
    );
}

/// A small tmpfs, unmounted when dropped (the test runs as root, as CI does).
struct TinyDisk(std::path::PathBuf);

impl TinyDisk {
    fn mount(at: std::path::PathBuf, size: &str) -> TinyDisk {
        std::fs::create_dir_all(&at).unwrap();
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&at)
            .status()
            .unwrap();
        assert!(status.success(), "mounting a tmpfs needs root, as in CI");
        TinyDisk(at)
    }
}

impl Drop for TinyDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

#[test]
fn a_full_disk_is_a_clear_error_and_keeps_the_evidence_so_far() {
    let lab = Lab::new();
    let _disk = TinyDisk::mount(lab.evidence(), "256k");
    // The tool's output fills the evidence file system; one of the agent's
    // next writes (a record, an event, done.json) then fails.
    let noisy = sh_tool(
        "noisy",
        json!({"init": {"argv": ["{bin}", "-c", "head -c 1000000 /dev/zero"]}}),
    );
    let out = lab.run(&no_cache_drop(base_plan("full", 1, vec![noisy])));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("disk is full"), "{err}");
    assert!(err.contains("cannot write evidence file"), "{err}");
    assert!(
        err.contains(&lab.evidence().display().to_string()),
        "the path is named: {err}"
    );
    assert!(
        !lab.evidence().join("done.json").exists(),
        "done.json means finished"
    );
    // What was measured before is still there, whole.
    let records = lab.records();
    assert!(!records.is_empty() && records[0].step == Step::GENERATE && records[0].ok);
    let last_stdout = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .to_string();
    match serde_json::from_str::<Event>(&last_stdout).unwrap() {
        Event::RunFinished {
            ok: false,
            stopped_because: Some(why),
        } => assert!(why.contains("disk is full"), "{why}"),
        e => panic!("last event {e:?}"),
    }
}

#[test]
fn without_root_the_cache_is_not_dropped_and_the_records_say_so() {
    use std::os::unix::fs::PermissionsExt;
    let lab = Lab::new();
    std::fs::set_permissions(lab.dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    lab.write_plan(&base_plan("nonroot", 1, vec![sh_tool("fine", json!({}))]));
    // A copy `nobody` can reach wherever the checkout lives (CI's may be
    // under a 0700 home).
    let agent = lab.path("labrun-agent");
    std::fs::copy(AGENT, &agent).unwrap();
    // `nobody`, through util-linux's setpriv (part of every Debian system).
    let out = std::process::Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            AGENT,
            "run",
            "--plan",
        ])
        .arg(lab.plan_path())
        .arg("--work")
        .arg(lab.work())
        .arg("--evidence")
        .arg(lab.evidence())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let records = lab.records();
    assert!(records.iter().any(|r| r.timed));
    assert!(records.iter().all(|r| !r.cache_dropped), "{records:#?}");
    let warnings = lab.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("not root"), "{warnings:?}");
}

#[test]
fn evidence_reached_through_a_symlink_into_the_work_tree_is_refused() {
    let lab = Lab::new();
    let plan = no_cache_drop(base_plan("sym", 1, vec![sh_tool("fine", json!({}))]));
    lab.write_plan(&plan);
    std::fs::create_dir_all(lab.work()).unwrap();
    let run = |work: &std::path::Path, evidence: &std::path::Path| {
        std::process::Command::new(AGENT)
            .arg("run")
            .arg("--plan")
            .arg(lab.plan_path())
            .arg("--work")
            .arg(work)
            .arg("--evidence")
            .arg(evidence)
            .output()
            .unwrap()
    };
    // The work folder spelled through a symlink; the evidence under its target.
    let work_link = lab.path("work-link");
    std::os::unix::fs::symlink(lab.work(), &work_link).unwrap();
    let out = run(&work_link, &lab.work().join("sym/evidence"));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("overlap"), "{}", stderr(&out));
    assert!(!lab.work().join("sym").exists(), "nothing was created");
    // The evidence folder spelled through a symlink into the work folder.
    let ev_link = lab.path("ev-link");
    std::os::unix::fs::symlink(lab.work(), &ev_link).unwrap();
    let out = run(&lab.work(), &ev_link.join("sym/evidence"));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("overlap"), "{}", stderr(&out));
    assert!(!lab.work().join("sym").exists(), "nothing was created");
    // A symlink that leads nowhere cannot be resolved: refused too.
    let dangling = lab.path("dangling");
    std::os::unix::fs::symlink(lab.path("nowhere/at/all"), &dangling).unwrap();
    let out = run(&lab.work(), &dangling.join("evidence"));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot resolve evidence directory"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_plan_with_the_passwords_is_removed_however_the_run_ends() {
    let run_removing = |lab: &Lab, plan: &serde_json::Value| {
        lab.write_plan(plan);
        lab.command().arg("--remove-plan").output().unwrap()
    };
    // Passed: the evidence keeps the plan, without the password.
    let lab = Lab::new();
    let out = run_removing(
        &lab,
        &no_cache_drop(base_plan("passed", 1, vec![sh_tool("fine", json!({}))])),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        !lab.plan_path().exists(),
        "the plan is left after a passing run"
    );
    let kept = std::fs::read_to_string(lab.evidence().join("plan.json")).unwrap();
    assert!(
        kept.contains("<redacted>") && !kept.contains(PASSWORD),
        "{kept}"
    );
    // A step failed.
    let lab = Lab::new();
    let failing = sh_tool(
        "failing",
        json!({"init": {"argv": ["{bin}", "-c", "exit 3"]}}),
    );
    let out = run_removing(&lab, &no_cache_drop(base_plan("failed", 1, vec![failing])));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        !lab.plan_path().exists(),
        "the plan is left after a failed run"
    );
    // Refused before it began.
    let lab = Lab::new();
    let mut ghost = sh_tool("ghost", json!({}));
    ghost["binary"] = json!("/opt/nowhere/restic");
    let out = run_removing(&lab, &base_plan("refused", 1, vec![ghost]));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        !lab.plan_path().exists(),
        "the plan is left after a refused run"
    );
    // Interrupted while a tool runs.
    let lab = Lab::new();
    let started = lab.path("started");
    let script = format!(
        "mkdir -p {{repo}}/snapshots; touch {}; sleep 60",
        started.display()
    );
    let stuck = sh_tool("stuck", json!({"init": {"argv": ["{bin}", "-c", script]}}));
    lab.write_plan(&no_cache_drop(base_plan("stopped", 1, vec![stuck])));
    let mut child = lab
        .command()
        .arg("--remove-plan")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !started.exists() {
        assert!(Instant::now() < deadline, "the tool never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert_eq!(child.wait().unwrap().code(), Some(128 + libc::SIGTERM));
    assert!(
        !lab.plan_path().exists(),
        "the plan is left after a stopped run"
    );
    // Without the flag, a plan given by hand stays where it was.
    let lab = Lab::new();
    let out = lab.run(&no_cache_drop(base_plan(
        "kept",
        1,
        vec![sh_tool("fine", json!({}))],
    )));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(lab.plan_path().exists());
}

#[test]
fn a_dataset_the_disk_cannot_hold_is_refused_before_any_of_it_is_written() {
    let lab = Lab::new();
    let _disk = TinyDisk::mount(lab.work(), "64m");
    // Scale 0.05 is a 305 MB dataset: a run needs about 1.25 GB.
    let mut plan = no_cache_drop(base_plan("too-big", 1, vec![sh_tool("fine", json!({}))]));
    plan["dataset"]["scale"] = json!(0.05);
    let started = Instant::now();
    let out = lab.run(&plan);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10), "{err}");
    for needle in [
        "not enough free space",
        &lab.work().display().to_string(),
        "bytes) is free",
        "--scale",
        "vm.disk",
    ] {
        assert!(err.contains(needle), "{needle:?} missing: {err}");
    }
    assert!(!lab.work().join("too-big").exists(), "a work tree was made");
    assert!(!lab.evidence().exists(), "evidence was written");
    // A dataset that fits runs on the same disk (scale 0.001: 6 MB).
    let out = lab.run(&no_cache_drop(base_plan(
        "fits",
        1,
        vec![sh_tool("fine", json!({}))],
    )));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
