//! `labrun trend TOOL` over a series measured in two runs on two days:
//! each member's ratio to the anchor comes from the run that measured both,
//! so the runs chain through the anchor whatever their absolute seconds
//! (the second run's machine is twice as slow). Restore got 1.5x slower at
//! 0.18.1 and the anchor is 0.19.1: 0.17.3 is named faster than the anchor,
//! the rest are like it.

use labrun_evidence::compare::{COMPARE_PLAN, ComparePlan, SeriesPlan};
use labrun_evidence::{ExitStatus, Step, StepRecord};
use labrun_store::Store;
use std::path::Path;

const CYCLES: u32 = 5;

/// Restore seconds of `version`: 40 up to 0.17.3, 60 after; `speed`
/// scales every second (another day's slower machine); a small jitter.
fn wall(version: &str, step: &Step, cycle: u32, speed: f64) -> f64 {
    let jitter = 1.0 + 0.01 * (f64::from(cycle) * 1.7 + version.len() as f64).sin();
    let base = match step.as_str() {
        "restore" if version == "0.17.3" => 40.0,
        "restore" => 60.0,
        _ => 95.0,
    };
    base * speed * jitter
}

/// A run of the series `members` (the last the anchor) under `dir/name`,
/// its records starting at `day_ms`.
fn write_run(
    dir: &Path,
    name: &str,
    members: &[&str],
    speed: f64,
    day_ms: u64,
) -> std::path::PathBuf {
    let run = dir.join(name);
    let raw = run.join("raw");
    std::fs::create_dir_all(&raw).unwrap();
    let mut out = String::new();
    for cycle in 1..=CYCLES {
        for (k, v) in members.iter().enumerate() {
            for step in [Step::BACKUP_FULL, Step::RESTORE] {
                let w = wall(v, &step, cycle, speed);
                let record = StepRecord {
                    order: k as u32,
                    wall_secs: w,
                    user_secs: w * 0.8,
                    sys_secs: w * 0.1,
                    max_rss_kib: 300_000,
                    exit: Some(ExitStatus {
                        code: Some(0),
                        signal: None,
                    }),
                    ok: true,
                    timed: true,
                    cache_dropped: true,
                    ..StepRecord::blank(name, &format!("restic@{v}"), cycle, step, day_ms)
                };
                out.push_str(&serde_json::to_string(&record).unwrap());
                out.push('\n');
            }
        }
    }
    std::fs::write(raw.join("records.jsonl"), out).unwrap();
    let plan = ComparePlan {
        pairs: Vec::new(),
        margin: None,
        noise_floor: None,
        series: vec![SeriesPlan {
            tool: "restic".into(),
            members: members.iter().map(|v| format!("restic@{v}")).collect(),
            anchor: format!("restic@{}", members[members.len() - 1]),
        }],
    };
    std::fs::write(
        raw.join(COMPARE_PLAN),
        serde_json::to_vec_pretty(&plan).unwrap(),
    )
    .unwrap();
    run
}

#[test]
fn a_series_measured_on_two_days_chains_through_its_anchor() {
    let tmp = tempfile::tempdir().unwrap();
    let mut store = Store::open(&tmp.path().join("runs.sqlite")).unwrap();
    let first = write_run(
        tmp.path(),
        "series-day1",
        &["0.17.3", "0.18.1", "0.19.1"],
        1.0,
        1_795_978_272_000,
    );
    let second = write_run(
        tmp.path(),
        "series-day2",
        &["0.19.0", "0.19.1"],
        2.0,
        1_796_064_672_000,
    );
    store.import(&first, None).unwrap();
    store.import(&second, None).unwrap();

    let text = labrun_site::trend(&mut store, "restic")
        .unwrap()
        .expect("the series is in the store");
    println!("{text}");
    assert!(
        text.contains("restic series on dataset not recorded"),
        "{text}"
    );
    assert!(text.contains("every ratio to the anchor 0.19.1"), "{text}");
    // Version order across the two runs, each from the run that had it.
    let members = text
        .lines()
        .find(|l| l.trim_start().starts_with("members:"))
        .unwrap_or_else(|| panic!("{text}"));
    let at = |v: &str| members.find(v).unwrap_or_else(|| panic!("{members}"));
    assert!(
        at("0.17.3") < at("0.18.1") && at("0.18.1") < at("0.19.0"),
        "{members}"
    );
    assert!(members.contains("0.19.0 (run series-day2"), "{members}");
    // The day-2 machine's doubled seconds do not show: ratios to the anchor.
    let restore = text
        .lines()
        .find(|l| l.trim_start().starts_with("restore, wall time:"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(restore.contains("0.17.3 0.66"), "{restore}");
    assert!(restore.contains("0.19.0 1.00"), "{restore}");
    assert!(
        text.contains(
            "first worse than the anchor: none; first better: 0.17.3 (faster than 0.19.1)"
        ),
        "{text}"
    );
    assert_eq!(labrun_site::trend(&mut store, "borg").unwrap(), None);
}
