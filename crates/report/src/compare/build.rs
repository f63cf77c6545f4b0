//! The comparison itself: a pure function from evidence already read to a
//! [`Comparison`]. `labrun compare` calls it on runs it loaded; `bench` can
//! call it on the records it holds after every cycle.

use super::error::CompareError;
use super::figure::{CpuSource, Figure};
use super::method;
use super::model::{COMPARISON_VERSION, Comparison, Design, Side};
use super::row::{exact_row, left_out, timed_row};
use super::settings::Settings;
use super::verdict::{apply_holm, set_verdict};
use crate::compare::FigureDef as _;
use crate::evidence::{PlanView, RawRun};
use crate::figures::{self, growth};
use crate::roles::Roles;
use labrun_evidence::{Step, StepRecord};
use std::collections::BTreeMap;

/// A record's place in a run: its cycle, and its commit in a git-history
/// series (whose steps repeat within a cycle).
pub(super) type Key = (u32, Option<u32>);

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
    let roles = Roles::of_plan(base.run.plan.as_ref());
    let mut rows = Vec::new();
    let mut warnings = Vec::new();
    for phase in phases(&[base.run, cand.run]) {
        let (b, c) = (base.ok_records(&phase), cand.ok_records(&phase));
        for figure in Figure::ALL {
            let cpu = cpu_source(figure, &b, &c);
            let (bv, cv) = if figure == Figure::Growth {
                if roles.incremental.as_ref() != Some(&phase) {
                    continue;
                }
                (growths(base, &roles, &b), growths(cand, &roles, &c))
            } else {
                (values(&b, figure, cpu), values(&c, figure, cpu))
            };
            if bv.is_empty() && cv.is_empty() {
                continue;
            }
            let mut row = if figure.is_exact() {
                exact_row(design, &bv, &cv, settings)
            } else {
                // Said in the row's note and, for the terminal's reader
                // too, among the comparison's warnings.
                if let Some(why) = left_out(&bv, &cv) {
                    warnings.push(format!("{phase} {}: {why}", figure.def().title));
                }
                timed_row(design, &bv, &cv, settings)
            };
            row.phase = phase.clone();
            row.figure = figure;
            row.unit = figure.def().unit.symbol().to_string();
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
        roles,
        rows,
        warnings,
        added_pairs: None,
    }
}

/// The tree's CPU where every record of the row has it (so both sides
/// are measured the same way), else the tool process's.
fn cpu_source(
    figure: Figure,
    b: &BTreeMap<Key, &StepRecord>,
    c: &BTreeMap<Key, &StepRecord>,
) -> CpuSource {
    let all_tree = b
        .values()
        .chain(c.values())
        .all(|r| figures::TREE_CPU.of(r).is_some());
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

/// Growth per cycle: the later backup's size minus the first one's.
fn growths(
    side: &SideRun,
    roles: &Roles,
    incremental: &BTreeMap<Key, &StepRecord>,
) -> BTreeMap<Key, f64> {
    let Some(first) = &roles.full else {
        return BTreeMap::new();
    };
    let full = side.ok_records(first);
    incremental
        .iter()
        .filter_map(|(k, r)| {
            let f = full.get(&(k.0, None)).or_else(|| full.get(k))?;
            Some((*k, growth(f, r)?))
        })
        .collect()
}
