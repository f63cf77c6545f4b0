//! The trend of a release series on a small synthetic run: four versions,
//! the newest the anchor; one adjacent step planted 1.5x slower on restore
//! (the trend names it), one step whose pairs disagree wildly (said to be
//! inconclusive), one step planted 1.4x faster on the full backup (the trend
//! names it too), the rest unchanged.

use labrun_evidence::compare::{ComparePlan, SeriesPlan};
use labrun_evidence::{ExitStatus, Step, StepRecord};
use labrun_report::compare::{Figure, Verdict};
use std::path::Path;

const MEMBERS: [&str; 4] = [
    "restic@0.17.3",
    "restic@0.18.1",
    "restic@0.19.0",
    "restic@0.19.1",
];
const CYCLES: u32 = 6;

/// Wall seconds of `member` at `step` in `cycle`: restore is 40 s up to
/// 0.17.3 and 60 s (1.5x) from 0.18.1 on; the incremental backup of
/// 0.19.0 swings by ±40% from cycle to cycle (a step nothing can decide in
/// 6 pairs); the full backup is 95 s, and 68 s (1.4x faster) in 0.19.1;
/// every figure has a small, fixed jitter of its own.
fn wall(member: usize, step: &Step, cycle: u32) -> f64 {
    let jitter = 1.0 + 0.01 * ((cycle as f64) * 1.7 + member as f64 * 2.3).sin();
    let base = match step.as_str() {
        "backup_full" if member == 3 => 68.0,
        "backup_full" => 95.0,
        "backup_incremental" if member == 2 => {
            14.0 * if cycle.is_multiple_of(2) { 1.4 } else { 0.65 }
        }
        "backup_incremental" => 14.0,
        "restore" if member >= 1 => 60.0,
        "restore" => 40.0,
        _ => 2.0,
    };
    base * jitter
}

fn write_run(dir: &Path) {
    let raw = dir.join("raw");
    std::fs::create_dir_all(&raw).unwrap();
    let mut out = String::new();
    for cycle in 1..=CYCLES {
        for k in 0..MEMBERS.len() {
            let member = (k + cycle as usize - 1) % MEMBERS.len();
            for step in [Step::BACKUP_FULL, Step::BACKUP_INCREMENTAL, Step::RESTORE] {
                let w = wall(member, &step, cycle);
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
                    ..StepRecord::blank(
                        "series-run",
                        MEMBERS[member],
                        cycle,
                        step,
                        1_795_978_272_000,
                    )
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
            members: MEMBERS.map(String::from).to_vec(),
            anchor: "restic@0.19.1".into(),
        }],
    };
    std::fs::write(
        raw.join(labrun_evidence::compare::COMPARE_PLAN),
        serde_json::to_vec_pretty(&plan).unwrap(),
    )
    .unwrap();
}

#[test]
fn the_trend_names_the_planted_step_and_says_which_stayed_open() {
    let tmp = tempfile::tempdir().unwrap();
    write_run(tmp.path());
    let (summary, files) = labrun_report::make_report(tmp.path()).unwrap();
    assert_eq!(summary.trends.len(), 1);
    let trend = &summary.trends[0];
    assert_eq!(trend.anchor, "restic@0.19.1");

    let restore = trend
        .rows
        .iter()
        .find(|r| r.phase == Step::RESTORE && r.figure == Figure::WallTime)
        .unwrap();
    // Ratios to the anchor, in version order, the anchor at 1.
    let ratios: Vec<f64> = restore.points.iter().map(|p| p.ratio.unwrap()).collect();
    assert!((ratios[0] - 40.0 / 60.0).abs() < 0.02, "{ratios:?}");
    assert!((ratios[1] - 1.0).abs() < 0.02, "{ratios:?}");
    assert_eq!(ratios[3], 1.0);
    let [lo, hi] = restore.points[0].interval.unwrap();
    assert!(lo < ratios[0] && ratios[0] < hi);
    // The planted step is the first slower one, and it is the only one.
    let verdicts: Vec<Verdict> = restore.steps.iter().map(|s| s.verdict).collect();
    assert_eq!(
        verdicts,
        [Verdict::Worse, Verdict::NoChange, Verdict::NoChange],
        "{:?}",
        restore.steps
    );
    assert_eq!(restore.first_worse, Some(0));
    let step = &restore.steps[0];
    assert!((step.ratio.unwrap() - 1.5).abs() < 0.05);
    assert!(
        step.p_holm.unwrap() >= step.p.unwrap(),
        "Holm never lowers p"
    );

    // The wild step is inconclusive, and the row says so.
    let incr = trend
        .rows
        .iter()
        .find(|r| r.phase == Step::BACKUP_INCREMENTAL && r.figure == Figure::WallTime)
        .unwrap();
    assert_eq!(
        incr.steps[1].verdict,
        Verdict::Inconclusive,
        "{:?}",
        incr.steps
    );
    assert_eq!(incr.first_worse, None);

    let md = std::fs::read_to_string(tmp.path().join("summary.md")).unwrap();
    assert!(
        md.contains("## Trend: restic (anchor restic@0.19.1)"),
        "{md}"
    );
    let line = md
        .lines()
        .find(|l| l.starts_with("- restore wall time"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(
        line.contains("first slower step 0.17.3 -> 0.18.1, 1.49"),
        "{line}"
    );
    let incr_line = md
        .lines()
        .find(|l| l.starts_with("- incremental backup wall time"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(incr_line.contains("no slower step"), "{incr_line}");
    assert!(
        incr_line.contains("inconclusive: 0.18.1 -> 0.19.0"),
        "{incr_line}"
    );
    assert!(
        md.contains("never through"),
        "the section says how runs combine"
    );

    let json = std::fs::read_to_string(tmp.path().join("summary.json")).unwrap();
    assert!(json.contains("\"trends\""));
    let terminal = labrun_report::render_terminal(&summary);
    assert!(
        terminal.contains("restore wall time: first slower step 0.17.3 -> 0.18.1"),
        "{terminal}"
    );
    let html = std::fs::read_to_string(tmp.path().join("report.html")).unwrap();
    assert!(html.contains("Trend: restic (anchor restic@0.19.1)"));
    assert!(files.iter().any(|f| f.ends_with("trend.svg")));
    let svg = std::fs::read_to_string(tmp.path().join("trend.svg")).unwrap();
    assert!(svg.contains("0.18.1") && svg.contains("<svg"));
}

/// A maintainer wants to see an optimisation land as much as a regression:
/// the first faster step is named beside the first slower one, in every
/// output the trend shows in.
#[test]
fn the_trend_names_the_first_faster_step_too() {
    let tmp = tempfile::tempdir().unwrap();
    write_run(tmp.path());
    let (summary, _) = labrun_report::make_report(tmp.path()).unwrap();
    let md = std::fs::read_to_string(tmp.path().join("summary.md")).unwrap();
    let line = |start: &str| {
        md.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("{md}"))
            .to_string()
    };
    let full = line("- full backup wall time");
    assert!(
        full.contains("no slower step; first faster step 0.19.0 -> 0.19.1, 0.71"),
        "{full}"
    );
    let restore = line("- restore wall time");
    assert!(
        restore.contains("first slower step 0.17.3 -> 0.18.1, 1.49")
            && restore.contains("; no faster step"),
        "{restore}"
    );
    let terminal = labrun_report::render_terminal(&summary);
    assert!(
        terminal
            .contains("full backup wall time: no slower step; first faster step 0.19.0 -> 0.19.1"),
        "{terminal}"
    );
    let html = std::fs::read_to_string(tmp.path().join("report.html")).unwrap();
    assert!(
        html.contains("first faster step 0.19.0 -&gt; 0.19.1"),
        "{html}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("summary.json")).unwrap())
            .unwrap();
    let rows = json["trends"][0]["rows"].as_array().unwrap();
    let full = rows
        .iter()
        .find(|r| r["phase"] == "backup_full" && r["figure"] == "wall_time")
        .unwrap();
    assert_eq!(full["first_better"], 2, "{full}");
    assert!(full.get("first_worse").is_none(), "{full}");
}

#[test]
fn a_run_without_a_series_has_no_trend() {
    let tmp = tempfile::tempdir().unwrap();
    write_run(tmp.path());
    std::fs::remove_file(
        tmp.path()
            .join("raw")
            .join(labrun_evidence::compare::COMPARE_PLAN),
    )
    .unwrap();
    let (summary, files) = labrun_report::make_report(tmp.path()).unwrap();
    assert!(summary.trends.is_empty());
    assert!(!files.iter().any(|f| f.ends_with("trend.svg")));
    let json = std::fs::read_to_string(tmp.path().join("summary.json")).unwrap();
    assert!(!json.contains("trends"));
}

/// A series' steps are judged by the sequential rule when `bench` added
/// pairs under it: each step's p-value is the fixed-n one times the looks,
/// its interval wider; without `looks` nothing changes.
#[test]
fn a_series_with_pairs_added_under_the_sequential_rule_is_judged_by_it() {
    use labrun_evidence::compare::{ADDED_PAIRS, AddedPairs};
    let tmp = tempfile::tempdir().unwrap();
    write_run(tmp.path());
    let trend_of = |added: Option<AddedPairs>| {
        if let Some(a) = added {
            std::fs::write(
                tmp.path().join("raw").join(ADDED_PAIRS),
                serde_json::to_vec(&a).unwrap(),
            )
            .unwrap();
        }
        let raw = labrun_report::evidence::load(tmp.path()).unwrap();
        labrun_report::trend::of_run(&raw).0.remove(0)
    };
    let old = AddedPairs {
        max: 10,
        added: 2,
        rounds: Vec::new(),
        looks: None,
        needed: None,
    };
    let fixed = trend_of(None);
    assert_eq!(trend_of(Some(old.clone())), fixed);
    let sequential = trend_of(Some(AddedPairs {
        looks: Some(11),
        ..old
    }));
    let restore = |t: &labrun_report::trend::Trend| {
        t.rows
            .iter()
            .find(|r| r.phase == Step::RESTORE && r.figure == Figure::WallTime)
            .unwrap()
            .steps[0]
            .clone()
    };
    let (f, s) = (restore(&fixed), restore(&sequential));
    let (fp, sp) = (f.p.unwrap(), s.p.unwrap());
    assert!((sp - (fp * 11.0).min(1.0)).abs() < 1e-12, "{fp} {sp}");
    assert!(sequential.confidence > fixed.confidence);
}

/// `bench --until-conclusive` asks a series' trend what is open: the steps
/// still inconclusive and the members that one more pair of each runs.
/// Here the wild incremental step (0.18.1 -> 0.19.0) is open, and the
/// step from 0.17.3 (decided on every row) brings no pair of its own.
#[test]
fn a_series_step_left_open_asks_for_a_pair_of_its_two_members() {
    let tmp = tempfile::tempdir().unwrap();
    write_run(tmp.path());
    let raw = labrun_report::evidence::load(tmp.path()).unwrap();
    let open = labrun_report::questions::open(&raw);
    assert!(open.rows > 0, "{open:?}");
    assert!(
        open.tools.contains(&"restic@0.18.1".to_string())
            && open.tools.contains(&"restic@0.19.0".to_string()),
        "{:?}",
        open.tools
    );
    assert!(
        !open.tools.contains(&"restic@0.17.3".to_string()),
        "{:?}",
        open.tools
    );
    // Each open step's own comparison is there for the cap to read.
    assert!(
        open.comparisons
            .iter()
            .any(|c| c.baseline.tool == "restic@0.18.1" && c.candidate.tool == "restic@0.19.0"),
        "{:?}",
        open.comparisons
            .iter()
            .map(|c| (&c.baseline.tool, &c.candidate.tool))
            .collect::<Vec<_>>()
    );
}

/// The summary says, from the same samples, how many tested rows the lab's
/// own cycles decided under the fixed rule and how many the whole run
/// decided under the sequential rule: cycles 4-6 written as added pairs.
#[test]
fn the_summary_counts_rows_decided_by_the_lab_cycles_and_by_the_added_pairs() {
    use labrun_evidence::compare::{ADDED_PAIRS, AddedPairs, AddedRound};
    let tmp = tempfile::tempdir().unwrap();
    write_run(tmp.path());
    let rounds = (4..=CYCLES)
        .map(|cycle| AddedRound {
            cycle,
            tools: MEMBERS.map(String::from).to_vec(),
            inconclusive_rows: 1,
        })
        .collect();
    let added = AddedPairs {
        max: 3,
        added: 3,
        rounds,
        looks: Some(4),
        needed: Some(3),
    };
    std::fs::write(
        tmp.path().join("raw").join(ADDED_PAIRS),
        serde_json::to_vec(&added).unwrap(),
    )
    .unwrap();
    let raw = labrun_report::evidence::load(tmp.path()).unwrap();
    let d = labrun_report::questions::decided_by_rule(&raw).unwrap();
    // The same rows are tested under both rules; 3 pairs leave the wild
    // step and the 1.4x/1.5x steps' neighbours to decide, 6 pairs decide
    // more of them even at a quarter of alpha per look.
    assert_eq!(d.fixed.tested, d.sequential.tested, "{d:?}");
    assert!(d.sequential.decided > d.fixed.decided, "{d:?}");
    assert_eq!((d.added, d.looks), (3, 4));

    let (summary, _) = labrun_report::make_report(tmp.path()).unwrap();
    let md = std::fs::read_to_string(tmp.path().join("summary.md")).unwrap();
    let want = format!(
        "Pairs added: {} of {} tested rows decided by the lab's {} cycles alone (fixed rule); {} of {} after 3 added pair(s) (sequential rule, 4 looks), from the same samples.",
        d.fixed.decided, d.fixed.tested, "own", d.sequential.decided, d.sequential.tested
    );
    assert!(md.contains(&want), "{md}");
    assert!(labrun_report::render_terminal(&summary).contains("pairs added: "));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(
        json["decided"]["sequential"]["decided"],
        d.sequential.decided
    );
}

/// Without added pairs the two rules are one: nothing is said.
#[test]
fn a_series_without_added_pairs_says_nothing_of_rules() {
    let tmp = tempfile::tempdir().unwrap();
    write_run(tmp.path());
    let (summary, _) = labrun_report::make_report(tmp.path()).unwrap();
    assert!(summary.decided.is_none());
    let md = std::fs::read_to_string(tmp.path().join("summary.md")).unwrap();
    assert!(!md.contains("Pairs added:"), "{md}");
}

/// A lab that names a `compare:` pair asks that pair, not its series'
/// steps: bisect's probe is a series of two commits asking one row, and
/// only that row may keep adding pairs.
#[test]
fn a_lab_naming_a_pair_asks_the_pair_not_its_series() {
    use labrun_evidence::compare::{COMPARE_PLAN, ComparePair, ComparePlan};
    let tmp = tempfile::tempdir().unwrap();
    write_run(tmp.path());
    let path = tmp.path().join("raw").join(COMPARE_PLAN);
    let mut plan: ComparePlan = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    plan.pairs = vec![ComparePair {
        phase: Some(Step::RESTORE),
        figure: Some(Figure::WallTime),
        ..ComparePair::of("restic@0.17.3", "restic@0.18.1")
    }];
    std::fs::write(&path, serde_json::to_vec(&plan).unwrap()).unwrap();
    let raw = labrun_report::evidence::load(tmp.path()).unwrap();
    let open = labrun_report::questions::open(&raw);
    // The planted 1.5x restore step is decided: nothing is open, although
    // the series' wild incremental step still is.
    assert_eq!(open.rows, 0, "{open:?}");
    assert!(open.tools.is_empty(), "{:?}", open.tools);
}

/// The lab's own cycles are the plan's, even while `--until-conclusive`
/// has not yet written the round it is adding (the summary each added
/// cycle prints): cycles past the plan's are never counted as the lab's.
#[test]
fn the_lab_cycles_are_the_plans_while_a_round_is_being_added() {
    use labrun_evidence::compare::{ADDED_PAIRS, AddedPairs};
    let tmp = tempfile::tempdir().unwrap();
    write_run(tmp.path());
    std::fs::write(tmp.path().join("raw/plan.json"), r#"{"cycles": 3}"#).unwrap();
    let added = |rounds| AddedPairs {
        max: 3,
        added: 0,
        rounds,
        looks: Some(4),
        needed: Some(3),
    };
    std::fs::write(
        tmp.path().join("raw").join(ADDED_PAIRS),
        serde_json::to_vec(&added(Vec::new())).unwrap(),
    )
    .unwrap();
    let raw = labrun_report::evidence::load(tmp.path()).unwrap();
    let during = labrun_report::questions::decided_by_rule(&raw).unwrap();
    // The same run with its three rounds written: the lab's part is the same.
    let rounds = (4..=CYCLES)
        .map(|cycle| labrun_evidence::compare::AddedRound {
            cycle,
            tools: Vec::new(),
            inconclusive_rows: 1,
        })
        .collect();
    std::fs::write(
        tmp.path().join("raw").join(ADDED_PAIRS),
        serde_json::to_vec(&added(rounds)).unwrap(),
    )
    .unwrap();
    let raw = labrun_report::evidence::load(tmp.path()).unwrap();
    let after = labrun_report::questions::decided_by_rule(&raw).unwrap();
    assert_eq!(during.fixed, after.fixed);
    assert_eq!(during.lab_cycles, Some(3));
}
