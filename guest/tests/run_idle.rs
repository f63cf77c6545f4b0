//! The agent spends no CPU while a tool runs (it blocks in wait, it does not
//! poll) and its own memory stays small.

mod common;

use common::*;
use serde_json::json;
use std::time::{Duration, Instant};

/// utime + stime of a process, in clock ticks, and its VmRSS in KiB.
fn cpu_ticks_and_rss(pid: u32) -> (u64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    // After the command name: field 3 is fields[0], so utime (14) and stime (15).
    let ticks = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let rss = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap()
        .parse()
        .unwrap();
    (ticks, rss)
}

#[test]
fn the_agent_sleeps_while_the_tool_runs() {
    let lab = Lab::new();
    let marker = lab.path("tool-running");
    let script = format!(
        "mkdir -p {{repo}}/snapshots; touch {}; sleep 3",
        marker.display()
    );
    let tool = sh_tool("sleepy", json!({"init": {"argv": ["{bin}", "-c", script]}}));
    let mut plan = base_plan("idle", 1, vec![tool]);
    plan["drop_caches"] = json!(false);
    lab.write_plan(&plan);
    let mut child = lab
        .command()
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !marker.exists() {
        assert!(Instant::now() < deadline, "the tool never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (before, _) = cpu_ticks_and_rss(child.id());
    std::thread::sleep(Duration::from_secs(2));
    let (after, rss_kib) = cpu_ticks_and_rss(child.id());
    assert!(child.wait().unwrap().success());
    // A tick is 10 ms; a polling loop would burn far more in 2 s.
    assert!(
        after - before <= 1,
        "agent used {} ticks while waiting",
        after - before
    );
    assert!(rss_kib < 32 * 1024, "agent RSS {rss_kib} KiB");
}
