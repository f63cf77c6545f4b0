//! `compare` on run folders built from synthetic records: a clearly slower
//! candidate is found `slower`; the same binary on both sides (A/A) is never
//! `slower` or `faster`, over many seeded noise draws; refusals and errors.

use labrun_evidence::{ExitStatus, Step, StepRecord, TreeMeters};
use labrun_report::compare::FigureDef as _;
use labrun_report::compare::{
    self, CompareError, Comparison, CpuSource, Design, Figure, Request, Settings, Verdict,
};
use std::path::{Path, PathBuf};

/// SplitMix64 (Steele, Lea, Flood 2014) and Box-Muller: seeded noise that is
/// the same on every machine, without a dependency for a test.
struct Noise(u64);

impl Noise {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// A factor around 1 with relative standard deviation `rsd`.
    fn factor(&mut self, rsd: f64) -> f64 {
        let (u1, u2) = (self.uniform(), self.uniform());
        let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        1.0 + rsd * z
    }
}

/// One tool of a synthetic run: per phase, its typical wall time.
#[derive(Clone)]
struct ToolSpec {
    name: &'static str,
    /// Multiplies every time of `slow_phase`.
    slow_factor: f64,
    slow_phase: Step,
    /// Multiplies the repository size.
    size_factor: f64,
}

impl ToolSpec {
    fn new(name: &'static str) -> ToolSpec {
        ToolSpec {
            name,
            slow_factor: 1.0,
            slow_phase: Step::BACKUP_FULL,
            size_factor: 1.0,
        }
    }
}

const PHASES: [(Step, f64); 4] = [
    (Step::INIT, 2.0),
    (Step::BACKUP_FULL, 95.0),
    (Step::BACKUP_INCREMENTAL, 14.0),
    (Step::RESTORE, 40.0),
];

/// Records of `tools` over `cycles`, their order rotating as the agent's
/// does, every figure drawn with relative noise `rsd`.
fn records(run_id: &str, tools: &[ToolSpec], cycles: u32, rsd: f64, seed: u64) -> String {
    let mut noise = Noise(seed);
    let mut out = String::new();
    for cycle in 1..=cycles {
        for k in 0..tools.len() {
            let tool = &tools[(k + cycle as usize - 1) % tools.len()];
            for (step, secs) in PHASES {
                let slow = if step == tool.slow_phase {
                    tool.slow_factor
                } else {
                    1.0
                };
                let wall = secs * slow * noise.factor(rsd);
                let size = |b: f64| Some((b * tool.size_factor) as u64);
                let record = StepRecord {
                    order: k as u32,
                    wall_secs: wall,
                    user_secs: wall * 0.8 * noise.factor(rsd),
                    sys_secs: wall * 0.1 * noise.factor(rsd),
                    max_rss_kib: (300_000.0 * noise.factor(rsd)) as u64,
                    exit: Some(ExitStatus {
                        code: Some(0),
                        signal: None,
                    }),
                    ok: true,
                    timed: true,
                    cache_dropped: true,
                    repo_size_bytes: match step.as_str() {
                        "init" => size(1_500.0),
                        "backup_full" => size(3.8e9),
                        "backup_incremental" => size(4.0e9),
                        _ => None,
                    },
                    tree: Some(TreeMeters {
                        source: "cgroup".into(),
                        user_secs: Some(wall * 0.85 * noise.factor(rsd)),
                        sys_secs: Some(wall * 0.1 * noise.factor(rsd)),
                        resident_peak_bytes: Some((330e6 * noise.factor(rsd)) as u64),
                        ..TreeMeters::default()
                    }),
                    ..StepRecord::blank(run_id, tool.name, cycle, step, 1_795_978_272_000)
                };
                out.push_str(&serde_json::to_string(&record).unwrap());
                out.push('\n');
            }
        }
    }
    out
}

const KVM_ENV: &str = r#"{"host":{"cpu_model":"AMD EPYC 7763 64-Core Processor","kernel":"6.1.0-28-amd64"},"guest":{"kernel":"6.1.0-27-amd64"},"acceleration":"kvm"}"#;

fn write_run(dir: &Path, name: &str, records: &str, environment: Option<&str>) -> PathBuf {
    let run = dir.join(name);
    std::fs::create_dir_all(run.join("raw")).unwrap();
    std::fs::write(run.join("raw/records.jsonl"), records).unwrap();
    if let Some(env) = environment {
        std::fs::write(run.join("raw/environment.json"), env).unwrap();
    }
    run
}

fn paired(run: &Path, base: &str, cand: &str) -> Result<Comparison, CompareError> {
    compare::compare(
        &Request::Paired {
            run: run.into(),
            baseline: base.into(),
            candidate: cand.into(),
        },
        &Settings::default(),
    )
}

fn verdict(c: &Comparison, phase: Step, figure: Figure) -> Verdict {
    c.row(&phase, figure)
        .unwrap_or_else(|| panic!("no row {phase} {figure:?}"))
        .verdict
}

#[test]
fn a_clearly_slower_candidate_is_found_slower() {
    let tmp = tempfile::tempdir().unwrap();
    let slow = ToolSpec {
        slow_factor: 1.4,
        ..ToolSpec::new("borg@zstd22")
    };
    let text = records("r", &[ToolSpec::new("borg"), slow], 3, 0.02, 7);
    let run = write_run(tmp.path(), "run", &text, Some(KVM_ENV));
    let c = paired(&run, "borg", "borg@zstd22").unwrap();
    assert_eq!(c.design, Design::Paired);
    let row = c.row(&Step::BACKUP_FULL, Figure::WallTime).unwrap();
    assert_eq!(row.verdict, Verdict::Worse, "{row:#?}");
    assert_eq!(row.verdict_word, "slower");
    assert_eq!(row.pairs, Some(3));
    let ratio = row.ratio.unwrap();
    assert!((1.3..1.5).contains(&ratio), "{ratio}");
    let [lo, hi] = row.interval.unwrap();
    assert!(lo < ratio && ratio < hi && lo > 1.05, "{lo} {ratio} {hi}");
    let test = row.test.as_ref().unwrap();
    assert!(test.p_holm >= test.p && test.p_holm <= c.settings.alpha);
    assert!(c.any_worse());
    // The CPU rows use the tree's figures, which every record has.
    let cpu = c.row(&Step::BACKUP_FULL, Figure::Cpu).unwrap();
    assert_eq!(cpu.cpu_source, Some(CpuSource::Tree));
    // The restore is the same binary's: never worse or better.
    for figure in [Figure::WallTime, Figure::Cpu, Figure::PeakMemory] {
        let v = verdict(&c, Step::RESTORE, figure);
        assert!(
            matches!(v, Verdict::NoChange | Verdict::Inconclusive),
            "{figure:?} {v:?}"
        );
    }
    // Three pairs: the method says a rank test could not reach 0.05.
    assert!(c.method.contains("0.250"), "{}", c.method);
}

#[test]
fn the_same_binary_on_both_sides_is_never_slower_or_faster() {
    let tmp = tempfile::tempdir().unwrap();
    let mut no_change = 0;
    let mut rows = 0;
    for seed in 0..200u64 {
        // Every count of cycles meets every noise level.
        let cycles = 3 + ((seed / 4) % 8) as u32;
        let rsd = [0.005, 0.01, 0.02, 0.035][(seed % 4) as usize];
        let text = records(
            "aa",
            &[ToolSpec::new("restic"), ToolSpec::new("restic@copy")],
            cycles,
            rsd,
            seed,
        );
        let run = write_run(tmp.path(), &format!("aa-{seed}"), &text, None);
        let c = paired(&run, "restic", "restic@copy").unwrap();
        for row in &c.rows {
            rows += 1;
            assert!(
                matches!(row.verdict, Verdict::NoChange | Verdict::Inconclusive),
                "seed {seed}, {} cycles, noise {rsd}: {} {:?} came out {:?}: {row:#?}",
                cycles,
                row.phase,
                row.figure,
                row.verdict
            );
            no_change += usize::from(row.verdict == Verdict::NoChange && !row.figure.is_exact());
        }
        assert!(!c.any_worse());
    }
    // The test can tell: with enough quiet pairs, equivalence is shown.
    assert!(
        no_change > rows / 10,
        "{no_change} of {rows} timed rows no change"
    );
}

#[test]
fn two_runs_of_the_same_binary_are_never_slower_or_faster() {
    let tmp = tempfile::tempdir().unwrap();
    for seed in 0..100u64 {
        let cycles = 3 + ((seed / 3) % 6) as u32;
        let rsd = [0.01, 0.02, 0.035][(seed % 3) as usize];
        let tools = [ToolSpec::new("borg")];
        let a = write_run(
            tmp.path(),
            &format!("a-{seed}"),
            &records("a", &tools, cycles, rsd, 1000 + seed),
            Some(KVM_ENV),
        );
        let b = write_run(
            tmp.path(),
            &format!("b-{seed}"),
            &records("b", &tools, cycles, rsd, 5000 + seed),
            Some(KVM_ENV),
        );
        let request = Request::Unpaired {
            baseline_run: a,
            candidate_run: b,
            baseline: "borg".into(),
            candidate: "borg".into(),
            force: false,
        };
        let c = compare::compare(&request, &Settings::default()).unwrap();
        for row in &c.rows {
            assert!(
                matches!(row.verdict, Verdict::NoChange | Verdict::Inconclusive),
                "seed {seed}: {} {:?} came out {:?}: {row:#?}",
                row.phase,
                row.figure,
                row.verdict
            );
        }
    }
}

#[test]
fn one_pair_is_inconclusive_and_sizes_are_compared_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let larger = ToolSpec {
        size_factor: 1.2,
        slow_factor: 3.0,
        ..ToolSpec::new("kopia-b")
    };
    let text = records("r", &[ToolSpec::new("kopia-a"), larger], 1, 0.01, 3);
    let run = write_run(tmp.path(), "run", &text, None);
    let c = paired(&run, "kopia-a", "kopia-b").unwrap();
    let wall = c.row(&Step::BACKUP_FULL, Figure::WallTime).unwrap();
    assert_eq!(wall.verdict, Verdict::Inconclusive);
    assert!((2.9..3.1).contains(&wall.ratio.unwrap()));
    assert!(wall.interval.is_none() && wall.test.is_none());
    assert!(wall.note.as_deref().unwrap().contains("one pair"));
    let size = c.row(&Step::BACKUP_FULL, Figure::RepoSize).unwrap();
    assert_eq!(
        (size.verdict, size.verdict_word.as_str()),
        (Verdict::Worse, "larger")
    );
    assert!((size.ratio.unwrap() - 1.2).abs() < 1e-9);
    assert!(size.interval.is_none() && size.test.is_none());
    // Growth: 0.2e9 against 0.24e9.
    let growth = c.row(&Step::BACKUP_INCREMENTAL, Figure::Growth).unwrap();
    assert_eq!(growth.verdict, Verdict::Worse);
    assert!(c.row(&Step::BACKUP_FULL, Figure::Growth).is_none());
    assert!(c.any_worse(), "a larger repository gates too");
}

#[test]
fn a_noisy_side_is_flagged() {
    let tmp = tempfile::tempdir().unwrap();
    let text = records("r", &[ToolSpec::new("a"), ToolSpec::new("b")], 6, 0.08, 11);
    let run = write_run(tmp.path(), "run", &text, None);
    let c = paired(&run, "a", "b").unwrap();
    let row = c.row(&Step::BACKUP_FULL, Figure::WallTime).unwrap();
    assert!(row.baseline.rsd.unwrap() > 0.035, "{row:#?}");
    assert!(row.baseline.noisy || row.candidate.noisy);
    let text = compare::render::terminal(&c);
    assert!(text.contains(" ~"), "{text}");
}

#[test]
fn errors_say_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let text = records(
        "r",
        &[ToolSpec::new("borg"), ToolSpec::new("restic")],
        2,
        0.01,
        1,
    );
    let run = write_run(tmp.path(), "run", &text, None);
    let err = paired(&run, "borg", "resticc").unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, CompareError::NoSuchTool { .. }), "{msg}");
    assert!(
        msg.contains("borg, restic") && msg.contains("--candidate"),
        "{msg}"
    );
    let err = paired(&run, "borg", "borg").unwrap_err();
    assert!(matches!(err, CompareError::SameTool { .. }), "{err}");

    // Never both ok in one cycle: no pair.
    let mut lines = Vec::new();
    for line in text.lines() {
        let mut r: StepRecord = serde_json::from_str(line).unwrap();
        r.ok = (r.tool == "borg") == (r.cycle == 1);
        lines.push(serde_json::to_string(&r).unwrap());
    }
    let run = write_run(tmp.path(), "nopair", &(lines.join("\n") + "\n"), None);
    let err = paired(&run, "borg", "restic").unwrap_err();
    assert!(matches!(err, CompareError::NoPair { .. }), "{err}");
    assert!(err.to_string().contains("labrun bench"), "{err}");

    let err = paired(tmp.path(), "borg", "restic").unwrap_err();
    assert!(err.to_string().contains("no raw evidence folder"), "{err}");

    let bad = Settings {
        margin: 0.0,
        ..Settings::default()
    };
    let err = compare::compare(
        &Request::Paired {
            run,
            baseline: "borg".into(),
            candidate: "restic".into(),
        },
        &bad,
    )
    .unwrap_err();
    assert!(err.to_string().contains("margin"), "{err}");
}

#[test]
fn two_runs_are_unpaired_and_refused_across_machines() {
    let tmp = tempfile::tempdir().unwrap();
    let a = records("a", &[ToolSpec::new("restic")], 5, 0.01, 21);
    let slow = ToolSpec {
        slow_factor: 1.5,
        ..ToolSpec::new("restic")
    };
    let b = records("b", &[slow], 5, 0.01, 22);
    let run_a = write_run(tmp.path(), "a", &a, Some(KVM_ENV));
    let run_b = write_run(tmp.path(), "b", &b, Some(KVM_ENV));
    let request = |force: bool, b: &Path| Request::Unpaired {
        baseline_run: run_a.clone(),
        candidate_run: b.into(),
        baseline: "restic".into(),
        candidate: "restic".into(),
        force,
    };
    let c = compare::compare(&request(false, &run_b), &Settings::default()).unwrap();
    assert_eq!(c.design, Design::Unpaired);
    assert!(c.method.contains("Welch"));
    let row = c.row(&Step::BACKUP_FULL, Figure::WallTime).unwrap();
    assert_eq!(row.verdict, Verdict::Worse, "{row:#?}");
    assert_eq!(row.pairs, None);
    assert_eq!((row.baseline.n, row.candidate.n), (5, 5));
    assert!(c.warnings.is_empty());

    let tcg = KVM_ENV.replace("\"kvm\"", "\"tcg\"");
    let run_tcg = write_run(tmp.path(), "tcg", &b, Some(&tcg));
    let err = compare::compare(&request(false, &run_tcg), &Settings::default()).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, CompareError::DifferentMachines { .. }),
        "{msg}"
    );
    assert!(
        msg.contains("acceleration") && msg.contains("--force"),
        "{msg}"
    );
    let forced = compare::compare(&request(true, &run_tcg), &Settings::default()).unwrap();
    assert!(
        forced.warnings[0].contains("acceleration"),
        "{:?}",
        forced.warnings
    );

    let bare = write_run(tmp.path(), "bare", &b, None);
    let err = compare::compare(&request(false, &bare), &Settings::default()).unwrap_err();
    assert!(err.to_string().contains("environment.json"), "{err}");
}

#[test]
fn reports_are_written_into_the_candidates_run() {
    let tmp = tempfile::tempdir().unwrap();
    let slow = ToolSpec {
        slow_factor: 1.4,
        ..ToolSpec::new("borg@zstd22")
    };
    let text = records("r", &[ToolSpec::new("borg"), slow], 4, 0.01, 5);
    let run = write_run(tmp.path(), "run", &text, None);
    let c = paired(&run, "borg", "borg@zstd22").unwrap();
    let written = compare::write(&c, &run).unwrap();
    assert_eq!(
        written,
        [
            run.join("compare.md"),
            run.join("compare.json"),
            run.join("compare.html")
        ]
    );
    // The page: the verdict table and its method, nothing from elsewhere.
    let html = std::fs::read_to_string(run.join("compare.html")).unwrap();
    assert!(html.contains("Verdict: borg@zstd22 against borg"), "{html}");
    assert!(html.contains("<td>slower</td>"), "{html}");
    assert!(html.contains("Content-Security-Policy"), "{html}");
    let md = std::fs::read_to_string(run.join("compare.md")).unwrap();
    assert!(md.contains("| Full backup | wall time |"), "{md}");
    assert!(md.contains("slower") && md.contains("## Method"), "{md}");
    let back: Comparison =
        serde_json::from_str(&std::fs::read_to_string(run.join("compare.json")).unwrap()).unwrap();
    assert_eq!(back.rows.len(), c.rows.len());
    assert_eq!(back.rows[0].verdict, c.rows[0].verdict);
    let json: serde_json::Value = serde_json::from_str(&compare::to_json(&c).unwrap()).unwrap();
    let row = json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["phase"] == "backup_full" && r["figure"] == "wall_time")
        .unwrap();
    assert_eq!(row["verdict"], "worse");
    assert_eq!(row["verdict_word"], "slower");
    assert_eq!(row["conclusive"], true);
    assert_eq!(row["pairs"], 4);
}

#[test]
fn a_pair_that_names_a_phase_and_figure_is_judged_on_that_row_alone() {
    use labrun_evidence::compare::ComparePair;
    let tmp = tempfile::tempdir().unwrap();
    let slow = ToolSpec {
        slow_factor: 1.3,
        slow_phase: Step::RESTORE,
        ..ToolSpec::new("restic@b")
    };
    let text = records("r", &[ToolSpec::new("restic@a"), slow], 3, 0.03, 11);
    let run = write_run(tmp.path(), "run", &text, Some(KVM_ENV));
    let all = paired(&run, "restic@a", "restic@b").unwrap();
    let among_all = all.row(&Step::RESTORE, Figure::WallTime).unwrap().clone();
    assert!(all.rows.len() > 10, "{}", all.rows.len());

    let mut asked = all.clone();
    let pair = ComparePair {
        phase: Some(Step::RESTORE),
        figure: Some(Figure::WallTime),
        ..ComparePair::of("restic@a", "restic@b")
    };
    compare::keep_asked(&mut asked, &pair);
    // Only the row asked about, its p adjusted over itself alone: its own
    // p, sharper than the same row's among all of them.
    assert_eq!(asked.rows.len(), 1);
    let row = &asked.rows[0];
    let test = row.test.as_ref().unwrap();
    assert_eq!(test.p_holm, test.p);
    let before = among_all.test.as_ref().unwrap();
    assert_eq!(test.p, before.p);
    assert!(
        test.p_holm < before.p_holm,
        "{} {}",
        test.p_holm,
        before.p_holm
    );

    // A pair that names neither keeps every row as it was.
    let mut every = all.clone();
    compare::keep_asked(&mut every, &ComparePair::of("restic@a", "restic@b"));
    assert_eq!(every.rows.len(), all.rows.len());
}

/// A run whose `raw/added-pairs.json` names the sequential rule's looks is
/// judged by it (each p-value times the looks, wider intervals, the method
/// says so); an older file without them, or none, is judged as before.
#[test]
fn added_pairs_under_the_sequential_rule_are_judged_by_it_and_older_runs_as_before() {
    use labrun_evidence::compare::{AddedPairs, ComparePair, ComparePlan};
    let tmp = tempfile::tempdir().unwrap();
    let slow = ToolSpec {
        slow_factor: 1.3,
        slow_phase: Step::RESTORE,
        ..ToolSpec::new("restic@b")
    };
    let text = records("r", &[ToolSpec::new("restic@a"), slow], 5, 0.03, 11);
    let run = write_run(tmp.path(), "run", &text, Some(KVM_ENV));
    let plan = ComparePlan {
        pairs: vec![ComparePair {
            phase: Some(Step::RESTORE),
            figure: Some(Figure::WallTime),
            ..ComparePair::of("restic@a", "restic@b")
        }],
        margin: None,
        noise_floor: None,
        series: Vec::new(),
    };
    std::fs::write(
        run.join("raw/compare-plan.json"),
        serde_json::to_vec(&plan).unwrap(),
    )
    .unwrap();
    let judged = |added: Option<&AddedPairs>| {
        let path = run.join("raw/added-pairs.json");
        match added {
            Some(a) => std::fs::write(&path, serde_json::to_vec(a).unwrap()).unwrap(),
            None => drop(std::fs::remove_file(&path)),
        }
        let raw = labrun_report::evidence::load(&run).unwrap();
        let (made, warnings) = compare::requested(&raw);
        assert!(warnings.is_empty(), "{warnings:?}");
        made.into_iter().next().unwrap()
    };
    let old = AddedPairs {
        max: 20,
        added: 2,
        rounds: Vec::new(),
        looks: None,
        needed: None,
    };
    let fixed = judged(None);
    let older = judged(Some(&old));
    assert_eq!(
        older.rows, fixed.rows,
        "an older added-pairs.json changes nothing"
    );
    assert_eq!(older.method, fixed.method);
    assert_eq!(older.settings, fixed.settings);

    let sequential = judged(Some(&AddedPairs {
        looks: Some(21),
        needed: Some(20),
        ..old
    }));
    let (f, s) = (&fixed.rows[0], &sequential.rows[0]);
    let (fp, sp) = (f.test.as_ref().unwrap().p, s.test.as_ref().unwrap().p);
    assert!((sp - (fp * 21.0).min(1.0)).abs() < 1e-12, "{fp} {sp}");
    let (fi, si) = (f.interval.unwrap(), s.interval.unwrap());
    assert!(si[0] < fi[0] && si[1] > fi[1], "{fi:?} {si:?}");
    assert!(
        sequential.method.contains("Sequential"),
        "{}",
        sequential.method
    );
    assert_eq!(sequential.settings.looks, 21);
}

/// The cap `bench --until-conclusive` prints is what the open rows of the
/// lab's comparisons need: some pairs on a usual host, more than the ceiling
/// on a very noisy one, none when nothing is open.
#[test]
fn the_pairs_a_run_needs_follow_its_spread() {
    use labrun_evidence::compare::{ComparePair, ComparePlan};
    use labrun_report::compare::sequential::{CEILING, needed};
    let tmp = tempfile::tempdir().unwrap();
    let needs = |name: &str, rsd: f64, slow: f64| {
        let cand = ToolSpec {
            slow_factor: slow,
            slow_phase: Step::RESTORE,
            ..ToolSpec::new("restic@b")
        };
        let text = records("r", &[ToolSpec::new("restic@a"), cand], 3, rsd, 5);
        let run = write_run(tmp.path(), name, &text, Some(KVM_ENV));
        let plan = ComparePlan {
            pairs: vec![ComparePair {
                phase: Some(Step::RESTORE),
                figure: Some(Figure::WallTime),
                ..ComparePair::of("restic@a", "restic@b")
            }],
            margin: None,
            noise_floor: None,
            series: Vec::new(),
        };
        std::fs::write(
            run.join("raw/compare-plan.json"),
            serde_json::to_vec(&plan).unwrap(),
        )
        .unwrap();
        let raw = labrun_report::evidence::load(&run).unwrap();
        needed(&compare::requested(&raw).0, CEILING)
    };
    // 8% on each side: 3 A/A pairs stay open (at 3% they already say
    // `no change`), and the spread asks for some more.
    let noisy = needs("usual", 0.08, 1.0)
        .unwrap()
        .expect("3 A/A pairs at 8% stay open");
    let less = needs("less", 0.05, 1.0)
        .unwrap()
        .expect("3 A/A pairs at 5% stay open");
    assert!(
        0 < less && less < noisy && noisy < CEILING,
        "{less} {noisy}"
    );
    assert_eq!(
        needs("noisiest", 0.5, 1.0),
        Err(()),
        "50% noise needs more than the ceiling"
    );
    assert_eq!(
        needs("clear", 0.001, 2.0),
        Ok(None),
        "a clear step is decided at once"
    );
}

/// Issue 46, item 4: `compare` can be asked for the durable time (the step
/// plus its flush). A candidate as fast as its baseline but leaving its
/// restore for the kernel to write is slower there; a run without flush
/// records has no durable row.
#[test]
fn the_durable_time_can_be_asked_for_and_judges_the_flush() {
    use labrun_evidence::compare::ComparePair;
    use labrun_evidence::record::Flush;
    let tmp = tempfile::tempdir().unwrap();
    let tools = [ToolSpec::new("restic@a"), ToolSpec::new("restic@b")];
    let plain = records("r", &tools, 5, 0.02, 5);
    let without = write_run(tmp.path(), "without", &plain, Some(KVM_ENV));
    let c = paired(&without, "restic@a", "restic@b").unwrap();
    assert!(c.row(&Step::RESTORE, Figure::DurableTime).is_none());

    let flushed: Vec<String> = plain
        .lines()
        .map(|line| {
            let mut r: StepRecord = serde_json::from_str(line).unwrap();
            // The candidate's restore leaves 40 s of writes to the kernel.
            let secs = if r.tool == "restic@b" && r.step == Step::RESTORE {
                40.0
            } else {
                0.2
            };
            r.flush = Some(Flush {
                path: "/w/target".into(),
                secs,
                unwritten_bytes: Some(1 << 20),
            });
            serde_json::to_string(&r).unwrap()
        })
        .collect();
    let run = write_run(
        tmp.path(),
        "with",
        &(flushed.join("\n") + "\n"),
        Some(KVM_ENV),
    );
    let mut c = paired(&run, "restic@a", "restic@b").unwrap();
    let wall = verdict(&c, Step::RESTORE, Figure::WallTime);
    assert!(
        matches!(wall, Verdict::NoChange | Verdict::Inconclusive),
        "{wall:?}"
    );
    let figure: Figure = serde_json::from_str("\"durable_time\"").unwrap();
    let pair = ComparePair {
        phase: Some(Step::RESTORE),
        figure: Some(figure),
        ..ComparePair::of("restic@a", "restic@b")
    };
    compare::keep_asked(&mut c, &pair);
    assert_eq!(c.rows.len(), 1);
    assert_eq!(c.rows[0].figure, Figure::DurableTime);
    assert_eq!(c.rows[0].verdict, Verdict::Worse, "{:#?}", c.rows[0]);
    assert_eq!(c.rows[0].verdict_word, "slower");
}
