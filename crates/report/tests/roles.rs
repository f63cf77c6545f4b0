//! The headline results come from what the plan says each step does, not
//! from its name: a lab whose backups are `b1`/`b2` and whose restore is
//! `r1` (checked by `v1`) gets the same full Results table as the
//! published cycle.

use labrun_evidence::{
    ExitStatus, ProtocolStep, RunStep, Step, StepRecord, TreeMeters, VerifyOutcome,
};
use labrun_report::evidence::{PlanTool, PlanView, RawRun};
use labrun_report::export::{Exporter, csv::Csv, markdown};
use labrun_report::{CheckOutcome, figures, render_terminal, summarize_raw};

fn protocol() -> Vec<ProtocolStep> {
    let run = |name: &str, command: &str| RunStep::new(Step::named(name), command);
    vec![
        ProtocolStep::Source,
        ProtocolStep::Run(run("setup", "init")),
        ProtocolStep::Run(RunStep {
            makes: Some("first".into()),
            ..run("b1", "backup")
        }),
        ProtocolStep::Change { name: Step::CHANGE },
        ProtocolStep::Run(RunStep {
            makes: Some("second".into()),
            ..run("b2", "backup")
        }),
        ProtocolStep::Run(RunStep {
            restores: Some("second".into()),
            repo_size: false,
            ..run("r1", "restore")
        }),
        ProtocolStep::Verify {
            name: Step::named("v1"),
        },
    ]
}

fn record(cycle: u32, step: &str, wall: f64, repo: Option<u64>) -> StepRecord {
    StepRecord {
        wall_secs: wall,
        user_secs: wall * 0.8,
        sys_secs: wall * 0.1,
        max_rss_kib: 100 * 1024,
        exit: Some(ExitStatus {
            code: Some(0),
            signal: None,
        }),
        ok: true,
        timed: step != "check",
        cache_dropped: true,
        repo_size_bytes: repo,
        tree: Some(TreeMeters {
            user_secs: Some(wall * 0.9),
            sys_secs: Some(wall * 0.1),
            resident_peak_bytes: Some(200 << 20),
            disk_read_bytes: Some(5_000_000),
            disk_write_bytes: Some(7_000_000),
            ..TreeMeters::default()
        }),
        ..StepRecord::blank("renamed", "restic", cycle, Step::named(step), 0)
    }
}

fn run() -> RawRun {
    let mut records = Vec::new();
    for cycle in 1..=3 {
        let c = u64::from(cycle);
        records.push(record(cycle, "setup", 1.0, Some(1_000)));
        records.push(record(
            cycle,
            "b1",
            90.0 + cycle as f64,
            Some(3_000_000_000 + c),
        ));
        records.push(record(cycle, "b2", 7.0, Some(3_200_000_000 + 2 * c)));
        records.push(record(cycle, "r1", 40.0, None));
        records.push(StepRecord {
            ok: true,
            verify: Some(VerifyOutcome {
                passed: true,
                ..VerifyOutcome::default()
            }),
            ..StepRecord::blank("renamed", "restic", cycle, Step::named("v1"), 0)
        });
    }
    RawRun {
        folder_name: "renamed".into(),
        records,
        plan: Some(PlanView {
            run_id: Some("renamed".into()),
            cycles: Some(3),
            tools: vec![PlanTool {
                name: "restic".into(),
                version: Some("0.19.1".into()),
            }],
            protocol: Some(protocol()),
            ..PlanView::default()
        }),
        ..RawRun::default()
    }
}

#[test]
fn backups_named_b1_b2_and_restore_r1_fill_the_results_table() {
    let s = summarize_raw(run());
    assert_eq!(
        s.roles.headline(),
        [
            Some(&Step::named("b1")),
            Some(&Step::named("b2")),
            Some(&Step::named("r1"))
        ]
    );
    let t = &s.tools[0];
    let size = t.repo_size_after_full.expect("size after the first backup");
    assert_eq!((size.median, size.n), (3_000_000_002.0, 3));
    let growth = t.growth_after_incremental.expect("growth after b2");
    assert_eq!((growth.median, growth.n), (200_000_002.0, 3));
    assert_eq!(t.restore_checks.len(), 3, "r1 is the restore");
    assert_eq!(t.checks_with(CheckOutcome::Pass), 3, "v1 checks it");

    let md = markdown::render(&s);
    let results = md
        .lines()
        .find(|l| l.starts_with("| restic 0.19.1 |"))
        .expect("a Results row");
    assert_eq!(
        results,
        "| restic 0.19.1 | 92 s, range 91-93 | 7.0 s | 40 s | 3.00 GB | 200 MB | \
         100 / 100 / 100 | 200 / 200 / 200 | 74/9.2, 5.6/0.7, 32/4.0 | pass (3/3) |"
    );
    // Headings keep the lab's own step names; the roles fill the Results table.
    assert!(md.contains("### b1 (`b1`)"), "{md}");
    assert!(md.contains("### b2 (`b2`)"), "{md}");
    assert!(md.contains("### r1 (`r1`)"), "{md}");
    assert!(
        md.contains("| CPU (whole tree) | Disk read (whole tree) | Disk written (whole tree) |"),
        "{md}"
    );

    // The terminal line, whole-tree figures included (the README's promise).
    let table = render_terminal(&s);
    let header = table.lines().nth(1).expect("the header");
    for h in [
        "tree MiB full/incr/restore",
        "tree CPU s full/incr/restore",
        "disk read full/incr/restore",
        "disk written full/incr/restore",
    ] {
        assert!(header.contains(h), "{h} missing from {header:?}");
    }
    let row = table.lines().nth(3).expect("the tool's line");
    for cell in [
        "92 s, range 91-93",
        "7.0 s",
        "40 s",
        "3.00 GB",
        "200 MB",
        "100 / 100 / 100",
        "200 / 200 / 200",
        "92 / 7.0 / 40",
        "5.00 MB / 5.00 MB / 5.00 MB",
        "7.00 MB / 7.00 MB / 7.00 MB",
        "pass (3/3)",
    ] {
        assert!(row.contains(cell), "{cell} missing from {row:?}");
    }

    // The CSV puts size, growth and checks on the roles' rows.
    let csv = String::from_utf8(Csv.serialize(&s).unwrap()).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let row_of = |phase: &str| -> Vec<String> {
        csv.lines()
            .find(|l| l.split(',').nth(3) == Some(phase))
            .unwrap()
            .split(',')
            .map(String::from)
            .collect()
    };
    assert_eq!(
        row_of("b1")[col("repo_size_after_full_median_bytes")],
        "3000000002.0"
    );
    assert_eq!(
        row_of("b2")[col("growth_after_incremental_median_bytes")],
        "200000002.0"
    );
    assert_eq!(row_of("r1")[col("restore_checks_passed")], "3");
    assert_eq!(row_of("b2")[col("tree_memory_median_mib")], "200.0");
    assert_eq!(row_of("b2")[col("tree_cpu_median_s")], "7.0");
    assert_eq!(row_of("b2")[col("disk_read_median_bytes")], "5000000.0");
    assert_eq!(row_of("b2")[col("disk_written_median_bytes")], "7000000.0");
    assert_eq!(row_of("b1")[col("restore_checks_passed")], "");

    // The roles travel with the summary, since they are not the published ones.
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["roles"]["full"], "b1");
    let back: labrun_report::Summary = serde_json::from_value(json).unwrap();
    assert_eq!(back.roles, s.roles);
}

#[test]
fn the_published_names_play_no_role_in_a_protocol_that_does_not_give_them_one() {
    // `backup_full` here only works on a snapshot: not a backup.
    let mut raw = run();
    for r in &mut raw.records {
        if r.step == Step::named("b1") {
            r.step = Step::BACKUP_FULL;
        }
    }
    let s = summarize_raw(raw);
    let t = &s.tools[0];
    assert!(t.phase(&Step::BACKUP_FULL).is_some(), "still a phase");
    assert_eq!(t.repo_size_after_full, None, "b1 never ran");
    assert!(
        t.phase(&Step::named("b2"))
            .and_then(|p| p.stat(&figures::WALL_TIME))
            .is_some()
    );
}
