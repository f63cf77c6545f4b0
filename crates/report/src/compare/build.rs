//! The comparison itself: a pure function from evidence already read to a
//! [`Comparison`]. `labrun compare` calls it on runs it loaded; `bench` can
//! call it on the records it holds after every cycle.

use super::error::CompareError;
use super::figure::{CpuSource, Figure, growth, tree_cpu};
use super::method;
use super::model::{
    COMPARISON_VERSION, Comparison, Design, Row, Side, SideFigure, TestResult, Verdict,
};
use super::settings::Settings;
use super::stats::{LogTest, mean, rsd};
use super::verdict::{apply_holm, exact, hypothesis, set_verdict};
use crate::evidence::{PlanView, RawRun};
use labrun_evidence::{Step, StepRecord};
use std::collections::BTreeMap;

/// A record's place in a run: its cycle, and its commit in a git-history
/// series (whose steps repeat within a cycle).
type Key = (u32, Option<u32>);

/// Two tools of one run, paired cycle by cycle.
pub fn compare_paired(
    run: &RawRun,
    baseline: &str,
    candidate: &str,
    settings: &Settings,
) -> Result<Comparison, CompareError> {
    settings.validate()?;
    if baseline == candidate {
        return Err(CompareError::SameTool {
            tool: baseline.to_string(),
        });
    }
    let base = SideRun::new(run, baseline, "baseline")?;
    let cand = SideRun::new(run, candidate, "candidate")?;
    let comparison = build(Design::Paired, &base, &cand, settings);
    if comparison.rows.iter().all(|r| r.pairs.unwrap_or(0) == 0) {
        return Err(CompareError::NoPair {
            baseline: baseline.to_string(),
            candidate: candidate.to_string(),
        });
    }
    Ok(comparison)
}

/// A tool of one run against a tool of another: no pairs.
pub fn compare_unpaired(
    baseline_run: &RawRun,
    baseline: &str,
    candidate_run: &RawRun,
    candidate: &str,
    settings: &Settings,
) -> Result<Comparison, CompareError> {
    settings.validate()?;
    let base = SideRun::new(baseline_run, baseline, "baseline")?;
    let cand = SideRun::new(candidate_run, candidate, "candidate")?;
    Ok(build(Design::Unpaired, &base, &cand, settings))
}

/// One side: a tool and the run it is read from.
struct SideRun<'a> {
    run: &'a RawRun,
    side: Side,
}

impl<'a> SideRun<'a> {
    fn new(run: &'a RawRun, tool: &str, role: &'static str) -> Result<Self, CompareError> {
        let names = tool_names(run);
        if !names.iter().any(|n| n == tool) {
            return Err(CompareError::NoSuchTool {
                tool: tool.to_string(),
                run: run_id(run),
                present: if names.is_empty() {
                    "no tool records".into()
                } else {
                    names.join(", ")
                },
                role,
            });
        }
        let version = run
            .plan
            .iter()
            .flat_map(|p| &p.tools)
            .find(|t| t.name == tool)
            .and_then(|t| t.version.clone());
        Ok(SideRun {
            run,
            side: Side {
                run_id: run_id(run),
                tool: tool.to_string(),
                version,
            },
        })
    }

    /// The tool's ok records of a phase, by cycle (and commit).
    fn ok_records(&self, phase: &Step) -> BTreeMap<Key, &'a StepRecord> {
        self.run
            .records
            .iter()
            .filter(|r| r.tool == self.side.tool && r.ok && r.cycle > 0 && r.step == *phase)
            .map(|r| ((r.cycle, r.history.as_ref().map(|h| h.index)), r))
            .collect()
    }
}

pub fn run_id(run: &RawRun) -> String {
    run.plan
        .as_ref()
        .and_then(|p| p.run_id.clone())
        .or_else(|| run.records.first().map(|r| r.run_id.clone()))
        .unwrap_or_else(|| run.folder_name.clone())
}

/// The tools of a run: the plan's, then any only the records name.
pub fn tool_names(run: &RawRun) -> Vec<String> {
    let mut names: Vec<String> = run
        .plan
        .iter()
        .flat_map(|p| &p.tools)
        .map(|t| t.name.clone())
        .collect();
    for r in &run.records {
        if !r.tool.is_empty() && !names.contains(&r.tool) {
            names.push(r.tool.clone());
        }
    }
    names
}

/// The timed phases of the runs, in protocol order, then any other timed
/// step the records hold.
fn phases(runs: &[&RawRun]) -> Vec<Step> {
    let mut all: Vec<Step> = Vec::new();
    for run in runs {
        let planned = run
            .plan
            .as_ref()
            .map_or_else(PlanView::published_timed_steps, |p| p.timed_steps());
        let recorded = run
            .records
            .iter()
            .filter(|r| r.timed)
            .map(|r| r.step.clone());
        for step in planned.into_iter().chain(recorded) {
            if !all.contains(&step) {
                all.push(step);
            }
        }
    }
    all
}

fn build(design: Design, base: &SideRun, cand: &SideRun, settings: &Settings) -> Comparison {
    let mut rows = Vec::new();
    for phase in phases(&[base.run, cand.run]) {
        let (b, c) = (base.ok_records(&phase), cand.ok_records(&phase));
        for figure in Figure::ALL {
            let cpu = cpu_source(figure, &b, &c);
            let (bv, cv) = if figure == Figure::Growth {
                if phase != Step::BACKUP_INCREMENTAL {
                    continue;
                }
                (growths(base, &b), growths(cand, &c))
            } else {
                (values(&b, figure, cpu), values(&c, figure, cpu))
            };
            if bv.is_empty() && cv.is_empty() {
                continue;
            }
            let mut row = if figure.is_exact() {
                exact_row(design, &bv, &cv, settings)
            } else {
                timed_row(design, &bv, &cv, settings)
            };
            row.phase = phase.clone();
            row.figure = figure;
            row.unit = figure.unit().to_string();
            row.cpu_source = (figure == Figure::Cpu).then_some(cpu);
            let verdict = row.verdict;
            set_verdict(&mut row, verdict);
            rows.push(row);
        }
    }
    apply_holm(&mut rows, settings.alpha);
    let max_pairs = rows.iter().filter_map(|r| r.pairs).max().unwrap_or(0);
    Comparison {
        comparison_version: COMPARISON_VERSION,
        design,
        baseline: base.side.clone(),
        candidate: cand.side.clone(),
        settings: *settings,
        method: method::text(design, settings, max_pairs),
        rows,
        warnings: Vec::new(),
    }
}

/// The tree's CPU where every record of the row has it (so both sides
/// are measured the same way), else the tool process's.
fn cpu_source(
    figure: Figure,
    b: &BTreeMap<Key, &StepRecord>,
    c: &BTreeMap<Key, &StepRecord>,
) -> CpuSource {
    let all_tree = b.values().chain(c.values()).all(|r| tree_cpu(r).is_some());
    if figure == Figure::Cpu && all_tree && !(b.is_empty() && c.is_empty()) {
        CpuSource::Tree
    } else {
        CpuSource::Process
    }
}

fn values(
    records: &BTreeMap<Key, &StepRecord>,
    figure: Figure,
    cpu: CpuSource,
) -> BTreeMap<Key, f64> {
    records
        .iter()
        .filter_map(|(k, r)| Some((*k, figure.value(r, cpu)?)))
        .filter(|(_, v)| v.is_finite())
        .collect()
}

/// Growth per cycle: the incremental backup's size minus the full one's.
fn growths(side: &SideRun, incremental: &BTreeMap<Key, &StepRecord>) -> BTreeMap<Key, f64> {
    let full = side.ok_records(&Step::BACKUP_FULL);
    incremental
        .iter()
        .filter_map(|(k, r)| {
            let f = full.get(&(k.0, None)).or_else(|| full.get(k))?;
            Some((*k, growth(f, r)?))
        })
        .collect()
}

fn empty_row(design: Design) -> Row {
    Row {
        phase: Step::BACKUP_FULL,
        figure: Figure::WallTime,
        unit: String::new(),
        cpu_source: None,
        baseline: side_figure(&[], false, 0.0),
        candidate: side_figure(&[], false, 0.0),
        pairs: (design == Design::Paired).then_some(0),
        ratio: None,
        interval: None,
        test: None,
        verdict: Verdict::Inconclusive,
        verdict_word: String::new(),
        conclusive: false,
        note: None,
    }
}

fn side_figure(values: &[f64], geometric: bool, noise: f64) -> SideFigure {
    let center = if values.is_empty() {
        None
    } else if geometric {
        let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
        Some(mean(&logs).exp())
    } else {
        Some(median(values))
    };
    let rsd = (values.len() >= 2)
        .then(|| rsd(values))
        .filter(|r| r.is_finite());
    SideFigure {
        n: values.len(),
        center,
        rsd,
        noisy: rsd.is_some_and(|r| r > noise),
    }
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// A timed figure: log-ratios, an interval and a test (Holm's adjustment
/// and the verdict come after every row is made).
fn timed_row(
    design: Design,
    b: &BTreeMap<Key, f64>,
    c: &BTreeMap<Key, f64>,
    settings: &Settings,
) -> Row {
    let mut row = empty_row(design);
    let positive = |m: &BTreeMap<Key, f64>| m.values().filter(|v| **v > 0.0).count();
    let left_out = (b.len() - positive(b)) + (c.len() - positive(c));
    let (bv, cv, test, log_ratio) = match design {
        Design::Paired => {
            let pairs: Vec<(f64, f64)> = b
                .iter()
                .filter_map(|(k, &bv)| Some((bv, *c.get(k)?)))
                .filter(|(bv, cv)| *bv > 0.0 && *cv > 0.0)
                .collect();
            let d: Vec<f64> = pairs.iter().map(|(b, c)| (c / b).ln()).collect();
            row.pairs = Some(pairs.len());
            let bv: Vec<f64> = pairs.iter().map(|p| p.0).collect();
            let cv: Vec<f64> = pairs.iter().map(|p| p.1).collect();
            let log_ratio = (!d.is_empty()).then(|| mean(&d));
            (bv, cv, LogTest::paired(&d), log_ratio)
        }
        Design::Unpaired => {
            let bv: Vec<f64> = b.values().copied().filter(|v| *v > 0.0).collect();
            let cv: Vec<f64> = c.values().copied().filter(|v| *v > 0.0).collect();
            let lb: Vec<f64> = bv.iter().map(|v| v.ln()).collect();
            let lc: Vec<f64> = cv.iter().map(|v| v.ln()).collect();
            let log_ratio = (!lb.is_empty() && !lc.is_empty()).then(|| mean(&lc) - mean(&lb));
            (bv, cv, LogTest::welch(&lb, &lc), log_ratio)
        }
    };
    row.baseline = side_figure(&bv, true, settings.noise);
    row.candidate = side_figure(&cv, true, settings.noise);
    row.ratio = log_ratio.map(f64::exp);
    match test {
        Some(t) => {
            let (lo, hi) = t.interval(settings.confidence());
            row.interval = Some([lo.exp(), hi.exp()]);
            let (hypothesis, p) = hypothesis(&t, settings.log_margin());
            row.test = Some(TestResult {
                hypothesis,
                p,
                p_holm: p,
                df: t.df,
            });
        }
        None => {
            row.note = Some(match (design, row.pairs) {
                (Design::Paired, Some(0)) => {
                    "no pair: not both sides have an ok record of this figure in one cycle".into()
                }
                (Design::Paired, _) => "one pair: no spread to judge by".into(),
                (Design::Unpaired, _) => {
                    "fewer than two values on a side: no spread to judge by".into()
                }
            });
        }
    }
    if left_out > 0 {
        let why = format!("{left_out} zero value(s) left out: a zero has no ratio");
        row.note = Some(match row.note.take() {
            Some(n) => format!("{n}; {why}"),
            None => why,
        });
    }
    row
}

/// A size: the ratio of the medians, judged by the margin alone.
fn exact_row(
    design: Design,
    b: &BTreeMap<Key, f64>,
    c: &BTreeMap<Key, f64>,
    settings: &Settings,
) -> Row {
    let mut row = empty_row(design);
    let bv: Vec<f64> = b.values().copied().collect();
    let cv: Vec<f64> = c.values().copied().collect();
    if design == Design::Paired {
        row.pairs = Some(b.keys().filter(|k| c.contains_key(k)).count());
    }
    row.baseline = side_figure(&bv, false, settings.noise);
    row.candidate = side_figure(&cv, false, settings.noise);
    let (Some(base), Some(cand)) = (row.baseline.center, row.candidate.center) else {
        row.note = Some("recorded on one side only".into());
        return row;
    };
    if base > 0.0 && cand >= 0.0 {
        let ratio = cand / base;
        row.ratio = Some(ratio);
        row.verdict = exact(ratio, settings.margin);
    } else if base == cand {
        row.ratio = Some(1.0);
        row.verdict = Verdict::NoChange;
    } else {
        row.note = Some("a zero or negative baseline has no ratio".into());
    }
    row
}
