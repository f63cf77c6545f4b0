//! `labrun bench` end to end without a VM: the lab names an existing machine,
//! which here is an OpenSSH server on 127.0.0.1 that this test starts. The
//! real binary pushes the agent, runs restic and borg from Debian's packages
//! at a tiny scale, pulls the evidence back and summarizes it.

mod common;
mod run_output;

use labrun_ssh::test_support::Sshd;
use run_output::{only_run_dir, records};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LABRUN: &str = env!("CARGO_BIN_EXE_labrun");

fn write_lab(dir: &Path, sshd: &Sshd, cycles: u32, scale: f64) -> PathBuf {
    common::target_lab(
        dir,
        sshd,
        "lab.yaml",
        "e2e",
        &format!("dataset: {{kind: synthetic, seed: 7, scale: {scale}}}"),
        cycles,
    )
}

fn labrun(lab: &Path, results: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(LABRUN);
    c.arg("-f")
        .arg(lab)
        .arg("bench")
        .arg("--plain")
        .arg("--tools")
        .arg("restic,borg")
        .arg("--results")
        .arg(results)
        .args(extra)
        // The run goes into a store of the test's, not the machine's.
        .env("LABRUN_DB", common::test_store(results));
    c
}

/// Every (tool, cycle) has the four timed steps and a passing restore.
fn assert_complete(run: &Path, cycles: u64) {
    let recs = records(run);
    for tool in ["restic", "borg"] {
        for cycle in 1..=cycles {
            for step in ["init", "backup_full", "backup_incremental", "restore"] {
                let r = recs
                    .iter()
                    .find(|r| r["tool"] == tool && r["cycle"] == cycle && r["step"] == step)
                    .unwrap_or_else(|| panic!("no {tool} cycle {cycle} {step} record"));
                assert_eq!(r["ok"], true, "{tool} c{cycle} {step}: {r}");
                assert_eq!(r["timed"], true);
            }
            // The restored tree's check is its own (untimed) record.
            let verify = recs
                .iter()
                .find(|r| r["tool"] == tool && r["cycle"] == cycle && r["step"] == "verify")
                .unwrap_or_else(|| panic!("no {tool} cycle {cycle} verify record"));
            assert_eq!(verify["verify"]["passed"], true, "{verify}");
            assert_eq!(verify["ok"], true, "{verify}");
            let full = recs
                .iter()
                .find(|r| r["tool"] == tool && r["cycle"] == cycle && r["step"] == "backup_full")
                .expect("full");
            let incr = recs
                .iter()
                .find(|r| {
                    r["tool"] == tool && r["cycle"] == cycle && r["step"] == "backup_incremental"
                })
                .expect("incremental");
            let (a, b) = (
                full["repo_size_bytes"].as_u64().unwrap_or(0),
                incr["repo_size_bytes"].as_u64().unwrap_or(0),
            );
            assert!(a > 0 && b > a, "{tool} c{cycle}: repo {a} -> {b}");
        }
    }
    let md = std::fs::read_to_string(run.join("summary.md")).expect("summary.md");
    for needle in ["restic", "borg", "restore", "ncremental"] {
        assert!(md.contains(needle), "summary.md lacks {needle}:\n{md}");
    }
    for f in [
        "summary.json",
        "summary.csv",
        "raw/environment.json",
        "raw/binary-sha256.txt",
        "raw/lab.yaml",
        "raw/plan.json",
    ] {
        assert!(run.join(f).is_file(), "{f} missing in {}", run.display());
    }
    let digests = std::fs::read_to_string(run.join("raw/binary-sha256.txt")).expect("digests");
    assert!(digests.contains("/usr/bin/restic") && digests.contains("/usr/bin/borg"));
    // Each tool's version, asked by the agent, reaches the summary.
    let versions: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(run.join("raw/tool-versions.json")).expect("tool-versions"),
    )
    .expect("tool-versions.json");
    for tool in ["restic", "borg"] {
        let v = versions[tool].as_str().unwrap_or("");
        assert!(v.starts_with(tool), "{tool}: {versions}");
        assert!(md.contains(v), "summary.md lacks {v}:\n{md}");
    }
    // The password reaches the tools through their environment only.
    for entry in common::files_under(run) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("lab-only-not-a-secret"),
            "a secret leaked into {}",
            entry.display()
        );
    }
}

#[test]
#[ignore = "runs real backup tools end to end over SSH, for minutes: `make test` runs it"]
fn bench_over_ssh_runs_every_cycle_and_summarizes() {
    let sshd = Sshd::start().expect("sshd");
    let dir = tempfile::tempdir().expect("tempdir");
    let lab = write_lab(dir.path(), &sshd, 2, 0.001);
    let results = dir.path().join("results");
    let text = common::bench_ok(&lab, &results, "restic,borg", &[], &sshd);
    assert!(text.contains("estimated duration"), "{text}");
    let run = only_run_dir(&results);
    assert_complete(&run, 2);
    // The run went into the results store (the test's: LABRUN_DB), and
    // bench said so and how to see it.
    assert!(text.contains("imported into the results store"), "{text}");
    assert!(text.contains("labrun site OUT --db"), "{text}");
    let mut store = labrun_store::Store::open(&common::test_store(&results)).expect("the store");
    let stored = store.runs(&Default::default()).expect("its runs");
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(stored[0].run_id, run.file_name().unwrap().to_string_lossy());
    // The plan held the tools' passwords; a target machine lives on.
    let remote = remote_run(dir.path(), &run);
    assert!(remote.is_dir() && !remote.join("plan.json").exists());
    // Where bench's own time went, phase by phase, in order.
    let phases: Vec<serde_json::Value> = std::fs::read_to_string(run.join("raw/host-phases.jsonl"))
        .expect("raw/host-phases.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a phase line"))
        .collect();
    let names: Vec<&str> = phases.iter().filter_map(|p| p["phase"].as_str()).collect();
    assert_eq!(
        names,
        [
            "connect",
            "target_checks",
            "estimate",
            "push_and_environment",
            "start_run",
            "follow",
            "pull",
            "summary"
        ]
    );
    let secs = |name: &str| {
        phases
            .iter()
            .find(|p| p["phase"] == name)
            .and_then(|p| p["secs"].as_f64())
            .unwrap_or(-1.0)
    };
    assert!(names.iter().all(|n| secs(n) >= 0.0), "{phases:?}");
    assert!(secs("follow") > 0.0, "{phases:?}");
}

#[test]
#[ignore = "runs real backup tools end to end over SSH, for minutes: `make test` runs it"]
fn attach_finishes_a_run_whose_client_was_killed() {
    let sshd = Sshd::start().expect("sshd");
    let dir = tempfile::tempdir().expect("tempdir");
    let lab = write_lab(dir.path(), &sshd, 2, 0.001);
    // The key named relative to the lab file, as a user writes it: found
    // from the lab's folder, whatever folder `--attach` runs in.
    let key = sshd.target().client_key;
    std::fs::copy(&key, dir.path().join("client-key")).expect("copy key");
    let text = std::fs::read_to_string(&lab).expect("lab");
    let text = text.replace(&format!("key: {}", key.display()), "key: client-key");
    assert!(text.contains("key: client-key"), "{text}");
    std::fs::write(&lab, text).expect("lab");
    let results = dir.path().join("results");
    let mut child = labrun(&lab, &results, &[])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn labrun");
    // Wait until the first step's evidence is on the host, then cut the client.
    let deadline = Instant::now() + Duration::from_secs(300);
    let run = loop {
        assert!(Instant::now() < deadline, "no evidence pulled within 300 s");
        let first = std::fs::read_dir(&results)
            .ok()
            .and_then(|mut rd| rd.next())
            .and_then(Result::ok);
        if let Some(e) = first.filter(|e| !records(&e.path()).is_empty()) {
            break e.path();
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    child.kill().expect("kill client");
    let _ = child.wait();
    let before = records(&run).len();
    assert!(before >= 1);

    // From another folder, with `-f` naming no file at all: an attached run
    // uses the lab its run named, nothing of the command line's.
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    let out = labrun(&elsewhere.join("no-such-lab.yaml"), &results, &["--attach"])
        .current_dir(&elsewhere)
        .output()
        .expect("run labrun --attach");
    assert!(
        out.status.success(),
        "attach failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        records(&run).len() > before,
        "attach pulled nothing new ({before} records before):\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_complete(&run, 2);
}

/// The folder of run `run` on the target (here, on this machine).
fn remote_run(dir: &Path, run: &Path) -> PathBuf {
    dir.join("remote/runs")
        .join(run.file_name().expect("run folder name"))
}

/// Signals the process group `pgid` (the agent's wrapper leads it), and
/// kills it should the test fail while it is stopped.
struct AgentGroup(i32);

impl AgentGroup {
    fn signal(&self, signal: &str) -> bool {
        Command::new("kill")
            .arg(format!("-{signal}"))
            .arg("--")
            .arg(format!("-{}", self.0))
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for AgentGroup {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.signal("KILL");
        }
    }
}

#[test]
#[ignore = "runs real backup tools end to end over SSH, for minutes: `make test` runs it"]
fn a_bench_killed_as_the_agent_starts_leaves_a_run_to_attach_and_blocks_a_second_one() {
    let sshd = Sshd::start().expect("sshd");
    let dir = tempfile::tempdir().expect("tempdir");
    let lab = write_lab(dir.path(), &sshd, 2, 0.001);
    let results = dir.path().join("results");
    // A debug build of labrun stops right after it started the agent, before
    // it notes the pid: where a `bench` killed at the wrong moment stops.
    let mut child = labrun(&lab, &results, &[])
        .env("LABRUN_TEST_HANG_AFTER_AGENT_START", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn labrun");
    let mut said = String::new();
    for line in BufReader::new(child.stderr.take().expect("stderr")).lines() {
        let line = line.expect("labrun's stderr");
        said.push_str(&line);
        said.push('\n');
        if line.contains("test hook: the agent started") {
            break;
        }
    }
    assert!(said.contains("test hook"), "labrun ended first:\n{said}");
    let run = only_run_dir(&results);
    let remote = remote_run(dir.path(), &run);
    let wrapper: i32 = std::fs::read_to_string(remote.join("agent.pid"))
        .expect("agent.pid in the guest")
        .trim()
        .parse()
        .expect("a pid");
    // The agent held still once it holds the machine's marker, so it is
    // sure to be running when the second `bench` looks (a tiny run could
    // otherwise end first).
    let run_id = run.file_name().unwrap().to_string_lossy().into_owned();
    let lock = dir.path().join("remote/agent.lock");
    let deadline = Instant::now() + Duration::from_secs(60);
    let taken = || {
        let text = std::fs::read_to_string(&lock).unwrap_or_default();
        serde_json::from_str::<labrun_evidence::AgentMarker>(text.trim())
            .is_ok_and(|m| m.run_id == run_id)
    };
    while !taken() {
        assert!(
            Instant::now() < deadline,
            "the agent never took {}",
            lock.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let agent = AgentGroup(wrapper);
    assert!(
        agent.signal("STOP"),
        "cannot stop the agent's group {wrapper}"
    );
    child.kill().expect("SIGKILL labrun");
    let _ = child.wait();

    let second = labrun(&lab, &results, &[]).output().expect("second bench");
    let text = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "a second run started:\n{text}");
    assert!(
        text.contains("already going on")
            && text.contains(&format!("labrun bench --attach {run_id}")),
        "{text}"
    );
    assert_eq!(
        only_run_dir(&results),
        run,
        "the refused bench made a run folder"
    );

    assert!(agent.signal("CONT"));
    let out = labrun(&lab, &results, &["--attach"])
        .output()
        .expect("run labrun --attach");
    assert!(
        out.status.success(),
        "attach failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_complete(&run, 2);
    // The plan held the tools' passwords; the machine lives on.
    assert!(
        !remote.join("plan.json").exists(),
        "the plan is left on the target"
    );
}

/// A small tmpfs, unmounted when dropped (the tests run as root, as CI does).
struct TinyDisk(PathBuf);

impl TinyDisk {
    fn mount(at: &Path, size: &str) -> TinyDisk {
        std::fs::create_dir_all(at).expect("mount point");
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .status()
            .expect("mount");
        assert!(status.success(), "mounting a tmpfs needs root, as in CI");
        TinyDisk(at.to_path_buf())
    }
}

impl Drop for TinyDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_dataset_the_target_cannot_hold_is_refused_with_what_to_do() {
    let sshd = Sshd::start().expect("sshd");
    let dir = tempfile::tempdir().expect("tempdir");
    // 0.05 is a 305 MB dataset, about 1.25 GB of disk in a run; the target's
    // folder has 128 MB (a third of it the agent).
    let lab = write_lab(dir.path(), &sshd, 1, 0.05);
    let _disk = TinyDisk::mount(&dir.path().join("remote"), "128m");
    let results = dir.path().join("results");
    let started = Instant::now();
    let out = labrun(&lab, &results, &[]).output().expect("run labrun");
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(started.elapsed() < Duration::from_secs(120), "{text}");
    for needle in [
        "the agent could not run",
        "not enough free space",
        "--scale",
        "vm.disk",
    ] {
        assert!(text.contains(needle), "{needle:?} missing:\n{text}");
    }
}

/// A target that refuses the connection: the error says where and what to
/// do, and no run folder is left behind.
#[test]
fn a_refused_connection_leaves_no_run_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lab = {
        let sshd = Sshd::start().expect("sshd");
        let lab = write_lab(dir.path(), &sshd, 1, 0.001);
        // The client key lives with the server: keep a copy.
        let text = std::fs::read_to_string(&lab).expect("lab");
        let key = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("key: "))
            .expect("the lab names its key")
            .trim_matches('"')
            .to_string();
        let kept = dir.path().join("client_key");
        std::fs::copy(&key, &kept).expect("copy the key");
        std::fs::write(&lab, text.replace(&key, kept.to_str().unwrap())).expect("lab");
        lab
        // The server stops here: its port now refuses.
    };
    let results = dir.path().join("results");
    let out = labrun(&lab, &results, &[]).output().expect("run labrun");
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("cannot reach 127.0.0.1:"), "{text}");
    let left: Vec<_> = std::fs::read_dir(&results)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "a refused bench left {left:?}");
}

/// A tool missing on the target is refused before anything is pushed, with
/// the installed ones to run instead.
#[test]
fn a_tool_missing_on_the_target_is_refused_with_the_others_to_run() {
    let sshd = Sshd::start().expect("sshd");
    let dir = tempfile::tempdir().expect("tempdir");
    let lab = write_lab(dir.path(), &sshd, 1, 0.001);
    let text = std::fs::read_to_string(&lab).expect("lab");
    let moved = text.replace("install: /usr/bin/restic", "install: /nonexistent/restic");
    assert_ne!(moved, text, "the lab names /usr/bin/restic");
    std::fs::write(&lab, moved).expect("write lab");
    let results = dir.path().join("results");
    let out = labrun(&lab, &results, &[]).output().expect("run labrun");
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    for needle in [
        "not installed in the guest: restic (/nonexistent/restic)",
        "labrun up",
        "--tools borg",
    ] {
        assert!(text.contains(needle), "{needle:?} missing:\n{text}");
    }
    // Refused before the agent went over.
    assert!(!dir.path().join("remote/bin/labrun-agent").exists());
}
