//! `labrun report` on recorded raw evidence: snapshots of summary.md and
//! summary.json, plus the figures and warnings each fixture must produce.
//!
//! Snapshots live in `tests/snapshots/`; `UPDATE_SNAPSHOTS=1 cargo test -p
//! labrun-report` rewrites them (review the diff before committing).

mod common;
use common::copy_dir;
use labrun_evidence::Step;
use labrun_report::compare::FigureDef as _;
use labrun_report::figures;
use labrun_report::{
    CheckOutcome, ReportError, Summary, WarningKind, make_report, render_terminal, summarize,
};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A copy of the fixture's run folder, so writing summaries never touches the
/// source tree.
fn run_copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join(name);
    copy_dir(&fixture(name), &run);
    (tmp, run)
}

fn assert_snapshot(name: &str, file: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(format!("{name}.{file}"));
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some_and(|v| v == "1") {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "no snapshot at {} ({e}); run with UPDATE_SNAPSHOTS=1 to write it",
            path.display()
        )
    });
    if expected != actual {
        let first = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(expected.lines().count().min(actual.lines().count()));
        panic!(
            "{} differs from the snapshot at line {}:\n  expected: {:?}\n  actual:   {:?}\n\
             (UPDATE_SNAPSHOTS=1 rewrites it)",
            path.display(),
            first + 1,
            expected.lines().nth(first),
            actual.lines().nth(first)
        );
    }
}

/// Makes the report of a fixture, checks the snapshots, returns the summary.
fn report_and_snapshot(name: &str) -> (Summary, PathBuf, tempfile::TempDir) {
    let (tmp, run) = run_copy(name);
    let (summary, written) = make_report(&run).unwrap();
    let names: Vec<String> = written
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "summary.md",
            "summary.json",
            "summary.csv",
            "chart-time.svg",
            "chart-repo-size.svg",
            "chart-memory.svg",
            "report.html"
        ]
    );
    for p in &written {
        assert_eq!(p.parent().unwrap(), run, "written beside raw/");
    }
    let md = std::fs::read_to_string(run.join("summary.md")).unwrap();
    let json = std::fs::read_to_string(run.join("summary.json")).unwrap();
    assert_snapshot(name, "summary.md", &md);
    assert_snapshot(name, "summary.json", &json);
    // The JSON is the summary itself, samples included. (Compared by parts:
    // serde_json's default float parsing may differ in the last bit.)
    let back: Summary = serde_json::from_str(&json).unwrap();
    assert_eq!(back.run_id, summary.run_id);
    assert_eq!(back.tools.len(), summary.tools.len());
    assert_eq!(back.warnings, summary.warnings);
    assert_eq!(back.samples.len(), summary.samples.len());
    (summary, run, tmp)
}

fn warning_kinds(s: &Summary) -> Vec<WarningKind> {
    s.warnings.iter().map(|w| w.kind).collect()
}

#[test]
fn two_tools_three_cycles_with_a_failed_restore() {
    let (s, run, _tmp) = report_and_snapshot("two-tools");
    assert_eq!(s.run_id, "default-20261129T1851Z-3fa2c1");
    assert_eq!(s.cycles_planned, Some(3));
    let names: Vec<&str> = s.tools.iter().map(|t| t.tool.as_str()).collect();
    assert_eq!(names, ["restic", "borg"], "the plan's order");

    let restic = &s.tools[0];
    let full = restic
        .phase(&Step::BACKUP_FULL)
        .unwrap()
        .stat(&figures::WALL_TIME)
        .unwrap();
    assert_eq!(
        (full.median, full.min, full.max, full.n),
        (95.1, 93.4, 97.8, 3)
    );
    assert_eq!(restic.repo_size_after_full.unwrap().median, 3861234567.0);
    assert_eq!(restic.growth_after_incremental.unwrap().median, 211034112.0);
    assert_eq!(restic.checks_with(CheckOutcome::Pass), 3);

    let borg = &s.tools[1];
    // The restore ran fine in every cycle; its verification failed once.
    let restore = borg.phase(&Step::RESTORE).unwrap();
    assert_eq!((restore.recorded, restore.ok), (3, 3));
    let wall = restore.stat(&figures::WALL_TIME).unwrap();
    assert_eq!(
        (wall.median, wall.min, wall.max, wall.n),
        (41.2, 39.8, 43.5, 3)
    );
    let mem = borg
        .phase(&Step::BACKUP_FULL)
        .unwrap()
        .stat(&figures::PEAK_MEMORY)
        .unwrap();
    assert_eq!(mem.median.floor(), 117.0);
    assert_eq!(borg.checks_with(CheckOutcome::Fail), 1);
    assert_eq!(borg.restore_checks[1].cycle, 2);
    assert_eq!(borg.restore_checks[1].outcome, CheckOutcome::Fail);
    assert_eq!((restic.cycles_finished, borg.cycles_finished), (3, 3));

    assert_eq!(s.failed_steps.len(), 1);
    let f = &s.failed_steps[0];
    assert_eq!(
        (f.tool.as_str(), f.cycle, f.step.clone()),
        ("borg", 2, Step::VERIFY)
    );
    assert_eq!(warning_kinds(&s), [WarningKind::StepsFailed]);
    assert_eq!(s.binaries.len(), 2);
    assert_eq!(
        s.environment.as_ref().unwrap().acceleration,
        Some(labrun_vocab::Acceleration::Kvm)
    );

    // One sample per measured figure per record, the failed ones included.
    let of = |step: Step| -> Vec<&labrun_report::Sample> {
        s.samples
            .iter()
            .filter(|x| {
                x.metadata.tool == "borg" && x.metadata.cycle == 2 && x.metadata.step == step
            })
            .collect()
    };
    let metrics =
        |v: &[&labrun_report::Sample]| v.iter().map(|x| x.metric.clone()).collect::<Vec<_>>();
    let restore = of(Step::RESTORE);
    assert_eq!(
        metrics(&restore),
        ["wall_time", "user_cpu", "system_cpu", "peak_memory"]
    );
    assert_eq!(restore[3].unit, "MiB");
    // The agent verifies in-process: no CPU or memory figures to report.
    let verify = of(Step::VERIFY);
    assert_eq!(metrics(&verify), ["wall_time", "bytes", "files"]);
    assert!(
        verify
            .iter()
            .all(|x| !x.metadata.ok && x.metadata.run_id == s.run_id)
    );
    let walls = s.samples.iter().filter(|x| x.metric == "wall_time").count();
    assert_eq!(walls, 43, "one per record");

    let md = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(md.contains("| restic 0.19.1 | 95 s, range 93-98 | 7.2 s, range 6.9-7.5 | 14 s, range 14-15 | 3.86 GB | 211 MB, range 208-214 |"), "{md}");
    assert!(md.contains("| 41 s, range 40-44 |"), "{md}");
    assert!(md.contains("FAIL in cycle 2 (2 of 3 passed)"), "{md}");
    assert!(md.contains("changed: small/0013/f-00417.bin"), "{md}");
    assert!(md.contains("`labrun report results/default-20261129T1851Z-3fa2c1`"));

    let table = render_terminal(&s);
    assert!(table.contains("restic 0.19.1"), "{table}");
    let lines: Vec<&str> = table.lines().collect();
    // Header, dashes and one line per tool share column starts.
    let col = lines[2].find("  -").unwrap() + 2;
    assert!(lines[3].chars().nth(col - 1) == Some(' ') && lines[3].chars().nth(col) != Some(' '));
}

#[test]
fn cut_short_run_keeps_what_it_measured() {
    let (s, _run, _tmp) = report_and_snapshot("cut-short");
    let kinds = warning_kinds(&s);
    for k in [
        WarningKind::TruncatedRecords,
        WarningKind::MissingEnvironment,
        WarningKind::CyclesMissing,
    ] {
        assert!(kinds.contains(&k), "{kinds:?}");
    }
    assert!(!kinds.contains(&WarningKind::StepsFailed));
    assert_eq!(s.environment, None);
    let restic = &s.tools[0];
    let borg = &s.tools[1];
    assert_eq!((restic.cycles_finished, borg.cycles_finished), (1, 1));
    // borg's cycle 2 reached the incremental backup; its restore line was cut.
    assert_eq!(borg.phase(&Step::BACKUP_INCREMENTAL).unwrap().recorded, 2);
    assert_eq!(borg.phase(&Step::RESTORE).unwrap().recorded, 1);
    assert_eq!(borg.restore_checks.len(), 1);
    let missing = s
        .warnings
        .iter()
        .find(|w| w.kind == WarningKind::CyclesMissing)
        .unwrap();
    assert!(
        missing.message.contains("restic 1 of 3, borg 1 of 3"),
        "{}",
        missing.message
    );
    // Small-scale sizes stay readable.
    let md = std::fs::read_to_string(_run.join("summary.md")).unwrap();
    assert!(md.contains("38.6 MB"), "{md}");
}

#[test]
fn software_emulation_and_warm_cache_are_flagged() {
    let (s, _run, _tmp) = report_and_snapshot("tcg-no-cache-drop");
    assert_eq!(
        warning_kinds(&s),
        [WarningKind::SoftwareEmulation, WarningKind::CacheNotDropped]
    );
    let warm = &s.warnings[1].message;
    assert!(warm.contains("4 of 16 timed steps"), "{warm}");
    assert!(warm.contains("kopia cycle 1 init"), "{warm}");
    // Two cycles: every median is the mean of the two values.
    let kopia = &s.tools[0];
    let full = kopia
        .phase(&Step::BACKUP_FULL)
        .unwrap()
        .stat(&figures::WALL_TIME)
        .unwrap();
    assert!((full.median - 7.2).abs() < 1e-9);
    // The checks come from separate verify records.
    assert_eq!(kopia.checks_with(CheckOutcome::Pass), 2);
    assert_eq!(s.tools[1].checks_with(CheckOutcome::Pass), 2);
}

#[test]
fn csv_has_a_row_per_tool_and_phase() {
    let (_tmp, run) = run_copy("two-tools");
    make_report(&run).unwrap();
    let mut reader = csv::Reader::from_path(run.join("summary.csv")).unwrap();
    let headers = reader.headers().unwrap().clone();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2 * 4);
    assert!(rows.iter().all(|r| r.len() == headers.len()));
    let get = |row: &csv::StringRecord, col: &str| {
        row[headers.iter().position(|h| h == col).unwrap()].to_string()
    };
    let num = |row: &csv::StringRecord, col: &str| get(row, col).parse::<f64>().unwrap();
    let keys: Vec<(String, String)> = rows
        .iter()
        .map(|r| (get(r, "tool"), get(r, "phase")))
        .collect();
    assert_eq!(keys[0], ("restic".into(), "init".into()));
    assert_eq!(keys[7], ("borg".into(), "restore".into()));
    let borg_restore = &rows[7];
    assert_eq!(get(borg_restore, "cycles_ok"), "3");
    assert_eq!(get(borg_restore, "restore_checks_passed"), "2");
    assert_eq!(get(borg_restore, "restore_checks_failed"), "1");
    assert_eq!(num(borg_restore, "wall_median_s"), 41.2);
    assert_eq!(
        num(&rows[1], "repo_size_after_full_median_bytes"),
        3861234567.0
    );
    assert_eq!(get(&rows[0], "repo_size_after_full_median_bytes"), "");
    assert_eq!(
        num(&rows[2], "growth_after_incremental_median_bytes"),
        211034112.0
    );
    assert_eq!(get(&rows[2], "restore_checks_passed"), "");
}

#[test]
fn charts_are_svg_naming_every_tool() {
    for name in ["two-tools", "cut-short", "tcg-no-cache-drop"] {
        let (_tmp, run) = run_copy(name);
        let (s, _) = make_report(&run).unwrap();
        for chart in ["chart-time.svg", "chart-repo-size.svg", "chart-memory.svg"] {
            let text = std::fs::read_to_string(run.join(chart)).unwrap();
            let doc = roxmltree::Document::parse(&text)
                .unwrap_or_else(|e| panic!("{name}/{chart} is not XML: {e}"));
            assert_eq!(doc.root_element().tag_name().name(), "svg");
            let words: String = doc
                .descendants()
                .filter(|n| n.has_tag_name("text"))
                .filter_map(|n| n.text())
                .collect::<Vec<_>>()
                .join("\n");
            for t in &s.tools {
                assert!(
                    words.contains(&t.tool),
                    "{name}/{chart} lacks {}: {words}",
                    t.tool
                );
            }
            let bars = doc.descendants().filter(|n| n.has_tag_name("rect")).count();
            assert!(bars > s.tools.len(), "{name}/{chart} has {bars} rects");
        }
    }
}

#[test]
fn re_making_a_report_gives_the_same_bytes() {
    let (_tmp, run) = run_copy("two-tools");
    let (_, written) = make_report(&run).unwrap();
    let first: Vec<Vec<u8>> = written.iter().map(|p| std::fs::read(p).unwrap()).collect();
    make_report(&run).unwrap();
    let second: Vec<Vec<u8>> = written.iter().map(|p| std::fs::read(p).unwrap()).collect();
    assert_eq!(first, second);
    let leftovers: Vec<_> = std::fs::read_dir(&run)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn fixtures_follow_the_shared_schema() {
    for name in ["two-tools", "cut-short", "tcg-no-cache-drop"] {
        let plan = std::fs::read_to_string(fixture(name).join("raw/plan.json")).unwrap();
        serde_json::from_str::<labrun_evidence::Plan>(&plan)
            .unwrap_or_else(|e| panic!("{name}: plan.json: {e}"));
    }
}

fn raw_with_records(records: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    std::fs::create_dir_all(run.join("raw")).unwrap();
    std::fs::write(run.join("raw/records.jsonl"), records).unwrap();
    (tmp, run)
}

#[test]
fn clear_errors_for_missing_or_damaged_evidence() {
    let tmp = tempfile::tempdir().unwrap();
    let err = summarize(tmp.path()).unwrap_err();
    assert!(matches!(err, ReportError::NoRawDir { .. }), "{err}");
    assert!(err.to_string().contains("results/<run-id>"), "{err}");

    // Given raw/ itself: point at its parent.
    let raw = fixture("two-tools").join("raw");
    let err = summarize(&raw).unwrap_err();
    assert!(err.to_string().contains("pass its parent"), "{err}");

    let (_t, run) = raw_with_records("");
    std::fs::remove_file(run.join("raw/records.jsonl")).unwrap();
    assert!(matches!(
        summarize(&run).unwrap_err(),
        ReportError::NoRecords { .. }
    ));

    let (_t, run) = raw_with_records("\n\n");
    let err = summarize(&run).unwrap_err();
    assert!(matches!(err, ReportError::NoRecords { .. }));
    assert!(err.to_string().contains("nothing to summarize"), "{err}");

    // Only the last line may be cut short; damage elsewhere is an error.
    let good = std::fs::read_to_string(fixture("two-tools").join("raw/records.jsonl")).unwrap();
    let mut lines: Vec<&str> = good.lines().collect();
    let cut = &lines[3][..40].to_string();
    lines[3] = cut;
    let (_t, run) = raw_with_records(&lines.join("\n"));
    match summarize(&run).unwrap_err() {
        ReportError::BadRecord { line, .. } => assert_eq!(line, 4),
        other => panic!("{other}"),
    }

    // A newer agent's records are refused, not misread.
    let newer = good
        .lines()
        .next()
        .unwrap()
        .replace("\"schema_version\":1", "\"schema_version\":99");
    let (_t, run) = raw_with_records(&format!("{newer}\n"));
    let err = summarize(&run).unwrap_err();
    assert!(
        matches!(err, ReportError::NewerSchema { found: 99, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("update labrun"), "{err}");
}

#[test]
fn unknown_fields_in_records_are_ignored() {
    let good = std::fs::read_to_string(fixture("two-tools").join("raw/records.jsonl")).unwrap();
    let line = good
        .lines()
        .nth(1)
        .unwrap()
        .replacen('{', "{\"from_a_newer_agent\":[1,2],", 1);
    let (_t, run) = raw_with_records(&format!("{line}\n"));
    let s = summarize(&run).unwrap();
    assert_eq!(s.tools.len(), 1);
    assert!(warning_kinds(&s).contains(&WarningKind::MissingPlan));
    assert!(warning_kinds(&s).contains(&WarningKind::MissingEnvironment));
}

#[test]
fn a_lone_record_still_makes_every_file() {
    // One init record: a one-row time chart and an empty size chart, the
    // edge cases of the chart layout.
    let good = std::fs::read_to_string(fixture("two-tools").join("raw/records.jsonl")).unwrap();
    let init = good
        .lines()
        .find(|l| l.contains(r#""step":"init""#))
        .unwrap();
    let (_t, run) = raw_with_records(&format!("{init}\n"));
    let (s, written) = make_report(&run).unwrap();
    assert_eq!(written.len(), 7, "the summaries, 3 charts, report.html");
    for chart in ["chart-time.svg", "chart-repo-size.svg", "chart-memory.svg"] {
        let text = std::fs::read_to_string(run.join(chart)).unwrap();
        roxmltree::Document::parse(&text).unwrap();
    }
    let size_chart = std::fs::read_to_string(run.join("chart-repo-size.svg")).unwrap();
    assert!(size_chart.contains("no figures recorded"));
    let time_chart = std::fs::read_to_string(run.join("chart-time.svg")).unwrap();
    assert!(time_chart.contains("restic: Init"), "{time_chart}");
    let md = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(md.contains("| restic | - | - | - |"), "{md}");
    assert!(md.contains("cycles planned unknown"), "{md}");
    assert_eq!(
        s.run_id, "default-20261129T1851Z-3fa2c1",
        "taken from the records"
    );
}

#[test]
fn a_failed_step_ends_its_cycle_without_counting_as_missing() {
    // As the agent does: borg's init fails in cycle 3 and nothing more of
    // that tool cycle is recorded.
    let (_tmp, run) = run_copy("two-tools");
    let path = run.join("raw/records.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut kept = Vec::new();
    for line in text.lines() {
        let mut r: serde_json::Value = serde_json::from_str(line).unwrap();
        let borg_c3 = r["tool"] == "borg" && r["cycle"] == 3;
        match r["step"].as_str().unwrap() {
            "init" if borg_c3 => {
                r["ok"] = false.into();
                r["exit"] = serde_json::json!({"code": 2, "signal": null});
                r["error"] = "exited with code 2".into();
            }
            "generate" => {}
            _ if borg_c3 => continue,
            _ => {}
        }
        kept.push(r.to_string());
    }
    std::fs::write(&path, kept.join("\n") + "\n").unwrap();
    let s = summarize(&run).unwrap();
    assert_eq!(s.tools[1].cycles_finished, 3);
    assert_eq!(warning_kinds(&s), [WarningKind::StepsFailed]);
    let full = s.tools[1].phase(&Step::BACKUP_FULL).unwrap();
    assert_eq!((full.recorded, full.ok), (2, 2));
    let init = s.tools[1].phase(&Step::INIT).unwrap();
    assert_eq!((init.recorded, init.ok), (3, 2));
    let md = labrun_report::export::markdown::render(&s);
    // Cycles 1 and 2 only: 162.4 and 171.0.
    assert!(md.contains("167 s, range 162-171 (2 of 3)"), "{md}");
    assert!(
        md.contains("- borg, cycle 3, `init`: exited with code 2 (exit 2)"),
        "{md}"
    );
}

/// The tree figures of a step's cgroup are shown beside the largest
/// process's, and what a tool left running is named in a warning.
#[test]
fn tree_meters_are_shown_beside_the_largest_process() {
    let good = std::fs::read_to_string(fixture("two-tools").join("raw/records.jsonl")).unwrap();
    let mut lines = Vec::new();
    for line in good.lines() {
        let mut r: serde_json::Value = serde_json::from_str(line).unwrap();
        if r["tool"] == "borg" && r["step"] == "backup_full" {
            r["tree"] = serde_json::json!({
                "source": "cgroup2 /sys/fs/cgroup/labrun-agent/borg-c1-backup_full",
                "user_secs": 160.0,
                "sys_secs": 25.0,
                "resident_peak_bytes": 200u64 << 20,
                "charged_peak_bytes": 2900u64 << 20,
                "disk_read_bytes": 6_100_000_000u64,
                "disk_write_bytes": 5_600_000_000u64,
                "processes_peak": 3,
                "leftovers": if r["cycle"] == 2 { vec!["gpg-agent (pid 912)"] } else { vec![] },
                "agent_cpu_secs": 0.4,
                "samples": 640,
                "timeline_path": "logs/borg/c1-backup_full.timeline.jsonl"
            });
        }
        lines.push(r.to_string());
    }
    let (_t, run) = raw_with_records(&(lines.join("\n") + "\n"));
    let s = summarize(&run).unwrap();
    let borg = s.tools.iter().find(|t| t.tool == "borg").unwrap();
    let full = borg.phase(&Step::BACKUP_FULL).unwrap();
    assert_eq!(full.stat(&figures::TREE_MEMORY).unwrap().median, 200.0);
    assert_eq!(full.stat(&figures::TREE_CPU).unwrap().median, 185.0);
    assert!(warning_kinds(&s).contains(&WarningKind::LeftoverProcesses));
    assert!(!warning_kinds(&s).contains(&WarningKind::AgentOverhead));
    let leftover = s
        .warnings
        .iter()
        .find(|w| w.kind == WarningKind::LeftoverProcesses)
        .unwrap();
    assert!(
        leftover.message.contains("gpg-agent (pid 912)"),
        "{}",
        leftover.message
    );
    let md = labrun_report::export::markdown::render(&s);
    assert!(md.contains("| 117 / 109 / 104 | 200 / - / - |"), "{md}");
    assert!(md.contains("5.60 GB"), "{md}");

    // The timeline chart is drawn from the raw timeline files alone; one
    // that is missing is said, not fatal.
    let logs = run.join("raw/logs/borg");
    std::fs::create_dir_all(&logs).unwrap();
    let rows: Vec<String> = (0..30)
        .map(|i| {
            serde_json::json!({
                "t_secs": i as f64,
                "resident_bytes": (100 + i as u64 * 3) << 20,
                "cpu_secs": i as f64 * 0.9,
                "disk_read_bytes": i as u64 * 200_000_000,
                "disk_write_bytes": i as u64 * 180_000_000,
                "processes": 3
            })
            .to_string()
        })
        .collect();
    std::fs::write(
        logs.join("c1-backup_full.timeline.jsonl"),
        rows.join("\n") + "\n",
    )
    .unwrap();
    let (s, written) = make_report(&run).unwrap();
    let chart = run.join("chart-timeline.svg");
    assert!(written.contains(&chart), "{written:?}");
    let text = std::fs::read_to_string(&chart).unwrap();
    roxmltree::Document::parse(&text).unwrap();
    assert!(text.contains("borg: Full backup"), "{text}");
    // Cycles 2 and 3 name the same file (the fixture's), which exists now;
    // a record naming a missing one warns.
    assert!(!warning_kinds(&s).contains(&WarningKind::UnreadableTimeline));
}

/// Every committed reproduction (docs/reproduction/<run-id>.tar.gz) is
/// re-made from its pack's raw/ alone, byte for byte the summary.md packed
/// with it when the run was made.
#[test]
fn committed_reproductions_are_remade_from_their_raw_evidence() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/reproduction");
    let mut seen = 0;
    for pack in std::fs::read_dir(&docs).expect("docs/reproduction") {
        let pack = pack.unwrap().path();
        if !pack.to_string_lossy().ends_with(".tar.gz") {
            continue;
        }
        let opened = labrun_report::pack::open(&pack)
            .unwrap_or_else(|e| panic!("{} does not open: {e}", pack.display()));
        let committed = std::fs::read_to_string(opened.dir().join("summary.md")).unwrap();
        let (_t, copy) = {
            let t = tempfile::tempdir().unwrap();
            let copy = t.path().join("run");
            std::fs::create_dir(&copy).unwrap();
            copy_dir(&opened.dir().join("raw"), &copy.join("raw"));
            (t, copy)
        };
        make_report(&copy).unwrap();
        let remade = std::fs::read_to_string(copy.join("summary.md")).unwrap();
        assert_eq!(remade, committed, "{} re-made differs", pack.display());
        seen += 1;
    }
    assert!(seen > 0, "no reproduction under {}", docs.display());
}

/// `noise_floor: {tool: restic}`: restic against its A/A copy `restic@aa`
/// (the same binary, in every cycle) gives the floor per phase and figure;
/// the other pair's verdicts say whether each effect lies inside it. The
/// fixture's tuned backup is 1.06-1.08x slower, inside the A/A pair's
/// ±10% on that phase; its restore 1.5x slower, far beyond the ±3% there.
#[test]
fn a_noise_floor_is_stated_and_read_against() {
    use labrun_report::compare::Figure;
    let (s, run, _tmp) = report_and_snapshot("noise-floor");
    let floor = s.noise_floor.as_ref().expect("the floor");
    assert_eq!(
        (floor.tool.as_str(), floor.copy.as_str()),
        ("restic", "restic@aa")
    );
    assert_eq!(floor.confidence, 0.95);
    let at = |phase: Step| {
        floor
            .rows
            .iter()
            .find(|r| r.phase == phase && r.figure == Figure::WallTime)
            .unwrap_or_else(|| panic!("no {phase} wall-time floor"))
    };
    // The floor is the A/A interval's farthest end from 1, on the log scale.
    let full = at(Step::BACKUP_FULL);
    let [lo, hi] = full.interval.unwrap();
    let expected = lo.ln().abs().max(hi.ln().abs()).exp() - 1.0;
    assert!((full.floor.unwrap() - expected).abs() < 1e-12);
    assert!(
        full.floor.unwrap() > 0.08 && full.floor.unwrap() < 0.15,
        "{full:?}"
    );
    assert!(at(Step::RESTORE).floor.unwrap() < 0.05);
    // Sizes have no noise to measure: no floor rows for them.
    assert!(floor.rows.iter().all(|r| !r.figure.is_exact()));

    assert_eq!(s.comparisons.len(), 2);
    let tuned = &s.comparisons[0];
    assert_eq!(tuned.candidate.tool, "restic@tuned");
    let row = |phase: Step| tuned.row(&phase, Figure::WallTime).unwrap();
    let inside = row(Step::BACKUP_FULL);
    let mark = inside.noise_floor.expect("marked");
    assert!(mark.inside, "{inside:?}");
    assert_eq!(mark.floor, full.floor.unwrap());
    let beyond = row(Step::RESTORE);
    assert_eq!(beyond.verdict_word, "slower");
    assert!(!beyond.noise_floor.unwrap().inside, "{beyond:?}");
    // The A/A pair is the floor itself, not read against it.
    assert!(
        s.comparisons[1]
            .rows
            .iter()
            .all(|r| r.noise_floor.is_none())
    );

    let copy = s.tools.iter().find(|t| t.tool == "restic@aa").unwrap();
    assert_eq!(copy.noise_floor_of.as_deref(), Some("restic"));
    let md = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(
        md.contains("| restic@aa (noise floor: A/A copy of restic) |"),
        "{md}"
    );
    assert!(
        md.contains("## Noise floor: restic@aa against restic (A/A)"),
        "{md}"
    );
    assert!(
        md.contains("## Verdict: restic@tuned against restic"),
        "{md}"
    );
    assert!(md.contains(&format!(
        "{}, inside the noise floor (±",
        inside.verdict_word
    )));
    assert!(md.contains("slower, beyond the noise floor (±"));
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(html.contains("Noise floor: restic@aa against restic (A/A)"));
    assert!(html.contains("inside the noise floor"));
    assert!(html.contains("restic@aa (noise floor: A/A copy of restic)"));
    let text = render_terminal(&s);
    assert!(
        text.contains("noise floor: restic@aa against restic (A/A: one binary, two names)"),
        "{text}"
    );
}

/// A run whose lab had no `noise_floor:` says nothing of one, in any file.
#[test]
fn without_a_floor_nothing_is_said_of_one() {
    let (s, run, _tmp) = report_and_snapshot("two-tools");
    assert!(s.noise_floor.is_none());
    for file in ["summary.md", "summary.json", "report.html"] {
        let text = std::fs::read_to_string(run.join(file)).unwrap();
        assert!(!text.contains("noise floor"), "{file}");
        assert!(!text.contains("noise_floor"), "{file}");
    }
}

/// Issue 46, item 4: a run whose timed backups and restores carry flush
/// records shows, per tool, the flush, the durable time (step + flush) and
/// what the step left unwritten, in every format; a run without them (the
/// snapshots above) shows none of it.
#[test]
fn flush_durable_time_and_unwritten_are_shown_per_tool() {
    let good = std::fs::read_to_string(fixture("two-tools").join("raw/records.jsonl")).unwrap();
    let mut lines = Vec::new();
    for line in good.lines() {
        let mut r: serde_json::Value = serde_json::from_str(line).unwrap();
        let writes = r["step"] == "backup_full" || r["step"] == "restore";
        if r["timed"] == true && writes {
            // restic leaves its restore dirty (a long flush); borg does not.
            let (secs, unwritten) = match (r["tool"].as_str(), r["step"].as_str()) {
                (Some("restic"), Some("restore")) => (9.0, 3_000_000_000u64),
                _ => (0.5, 4_096u64),
            };
            r["flush"] = serde_json::json!({
                "path": "/var/lib/labrun/run/target",
                "secs": secs,
                "unwritten_bytes": unwritten
            });
        }
        lines.push(r.to_string());
    }
    let (_t, run) = raw_with_records(&(lines.join("\n") + "\n"));
    let s = summarize(&run).unwrap();
    let restic = s.tools.iter().find(|t| t.tool == "restic").unwrap();
    let restore = restic.phase(&Step::RESTORE).unwrap();
    let wall = restore.stat(&figures::WALL_TIME).unwrap().median;
    assert_eq!(restore.stat(&figures::FLUSH).unwrap().median, 9.0);
    assert_eq!(
        restore.stat(&figures::DURABLE_TIME).unwrap().median,
        wall + 9.0
    );
    assert_eq!(
        restore.stat(&figures::UNWRITTEN).unwrap().median,
        3_000_000_000.0
    );
    for t in &s.tools {
        let full = t.phase(&Step::BACKUP_FULL).unwrap();
        assert!(full.stat(&figures::DURABLE_TIME).is_some(), "{}", t.tool);
    }

    let terminal = render_terminal(&s);
    for header in ["durable s", "flush s", "unwritten"] {
        assert!(terminal.contains(header), "{terminal}");
    }
    assert!(terminal.contains("3.00 GB"), "{terminal}");
    let md = labrun_report::export::markdown::render(&s);
    for column in ["Durable time (step + flush)", "Flush", "Left unwritten"] {
        assert!(md.contains(&format!("| {column} |")), "{md}");
    }
    assert!(md.contains("3.00 GB"), "{md}");
    let text = |e: &dyn labrun_report::export::Exporter| {
        String::from_utf8(e.serialize(&s).unwrap()).unwrap()
    };
    let csv = text(&labrun_report::export::csv::Csv);
    for stem in [
        "durable_median_s",
        "flush_median_s",
        "unwritten_median_bytes",
    ] {
        assert!(csv.lines().next().unwrap().contains(stem), "{csv}");
    }
    let json = text(&labrun_report::export::json::Json);
    for key in ["\"durable_secs\"", "\"flush_secs\"", "\"unwritten_bytes\""] {
        assert!(json.contains(key), "{key} in {json}");
    }
    let html = text(&labrun_report::export::html::Html);
    for column in ["Durable time (step + flush)", "Left unwritten"] {
        assert!(html.contains(column), "{column} in the HTML");
    }
}
