//! The summary of one run, computed from its raw evidence alone.

use crate::environment::Environment;
use crate::error::Result;
use crate::evidence::{self, BinaryDigest, PlanView, RawRun};
use crate::figures::{self, Figure};
pub use crate::phase_figures::PhaseFigures;
use crate::roles::Roles;
use crate::sample::{self, Sample};
use crate::stats::Stat;
use crate::warning::Warning;
use labrun_evidence::{ExitStatus, Step, StepRecord};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Version of the `summary.json` layout, bumped when a field changes meaning.
pub const SUMMARY_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub summary_version: u32,
    pub run_id: String,
    /// Cycles the plan asked for; None without a readable plan.
    pub cycles_planned: Option<u32>,
    /// Which steps are the first backup, the later one and the restore
    /// (from the plan's `makes:` and `restores:`). Absent from JSON when
    /// they are the published cycle's.
    #[serde(default, skip_serializing_if = "Roles::is_published")]
    pub roles: Roles,
    /// In the plan's order, then any tool only the records name.
    pub tools: Vec<ToolSummary>,
    pub environment: Option<Environment>,
    pub binaries: Vec<BinaryDigest>,
    /// Where each of the lab's tools came from, and which this run ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_sources: Vec<crate::evidence::ToolSource>,
    pub failed_steps: Vec<FailedStep>,
    pub warnings: Vec<Warning>,
    /// Every measured figure of every record, flat.
    pub samples: Vec<Sample>,
    /// A git-history run (SPEC 6): per tool and snapshot, backup, repository
    /// size and restore. Empty (and absent from JSON) for other runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<crate::history::SnapshotRow>,
    /// What each tool kept of the fidelity fixture's metadata. Empty (and
    /// absent from JSON) for runs without a `fixture` step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fidelity: Vec<crate::fidelity::FidelityRow>,
    /// The agent's own CPU against the timed steps' (absent without tree
    /// figures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meter_cost: Option<crate::meter_cost::MeterCost>,
    /// The timed steps' tree samples (raw evidence; drawn, not serialized).
    #[serde(skip)]
    pub timelines: Vec<crate::timeline::StepTimeline>,
    /// The verdicts the lab asked for (`compare:`), one per pair, in its
    /// order. Empty (and absent from JSON) for a lab without one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comparisons: Vec<crate::compare::Comparison>,
    /// The floor the lab's `noise_floor:` measured, per timed phase and
    /// figure; absent (from JSON too) without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_floor: Option<crate::compare::NoiseFloor>,
    /// The trend of each release series the lab declared (`versions:`);
    /// empty (and absent from JSON) without one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trends: Vec<crate::trend::Trend>,
    /// With pairs added: how many tested rows the lab's own cycles decided
    /// under the fixed rule, and the whole run under the sequential rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided: Option<crate::questions::DecidedByRule>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSummary {
    pub tool: String,
    /// The version the plan pinned.
    pub version: Option<String>,
    /// Cycles that ran to their end: every timed step recorded, or stopped
    /// by a failed step (the agent ends a tool's cycle at its first failure).
    /// Fewer than planned means the run itself stopped early.
    pub cycles_finished: u32,
    /// The timed phases, in protocol order.
    pub phases: Vec<PhaseSummary>,
    /// Repository size after the first backup ([`Roles::full`]), bytes.
    pub repo_size_after_full: Option<Stat>,
    /// Size after the first later backup minus size after the first one
    /// ([`Roles::incremental`], [`Roles::full`]), bytes.
    pub growth_after_incremental: Option<Stat>,
    /// One per cycle that has a restore record.
    pub restore_checks: Vec<RestoreCheck>,
    /// Set on the A/A copy a lab's `noise_floor:` added: the tool it
    /// copies. Its rows measure the machine's noise, not a tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_floor_of: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseSummary {
    pub phase: Step,
    /// Records of this phase (one per cycle that reached it).
    pub recorded: u32,
    /// Of those, the ones that succeeded: only these make the figures.
    pub ok: u32,
    /// Every per-phase figure of [`crate::figures`], under its key.
    #[serde(flatten)]
    pub figures: PhaseFigures,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RestoreCheck {
    pub cycle: u32,
    pub outcome: CheckOutcome,
    /// The first differences found, when it failed.
    #[serde(default)]
    pub first_differences: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckOutcome {
    Pass,
    Fail,
    /// A restore was recorded but no checksum comparison was.
    NotChecked,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedStep {
    /// Empty for steps that belong to no tool.
    pub tool: String,
    pub cycle: u32,
    pub step: Step,
    pub error: Option<String>,
    pub exit: Option<ExitStatus>,
    /// The protocol allowed this step to fail (`may_fail`): listed, but
    /// not a failure of the run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allowed: bool,
    /// The kernel's OOM killer ended it (the record's `oom`; its error says
    /// what was killed): with the environment's guest memory, the size at
    /// which a tool ran out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub oom: bool,
}

impl Summary {
    /// The timed phases of the run, in the protocol's order (each tool's
    /// phases are; a phase only some tool has comes after those before it).
    pub fn phase_steps(&self) -> Vec<Step> {
        let mut all: Vec<Step> = Vec::new();
        for t in &self.tools {
            for p in &t.phases {
                if !all.contains(&p.phase) {
                    all.push(p.phase.clone());
                }
            }
        }
        all
    }

    /// The per-phase figures this run's tables show, in order: every one,
    /// but those shown only when measured where no phase of any tool has
    /// them (a run from before flushes keeps the columns it had).
    pub fn phase_figures(
        &self,
    ) -> Vec<(
        &'static crate::figures::Figure,
        &'static crate::figures::PhaseColumn,
    )> {
        crate::figures::per_phase()
            .filter(|(f, c)| {
                !c.only_when_measured
                    || self
                        .tools
                        .iter()
                        .any(|t| t.phases.iter().any(|p| p.stat(f).is_some()))
            })
            .collect()
    }
}

impl PhaseSummary {
    /// One figure of the table, if this phase has it.
    pub fn stat(&self, figure: &Figure) -> Option<Stat> {
        self.figures.get(figure)
    }
}

impl ToolSummary {
    pub fn phase(&self, step: &Step) -> Option<&PhaseSummary> {
        self.phases.iter().find(|p| p.phase == *step)
    }

    pub fn checks_with(&self, outcome: CheckOutcome) -> usize {
        self.restore_checks
            .iter()
            .filter(|c| c.outcome == outcome)
            .count()
    }
}

/// Reads `run_dir/raw` and summarizes it.
pub fn summarize(run_dir: &Path) -> Result<Summary> {
    Ok(summarize_raw(evidence::load(run_dir)?))
}

/// The summary of evidence already read. Pure: same input, same summary.
pub fn summarize_raw(raw: RawRun) -> Summary {
    let run_id = raw
        .plan
        .as_ref()
        .and_then(|p| p.run_id.clone())
        .or_else(|| raw.records.first().map(|r| r.run_id.clone()))
        .unwrap_or_else(|| raw.folder_name.clone());
    let timed_steps = raw
        .plan
        .as_ref()
        .map_or_else(evidence::PlanView::published_timed_steps, |p| {
            p.timed_steps()
        });

    let roles = Roles::of_plan(raw.plan.as_ref());
    let tools: Vec<ToolSummary> = tool_names(&raw)
        .into_iter()
        .map(|(name, version)| summarize_tool(&name, version, &raw.records, &timed_steps, &roles))
        .collect();

    let failed_steps = raw
        .records
        .iter()
        .filter(|r| !r.ok)
        .map(|r| FailedStep {
            tool: r.tool.clone(),
            cycle: r.cycle,
            step: r.step.clone(),
            error: r.error.clone(),
            exit: r.exit.clone(),
            allowed: r.may_fail,
            oom: r.oom.is_some(),
        })
        .collect();

    let (mut comparisons, unmade) = crate::compare::requested(&raw);
    let noise_floor = crate::compare::noise_floor(&raw, &mut comparisons);
    let (trends, trends_unmade) = crate::trend::of_run(&raw);
    // Said beside a series' trend, whose steps are the rows pairs decide.
    let decided = if trends.is_empty() {
        None
    } else {
        crate::questions::decided_by_rule(&raw)
    };
    let mut summary = Summary {
        summary_version: SUMMARY_VERSION,
        run_id,
        cycles_planned: raw.plan.as_ref().and_then(PlanView::run_cycles),
        roles,
        tools,
        environment: raw.environment.clone(),
        binaries: raw.binaries.clone(),
        tool_sources: raw.tool_sources.clone(),
        failed_steps,
        warnings: raw.warnings.clone(),
        samples: sample::from_records(&raw.records),
        history: Vec::new(),
        fidelity: Vec::new(),
        meter_cost: crate::meter_cost::of(&raw.records),
        timelines: raw.timelines.clone(),
        comparisons,
        noise_floor,
        trends,
        decided,
    };
    if let Some(pair) = raw
        .compare_plan
        .as_ref()
        .and_then(|p| p.noise_floor.as_ref())
    {
        for t in summary
            .tools
            .iter_mut()
            .filter(|t| t.tool == pair.candidate)
        {
            t.noise_floor_of = Some(pair.baseline.clone());
        }
    }
    summary.warnings.extend(unmade);
    summary.warnings.extend(trends_unmade);
    let names: Vec<String> = summary.tools.iter().map(|t| t.tool.clone()).collect();
    summary.history = crate::history::rows(&names, &summary.roles, &raw.records);
    summary.fidelity = crate::fidelity::rows(&names, &raw.records);
    let more = crate::checks::warnings(&summary, &raw.records);
    summary.warnings.extend(more);
    summary
}

/// Tools in the plan's order, then tools only the records name.
fn tool_names(raw: &RawRun) -> Vec<(String, Option<String>)> {
    let mut names: Vec<(String, Option<String>)> = raw
        .plan
        .iter()
        .flat_map(|p| &p.tools)
        .map(|t| (t.name.clone(), t.version.clone()))
        .collect();
    for r in &raw.records {
        if !r.tool.is_empty() && !names.iter().any(|(n, _)| *n == r.tool) {
            names.push((r.tool.clone(), None));
        }
    }
    names
}

fn summarize_tool(
    tool: &str,
    version: Option<String>,
    records: &[StepRecord],
    timed_steps: &[Step],
    roles: &Roles,
) -> ToolSummary {
    let mine: Vec<&StepRecord> = records.iter().filter(|r| r.tool == tool).collect();
    let of_step = |step: Step| mine.iter().copied().filter(move |r| r.step == step);

    // The protocol's timed steps in its order, then any other timed step the
    // records hold (a newer agent's), in the order they ran.
    let mut phase_steps: Vec<Step> = timed_steps.to_vec();
    for r in mine.iter().filter(|r| r.timed) {
        if !phase_steps.contains(&r.step) {
            phase_steps.push(r.step.clone());
        }
    }
    let phases = phase_steps
        .into_iter()
        .map(|step| summarize_phase(step.clone(), of_step(step)))
        .collect();

    // Cycle 0 holds run-wide steps (the pristine dataset), not a cycle.
    // Each cycle's records, found once: a look-up per cycle must not scan
    // every record, or the report grows with the square of the run.
    let mut by_cycle: BTreeMap<u32, Vec<&StepRecord>> = BTreeMap::new();
    for r in mine.iter().copied().filter(|r| r.cycle > 0) {
        by_cycle.entry(r.cycle).or_default().push(r);
    }
    let cycles: BTreeSet<u32> = by_cycle.keys().copied().collect();
    let of_cycle = |c: u32| by_cycle.get(&c).into_iter().flatten().copied();
    let cycles_finished = by_cycle
        .values()
        .filter(|of_cycle| {
            let all_timed = timed_steps
                .iter()
                .all(|s| of_cycle.iter().any(|r| r.step == *s));
            all_timed || of_cycle.iter().any(|r| !r.ok)
        })
        .count() as u32;

    let ok_of = |step: &Option<Step>, cycle: u32| {
        let step = step.as_ref()?;
        of_cycle(cycle).find(|r| r.step == *step && r.ok)
    };
    let repo_size_after_full = Stat::of(
        cycles
            .iter()
            .filter_map(|&c| figures::REPO_SIZE.of(ok_of(&roles.full, c)?)),
    );
    let growth_after_incremental =
        Stat::of(cycles.iter().filter_map(|&c| {
            figures::growth(ok_of(&roles.full, c)?, ok_of(&roles.incremental, c)?)
        }));

    let restore_checks = cycles
        .iter()
        .filter_map(|&c| {
            let restore_step = roles.restore.as_ref()?;
            let restore = of_cycle(c).find(|r| r.step == *restore_step)?;
            let verify = of_cycle(c).find(|r| roles.is_verify(&r.step));
            Some(restore_check(c, restore, verify))
        })
        .collect();

    ToolSummary {
        tool: tool.to_string(),
        version,
        cycles_finished,
        phases,
        repo_size_after_full,
        growth_after_incremental,
        restore_checks,
        noise_floor_of: None,
    }
}

fn summarize_phase<'a>(step: Step, records: impl Iterator<Item = &'a StepRecord>) -> PhaseSummary {
    let records: Vec<&StepRecord> = records.collect();
    let ok: Vec<&StepRecord> = records.iter().copied().filter(|r| r.ok).collect();
    PhaseSummary {
        phase: step,
        recorded: records.len() as u32,
        ok: ok.len() as u32,
        figures: PhaseFigures::of(&ok),
    }
}

/// The checksum comparison may sit in the restore record itself or in a
/// separate `verify` record of the same cycle; the restore's own wins.
fn restore_check(cycle: u32, restore: &StepRecord, verify: Option<&StepRecord>) -> RestoreCheck {
    let outcome = restore
        .verify
        .as_ref()
        .or_else(|| verify.and_then(|v| v.verify.as_ref()));
    match (outcome, verify) {
        (Some(o), _) => RestoreCheck {
            cycle,
            outcome: if o.passed {
                CheckOutcome::Pass
            } else {
                CheckOutcome::Fail
            },
            first_differences: o.first_differences.clone(),
        },
        (None, Some(v)) => RestoreCheck {
            cycle,
            outcome: if v.ok {
                CheckOutcome::Pass
            } else {
                CheckOutcome::Fail
            },
            first_differences: Vec::new(),
        },
        // A restore that failed on its own restored nothing worth checking.
        (None, None) => RestoreCheck {
            cycle,
            outcome: if restore.ok {
                CheckOutcome::NotChecked
            } else {
                CheckOutcome::Fail
            },
            first_differences: Vec::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use labrun_evidence::VerifyOutcome;

    fn record(step: Step, ok: bool, verify: Option<bool>) -> StepRecord {
        let r_timed = step != Step::VERIFY;
        StepRecord {
            wall_secs: 1.0,
            ok,
            timed: r_timed,
            cache_dropped: true,
            verify: verify.map(|passed| VerifyOutcome {
                passed,
                first_differences: if passed {
                    vec![]
                } else {
                    vec!["missing: a".into()]
                },
                ..VerifyOutcome::default()
            }),
            ..StepRecord::blank("r", "restic", 1, step, 0)
        }
    }

    #[test]
    fn restore_check_reads_either_place() {
        // The agent's layout: a separate verify record.
        let restore = record(Step::RESTORE, true, None);
        let failed = record(Step::VERIFY, false, Some(false));
        let c = restore_check(1, &restore, Some(&failed));
        assert_eq!(c.outcome, CheckOutcome::Fail);
        assert_eq!(c.first_differences, ["missing: a"]);
        let passed = record(Step::VERIFY, true, Some(true));
        assert_eq!(
            restore_check(1, &restore, Some(&passed)).outcome,
            CheckOutcome::Pass
        );
        // The outcome inside the restore record itself wins.
        let embedded = record(Step::RESTORE, false, Some(false));
        assert_eq!(
            restore_check(1, &embedded, Some(&passed)).outcome,
            CheckOutcome::Fail
        );
        // A verify record without an outcome: its ok decides.
        let bare = record(Step::VERIFY, false, None);
        assert_eq!(
            restore_check(1, &restore, Some(&bare)).outcome,
            CheckOutcome::Fail
        );
    }

    #[test]
    fn restore_without_check() {
        let restore = record(Step::RESTORE, true, None);
        assert_eq!(
            restore_check(1, &restore, None).outcome,
            CheckOutcome::NotChecked
        );
        // A restore that failed restored nothing to check: a failure.
        let failed = record(Step::RESTORE, false, None);
        assert_eq!(restore_check(1, &failed, None).outcome, CheckOutcome::Fail);
    }

    #[test]
    fn a_step_the_oom_killer_ended_is_marked_oom() {
        let oom = StepRecord {
            oom: Some(labrun_evidence::OomKill {
                victim: Some("restic".into()),
                pid: Some(812),
                cgroup_oom_kills: Some(1),
                kernel_log: Vec::new(),
                tool_sigkilled: true,
            }),
            error: Some("killed by the kernel's OOM killer (restic, pid 812; cgroup memory.events oom_kill 1): give the VM more memory or lower the scale".into()),
            ..record(Step::BACKUP_FULL, false, None)
        };
        let raw = RawRun {
            folder_name: "r".into(),
            records: vec![oom, record(Step::RESTORE, false, None)],
            environment: Some(Environment {
                disk_profile: Some("hdd".into()),
                disk_iotune: Some(labrun_vocab::DiskProfile::Hdd.iotune()),
                ..Environment::default()
            }),
            ..RawRun::default()
        };
        let s = summarize_raw(raw);
        let flags: Vec<(&str, bool)> = s
            .failed_steps
            .iter()
            .map(|f| (f.step.as_str(), f.oom))
            .collect();
        assert_eq!(flags, [("backup_full", true), ("restore", false)]);
        let json = serde_json::to_value(&s.failed_steps).unwrap();
        assert_eq!(json[0]["oom"], true);
        assert!(json[1].get("oom").is_none(), "{json}");
        let md = crate::export::markdown::render(&s);
        assert!(
            md.contains("- restic, cycle 1, `backup_full`, **oom**: killed by the kernel's OOM killer (restic, pid 812;"),
            "{md}"
        );
        assert!(md.contains("- restic, cycle 1, `restore`: "), "{md}");
        assert!(
            md.contains(
                "- Guest disk profile: hdd (total_bytes_sec=150000000, total_iops_sec=200)\n"
            ),
            "{md}"
        );
    }
}
