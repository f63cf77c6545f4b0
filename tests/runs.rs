//! `labrun runs`: the committed packs in docs/ (copied into a temporary
//! folder) and hand-made folders, broken and alive.

use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const LABRUN: &str = env!("CARGO_BIN_EXE_labrun");

fn docs(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs").join(rel)
}

/// `labrun runs DIR [extra]`, run from another folder; stdout, which must be
/// a success.
fn runs(dir: &Path, extra: &[&str]) -> String {
    let out = Command::new(LABRUN)
        .arg("runs")
        .arg(dir)
        .args(extra)
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn runs_json(dir: &Path) -> Vec<Value> {
    let text = runs(dir, &["--json"]);
    serde_json::from_str::<Vec<Value>>(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn by_id<'a>(list: &'a [Value], id: &str) -> &'a Value {
    list.iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("{id} not listed: {list:#?}"))
}

#[test]
fn the_committed_packs_newest_first_with_what_compares() {
    let tmp = tempfile::tempdir().unwrap();
    for pack in [
        "fidelity/default-20261201T144749Z-2ab023.tar.gz",
        "scale/scale01-20261202T002837Z/scale01-20261202T002837Z-31c733.tar.gz",
        "scale/scale01-20261202T072118Z/scale01-20261202T072118Z-31c733.tar.gz",
        "network/network-20261202T082714Z-f68979.tar.gz",
        "verdicts/regression-20261202T061642Z-5df28d.tar.gz",
    ] {
        let from = docs(pack);
        std::fs::copy(&from, tmp.path().join(from.file_name().unwrap())).unwrap();
    }
    let list = runs_json(tmp.path());
    let ids: Vec<&str> = list.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "network-20261202T082714Z-f68979",
            "scale01-20261202T072118Z-31c733",
            "regression-20261202T061642Z-5df28d",
            "scale01-20261202T002837Z-31c733",
            "default-20261201T144749Z-2ab023",
        ],
        "newest first"
    );

    let finished = by_id(&list, "scale01-20261202T072118Z-31c733");
    assert_eq!(finished["status"], "finished");
    assert_eq!(finished["ok"], true);
    assert_eq!(finished["lab"], "scale01");
    assert_eq!(finished["started"], "2026-12-02T07:21:18Z");
    assert_eq!(finished["packed"], true);
    assert_eq!(finished["cycles_planned"], 3);
    assert_eq!(finished["cycles_recorded"], 3);
    assert_eq!(
        finished["dataset"],
        "synthetic, change_seed 2, scale 0.1, seed 1"
    );
    let tools: Vec<String> = finished["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            format!(
                "{} {}",
                t["name"].as_str().unwrap(),
                t["version"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(tools, ["restic 0.19.1", "borg 1.4.5", "kopia 0.23.1"]);
    assert!(
        finished["machine_class"]
            .as_str()
            .unwrap()
            .starts_with("AMD EPYC, 2 CPUs, 24 GiB, kernel "),
        "{finished}"
    );

    // The same lab stopped by SIGTERM in its third cycle: same dataset and
    // machine, so it compares with the finished one (and with nothing else).
    let stopped = by_id(&list, "scale01-20261202T002837Z-31c733");
    assert_eq!(stopped["status"], "stopped");
    assert_eq!(stopped["because"], "interrupted by SIGTERM");
    assert_eq!(stopped["cycles_recorded"], 2);
    assert_eq!(finished["group"], "A");
    assert_eq!(stopped["group"], "A");
    for other in [
        "default-20261201T144749Z-2ab023",
        "regression-20261202T061642Z-5df28d",
        "network-20261202T082714Z-f68979",
    ] {
        assert_eq!(by_id(&list, other)["group"], Value::Null, "{other}");
    }

    // A run of variants is one entry naming them.
    let variants = by_id(&list, "network-20261202T082714Z-f68979");
    assert_eq!(variants["variants"][0], "local");
    assert_eq!(variants["status"], "finished");

    // Cycles added until conclusive are said so.
    let table = runs(tmp.path(), &[]);
    assert!(table.starts_with("CMP  ID"), "{table}");
    assert!(
        table.contains("stopped (interrupted by SIGTERM)  2 of 3"),
        "{table}"
    );
    assert!(table.contains("4 (2 planned)"), "{table}");
    assert!(table.contains("variants: local, sftp-25ms"), "{table}");
    assert!(table.contains("labrun compare RUN_A RUN_B"), "{table}");
}

/// A run folder made by hand: `raw/` with a plan, records of `cycles`
/// cycles, and the given extra files.
fn hand_made_run(dir: &Path, id: &str, cycles: u32, extra: &[(&str, &str)]) {
    let raw = dir.join(id).join("raw");
    std::fs::create_dir_all(&raw).unwrap();
    let plan = serde_json::json!({
        "run_id": id, "cycles": 3,
        "dataset": {"kind": "synthetic", "seed": 1, "scale": 0.001},
        "tools": [{"name": "borg", "version": "1.4.5"}],
    });
    std::fs::write(raw.join("plan.json"), plan.to_string()).unwrap();
    let records: String = (1..=cycles)
        .map(|c| {
            format!(
                "{{\"run_id\":\"{id}\",\"tool\":\"borg\",\"cycle\":{c},\"step\":\"restore\"}}\n"
            )
        })
        .collect();
    std::fs::write(raw.join("records.jsonl"), records).unwrap();
    for (name, text) in extra {
        std::fs::write(dir.join(id).join(name), text).unwrap();
    }
}

#[test]
fn what_is_not_a_run_is_one_line_and_the_rest_still_lists() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    hand_made_run(
        d,
        "good-20261203T100000Z-aaaaaa",
        3,
        &[("raw/done.json", r#"{"ok":true,"failed_steps":0}"#)],
    );
    hand_made_run(
        d,
        "damaged-20261203T110000Z-bbbbbb",
        1,
        &[("raw/done.json", "{\"ok\":")],
    );
    std::fs::create_dir(d.join("empty")).unwrap();
    std::fs::write(d.join("garbage.tar.gz"), b"not a gzip").unwrap();
    std::fs::create_dir_all(d.join("bad-plan/raw")).unwrap();
    std::fs::write(d.join("bad-plan/raw/plan.json"), "[1,").unwrap();
    // A FIFO where the records go: refused, never waited on.
    std::fs::create_dir_all(d.join("fifo/raw")).unwrap();
    let fifo = d.join("fifo/raw/records.jsonl");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    // Not candidates: a stray file and a hidden folder.
    std::fs::write(d.join("notes.txt"), "hello").unwrap();
    std::fs::create_dir(d.join(".cache")).unwrap();

    let table = runs(d, &[]);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[1].contains("good-20261203T100000Z-aaaaaa"), "{table}");
    assert!(lines[1].contains("finished"), "{table}");
    for (name, why) in [
        (
            "damaged-20261203T110000Z-bbbbbb",
            "raw/done.json is damaged",
        ),
        ("empty", "not a run: no raw/ folder or variants.json in it"),
        ("garbage.tar.gz", ""),
        ("bad-plan", "raw/plan.json is damaged"),
        ("fifo", "FIFO"),
    ] {
        let said: Vec<&&str> = lines
            .iter()
            .filter(|l| l.contains(&format!("{name}: unreadable: ")))
            .collect();
        assert_eq!(said.len(), 1, "{name}: {table}");
        assert!(said[0].contains(why), "{name}: {table}");
    }
    assert!(
        !table.contains("notes.txt") && !table.contains(".cache"),
        "{table}"
    );
    assert_eq!(runs_json(d).len(), 6);
}

#[test]
fn a_run_without_an_end_is_running_then_lost_and_a_pack_of_one_is_incomplete() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let session = |started: u64| format!(r#"{{"run_id":"x","started_unix":{started}}}"#);
    hand_made_run(
        d,
        "live-20261203T120000Z-cccccc",
        1,
        &[("session.json", &session(now))],
    );
    hand_made_run(
        d,
        "lost-20261203T110000Z-dddddd",
        2,
        &[("session.json", &session(now - 7200))],
    );
    // Nothing written to its evidence for two hours.
    let old = SystemTime::now() - Duration::from_secs(7200);
    for f in std::fs::read_dir(d.join("lost-20261203T110000Z-dddddd/raw")).unwrap() {
        let f = std::fs::File::options()
            .write(true)
            .open(f.unwrap().path())
            .unwrap();
        f.set_modified(old).unwrap();
    }
    // A long step writes nothing, but its estimate says it is not due yet.
    hand_made_run(
        d,
        "long-20261203T100000Z-eeeeee",
        1,
        &[
            ("session.json", &session(now - 7200)),
            ("raw/estimate.json", r#"{"secs": 36000}"#),
        ],
    );
    for f in std::fs::read_dir(d.join("long-20261203T100000Z-eeeeee/raw")).unwrap() {
        let f = std::fs::File::options()
            .write(true)
            .open(f.unwrap().path())
            .unwrap();
        f.set_modified(old).unwrap();
    }
    let list = runs_json(d);
    assert_eq!(
        by_id(&list, "live-20261203T120000Z-cccccc")["status"],
        "running"
    );
    assert_eq!(
        by_id(&list, "lost-20261203T110000Z-dddddd")["status"],
        "lost_connection"
    );
    assert_eq!(
        by_id(&list, "long-20261203T100000Z-eeeeee")["status"],
        "running"
    );
    let table = runs(d, &[]);
    assert!(table.contains("lost connection"), "{table}");
    assert!(table.contains("1 of 3"), "{table}");
    // The live run packed: a pack is never running.
    let packs = tempfile::tempdir().unwrap();
    let packed = Command::new(LABRUN)
        .arg("pack")
        .arg(d.join("live-20261203T120000Z-cccccc"))
        .arg("--output")
        .arg(packs.path().join("live.tar.gz"))
        .output()
        .unwrap();
    assert!(packed.status.success(), "{packed:?}");
    let list = runs_json(packs.path());
    assert_eq!(list.len(), 1, "{list:#?}");
    assert_eq!(list[0]["id"], "live-20261203T120000Z-cccccc");
    assert_eq!(list[0]["status"], "incomplete");
}

#[test]
fn no_results_folder_yet_is_no_runs_but_a_missing_folder_named_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let default = Command::new(LABRUN)
        .arg("runs")
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert!(default.status.success(), "{default:?}");
    assert!(
        String::from_utf8_lossy(&default.stdout).starts_with("no runs in results"),
        "{default:?}"
    );
    let named = Command::new(LABRUN)
        .arg("runs")
        .arg(tmp.path().join("nowhere"))
        .output()
        .unwrap();
    assert!(!named.status.success(), "{named:?}");
    assert!(
        String::from_utf8_lossy(&named.stderr).contains("cannot read the folder of runs"),
        "{named:?}"
    );
}
