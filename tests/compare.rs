//! The real `labrun compare` on run folders of synthetic records: the exit
//! status a CI gates on (1 when the candidate is slower, 0 when not, 2 when
//! nothing could be compared), `--json` on stdout, and the files it writes.

use labrun_evidence::{ExitStatus, Step, StepRecord};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const LABRUN: &str = env!("CARGO_BIN_EXE_labrun");

/// Fixed relative noise per cycle and side: the spread of a quiet machine.
const NOISE: [[f64; 2]; 5] = [
    [1.000, 1.012],
    [0.991, 0.996],
    [1.007, 1.003],
    [0.995, 0.989],
    [1.004, 1.010],
];

/// Two tools over five cycles (order rotating); the candidate's full
/// backup takes `slow` times the baseline's.
fn write_run(dir: &Path, name: &str, tools: [&str; 2], slow: f64, acceleration: &str) -> PathBuf {
    let run = dir.join(name);
    std::fs::create_dir_all(run.join("raw")).unwrap();
    let mut lines = String::new();
    for (c, noise) in NOISE.iter().enumerate() {
        let cycle = c as u32 + 1;
        for k in 0..2 {
            let side = (k + c) % 2;
            for (step, secs) in [(Step::BACKUP_FULL, 95.0), (Step::RESTORE, 40.0)] {
                let factor = if side == 1 && step == Step::BACKUP_FULL {
                    slow
                } else {
                    1.0
                };
                let wall = secs * factor * noise[side];
                let r = StepRecord {
                    order: k as u32,
                    wall_secs: wall,
                    user_secs: wall * 0.8,
                    sys_secs: wall * 0.1,
                    max_rss_kib: (300_000.0 * noise[1 - side]) as u64,
                    exit: Some(ExitStatus {
                        code: Some(0),
                        signal: None,
                    }),
                    ok: true,
                    timed: true,
                    cache_dropped: true,
                    repo_size_bytes: (step == Step::BACKUP_FULL).then_some(3_800_000_000),
                    ..StepRecord::blank(name, tools[side], cycle, step, 0)
                };
                lines.push_str(&serde_json::to_string(&r).unwrap());
                lines.push('\n');
            }
        }
    }
    std::fs::write(run.join("raw/records.jsonl"), lines).unwrap();
    let env = format!(
        r#"{{"host":{{"cpu_model":"AMD EPYC 7763"}},"guest":{{"kernel":"6.1.0-27-amd64"}},"acceleration":"{acceleration}"}}"#
    );
    std::fs::write(run.join("raw/environment.json"), env).unwrap();
    run
}

fn labrun(args: &[&str]) -> Output {
    Command::new(LABRUN)
        .arg("compare")
        .args(args)
        .env_remove("LABRUN_LAB")
        .output()
        .expect("run labrun")
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn row<'a>(json: &'a serde_json::Value, phase: &str, figure: &str) -> &'a serde_json::Value {
    json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["phase"] == phase && r["figure"] == figure)
        .unwrap_or_else(|| panic!("no row {phase} {figure} in {json}"))
}

#[test]
fn a_slower_candidate_exits_1_with_json() {
    let tmp = tempfile::tempdir().unwrap();
    let run = write_run(tmp.path(), "run", ["borg", "borg@zstd22"], 1.3, "kvm");
    let out = labrun(&[
        path(&run),
        "--baseline",
        "borg",
        "--candidate",
        "borg@zstd22",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let full = row(&json, "backup_full", "wall_time");
    assert_eq!(full["verdict_word"], "slower", "{full}");
    assert_eq!(full["pairs"], 5);
    let ratio = full["ratio"].as_f64().unwrap();
    assert!((1.25..1.35).contains(&ratio), "{ratio}");
    assert_eq!(json["design"], "paired");
    assert!(json["method"].as_str().unwrap().contains("Holm"));
    for name in ["compare.md", "compare.json", "compare.html"] {
        assert!(run.join(name).is_file(), "{name}");
    }
    assert!(stderr(&out).contains("wrote"), "{}", stderr(&out));
}

#[test]
fn the_same_binary_twice_exits_0() {
    let tmp = tempfile::tempdir().unwrap();
    let run = write_run(tmp.path(), "run", ["restic", "restic@again"], 1.0, "kvm");
    let out = labrun(&[
        path(&run),
        "--baseline",
        "restic",
        "--candidate",
        "restic@again",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Full backup"), "{text}");
    assert!(!text.lines().any(|l| l.ends_with("slower")), "{text}");
    assert!(text.contains("0 worse"), "{text}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("compare.json")).unwrap()).unwrap();
    let full = row(&json, "backup_full", "wall_time");
    assert!(
        full["verdict"] == "no_change" || full["verdict"] == "inconclusive",
        "{full}"
    );
}

#[test]
fn usage_and_user_errors_exit_2_and_say_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let run = write_run(tmp.path(), "run", ["borg", "restic"], 1.0, "kvm");
    let out = labrun(&[path(&run), "--baseline", "borg"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--candidate"), "{}", stderr(&out));

    let out = labrun(&[
        path(&run),
        "--baseline",
        "borg",
        "--candidate",
        "restic",
        "--margin",
        "5",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("5%"), "{}", stderr(&out));

    let out = labrun(&[path(&run), "--baseline", "borg", "--candidate", "kopia"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("no tool \"kopia\"") && err.contains("borg, restic"),
        "{err}"
    );

    let out = labrun(&[
        path(tmp.path()),
        "--baseline",
        "borg",
        "--candidate",
        "restic",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no raw evidence folder"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn two_runs_on_different_acceleration_are_refused_unless_forced() {
    let tmp = tempfile::tempdir().unwrap();
    let a = write_run(tmp.path(), "a", ["restic", "other"], 1.0, "kvm");
    let b = write_run(tmp.path(), "b", ["other", "restic"], 1.0, "tcg");
    let out = labrun(&[path(&a), path(&b), "--tool", "restic"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("acceleration") && err.contains("--force"),
        "{err}"
    );
    assert!(!b.join("compare.json").exists());

    let out = labrun(&[path(&a), path(&b), "--tool", "restic", "--force", "--json"]);
    assert_ne!(out.status.code(), Some(2), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["design"], "unpaired");
    assert!(
        json["warnings"][0]
            .as_str()
            .unwrap()
            .contains("acceleration")
    );
    assert!(
        b.join("compare.json").is_file(),
        "written into the candidate's run"
    );
}

/// `bench --until-conclusive` adds pairs to the comparisons a lab asks
/// for: a lab that asks for none is refused before anything starts.
#[test]
fn until_conclusive_needs_a_lab_that_compares() {
    let lab = Path::new(env!("CARGO_MANIFEST_DIR")).join("lab.yaml");
    let out = Command::new(LABRUN)
        .arg("-f")
        .arg(&lab)
        .args(["bench", "--plain", "--until-conclusive", "2"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "`--until-conclusive` adds pairs to the comparisons and series a lab asks for"
        ) && err.contains("add a `compare:` block"),
        "{err}"
    );
}

/// A plan naming the dataset and the protocol, as `bench` writes it.
fn write_plan(run: &Path, dataset: &str, protocol: &str) {
    let plan = format!(
        r#"{{"schema_version":1,"run_id":"x","cycles":5,"dataset":{dataset},"tools":[],"protocol":{protocol}}}"#
    );
    std::fs::write(run.join("raw/plan.json"), plan).unwrap();
}

const PUBLISHED: &str = r#"["source",{"run":"init"},{"run":"backup_full"}]"#;

/// Issue 33 item 6: runs of different datasets (here scale 0.001 against
/// 0.01) are refused like runs of different machines; with --force every
/// output (terminal, JSON, compare.md, compare.html) names the difference.
#[test]
fn two_runs_of_different_datasets_are_refused_unless_forced_and_named_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let a = write_run(tmp.path(), "a", ["restic", "other"], 1.0, "kvm");
    let b = write_run(tmp.path(), "b", ["other", "restic"], 1.0, "kvm");
    write_plan(
        &a,
        r#"{"kind":"synthetic","seed":7,"scale":0.001}"#,
        PUBLISHED,
    );
    write_plan(
        &b,
        r#"{"kind":"synthetic","seed":7,"scale":0.01}"#,
        PUBLISHED,
    );
    let out = labrun(&[path(&a), path(&b), "--tool", "restic"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("dataset")
            && err.contains("scale")
            && err.contains("0.001")
            && err.contains("--force"),
        "{err}"
    );
    assert!(!b.join("compare.json").exists());

    let out = labrun(&[path(&a), path(&b), "--tool", "restic", "--force"]);
    assert_ne!(out.status.code(), Some(2), "{}", stderr(&out));
    let terminal = String::from_utf8_lossy(&out.stdout);
    assert!(
        terminal.contains("warning:") && terminal.contains("scale"),
        "{terminal}"
    );
    for file in ["compare.md", "compare.html", "compare.json"] {
        let text = std::fs::read_to_string(b.join(file)).unwrap();
        assert!(
            text.contains("dataset or protocol differs") && text.contains("scale"),
            "{file}: {text}"
        );
    }
}

#[test]
fn two_runs_of_different_protocols_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let a = write_run(tmp.path(), "a", ["restic", "other"], 1.0, "kvm");
    let b = write_run(tmp.path(), "b", ["other", "restic"], 1.0, "kvm");
    let dataset = r#"{"kind":"synthetic","seed":7,"scale":0.01}"#;
    write_plan(&a, dataset, PUBLISHED);
    let other = PUBLISHED.replace(r#"]"#, r#",{"run":"restore"}]"#);
    write_plan(&b, dataset, &other);
    let out = labrun(&[path(&a), path(&b), "--tool", "restic"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("protocol") && err.contains("restore"), "{err}");
}

#[test]
fn two_runs_whose_data_manifests_differ_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let a = write_run(tmp.path(), "a", ["restic", "other"], 1.0, "kvm");
    let b = write_run(tmp.path(), "b", ["other", "restic"], 1.0, "kvm");
    let dataset = r#"{"kind":"synthetic","seed":7,"scale":0.01}"#;
    for (run, content) in [(&a, "{\"path\":\"a\"}\n"), (&b, "{\"path\":\"b\"}\n")] {
        write_plan(run, dataset, PUBLISHED);
        std::fs::create_dir_all(run.join("raw/manifests")).unwrap();
        std::fs::write(run.join("raw/manifests/generated.jsonl"), content).unwrap();
    }
    let out = labrun(&[path(&a), path(&b), "--tool", "restic"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("manifest") && err.contains("generated.jsonl"),
        "{err}"
    );
}

/// Issue 33 item 8: a non-positive time has no ratio and is left out; every
/// output says so, naming the side, cycle and value (it was dropped without
/// a word, or called a zero when negative).
#[test]
fn values_left_out_of_a_comparison_are_named_in_every_output() {
    let tmp = tempfile::tempdir().unwrap();
    let run = write_run(tmp.path(), "run", ["borg", "borg@zstd22"], 1.0, "kvm");
    let path_r = run.join("raw/records.jsonl");
    let text = std::fs::read_to_string(&path_r).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let mut r: StepRecord = serde_json::from_str(line).unwrap();
        if r.tool == "borg" && r.cycle == 2 && r.step == Step::BACKUP_FULL {
            r.wall_secs = -5.0;
        }
        out.push_str(&serde_json::to_string(&r).unwrap());
        out.push('\n');
    }
    std::fs::write(&path_r, out).unwrap();
    let args = [
        path(&run),
        "--baseline",
        "borg",
        "--candidate",
        "borg@zstd22",
    ];
    let terminal = labrun(&args);
    assert_ne!(terminal.status.code(), Some(2), "{}", stderr(&terminal));
    let shown = String::from_utf8_lossy(&terminal.stdout).into_owned();
    let said =
        |text: &str| text.contains("left out") && text.contains("cycle 2") && text.contains("-5");
    assert!(said(&shown), "terminal: {shown}");
    for name in ["compare.md", "compare.json", "compare.html"] {
        let text = std::fs::read_to_string(run.join(name)).unwrap();
        assert!(said(&text), "{name}: {text}");
    }
}
