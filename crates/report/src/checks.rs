//! Warnings drawn from the evidence: what makes figures less comparable or
//! less complete than they look.

use crate::format::step_name;
use crate::summary::Summary;
use crate::warning::{Warning, WarningKind};
use labrun_evidence::StepRecord;
use std::collections::BTreeSet;

/// At most this many examples are named in one warning.
const EXAMPLES: usize = 5;

pub fn warnings(summary: &Summary, records: &[StepRecord]) -> Vec<Warning> {
    let mut out = Vec::new();

    if summary
        .environment
        .as_ref()
        .is_some_and(|e| e.is_software_emulation())
    {
        out.push(Warning::new(
            WarningKind::SoftwareEmulation,
            "Software emulation: the guest ran under QEMU TCG, without hardware virtualization, so every time is several times longer than under KVM. Compare tools within this run only, not with runs on other machines.",
        ));
    }
    if let Some(env) = &summary.environment {
        out.extend(crate::host_noise::warnings(env));
    }

    let left_out: Vec<&str> = summary
        .tool_sources
        .iter()
        .filter(|t| !t.run)
        .map(|t| t.name.as_str())
        .collect();
    if !left_out.is_empty() {
        let ran: Vec<&str> = summary
            .tool_sources
            .iter()
            .filter(|t| t.run)
            .map(|t| t.name.as_str())
            .collect();
        out.push(Warning::new(
            WarningKind::ToolsSubset,
            format!(
                "This run measured {} of the lab's {} tools ({}); not run: {} (chosen with --tools).",
                ran.len(),
                summary.tool_sources.len(),
                ran.join(", "),
                left_out.join(", ")
            ),
        ));
    }

    let timed: Vec<&StepRecord> = records.iter().filter(|r| r.timed).collect();
    let warm: Vec<&StepRecord> = timed.iter().copied().filter(|r| !r.cache_dropped).collect();
    if !warm.is_empty() {
        out.push(Warning::new(
            WarningKind::CacheNotDropped,
            format!(
                "The page cache was not dropped before {} of {} timed steps ({}): they may have read from a warm cache and look faster than a cold run.",
                warm.len(),
                timed.len(),
                examples(warm.iter().map(|r| step_name(r)))
            ),
        ));
    }

    let failed = summary.failed_steps.iter().filter(|f| !f.allowed).count();
    if failed > 0 {
        let n = failed;
        out.push(Warning::new(
            WarningKind::StepsFailed,
            format!(
                "{n} step{} failed (listed under Failed steps); medians and ranges leave failed steps out.",
                if n == 1 { "" } else { "s" }
            ),
        ));
    }

    if let Some(planned) = summary.cycles_planned {
        let short: Vec<String> = summary
            .tools
            .iter()
            .filter(|t| t.cycles_finished < planned)
            .map(|t| format!("{} {} of {planned}", t.tool, t.cycles_finished))
            .collect();
        if !short.is_empty() {
            out.push(Warning::new(
                WarningKind::CyclesMissing,
                format!(
                    "Cycles missing, the run stopped early: cycles finished {}. The figures cover only what was recorded.",
                    short.join(", ")
                ),
            ));
        }
    }

    out.extend(tree_warnings(&timed));
    if let Some(cost) = summary
        .meter_cost
        .as_ref()
        .filter(|c| !c.over_limit.is_empty())
    {
        let n = cost.over_limit.len();
        out.push(Warning::new(
            WarningKind::AgentOverhead,
            format!(
                "The agent's own CPU (waiting, sampling the tree) reached {:.0}% of a step's in {n} step{}: {}.",
                crate::meter_cost::LIMIT * 100.0,
                if n == 1 { "" } else { "s" },
                examples(
                    cost.over_limit
                        .iter()
                        .map(|(step, share)| format!("{step} {}", crate::meter_cost::percent(*share)))
                )
            ),
        ));
    }

    let run_ids: BTreeSet<&str> = records.iter().map(|r| r.run_id.as_str()).collect();
    if run_ids.len() > 1 {
        out.push(Warning::new(
            WarningKind::MixedRuns,
            format!(
                "records.jsonl mixes records of {} runs ({}): figures of different runs are summarized together.",
                run_ids.len(),
                examples(run_ids.iter().map(|s| s.to_string()))
            ),
        ));
    }
    out
}

/// What the steps' cgroups said about the meters themselves.
fn tree_warnings(timed: &[&StepRecord]) -> Vec<Warning> {
    let mut out = Vec::new();
    let left: Vec<String> = timed
        .iter()
        .filter_map(|r| {
            let t = r.tree.as_ref()?;
            (!t.leftovers.is_empty())
                .then(|| format!("{}: {}", step_name(r), t.leftovers.join(", ")))
        })
        .collect();
    if !left.is_empty() {
        out.push(Warning::new(
            WarningKind::LeftoverProcesses,
            format!(
                "{} timed step{} left processes running after the tool exited; the agent killed them at the end of the step, and their CPU and memory are in the tree figures: {}.",
                left.len(),
                if left.len() == 1 { "" } else { "s" },
                examples(left.into_iter())
            ),
        ));
    }
    let without: Vec<&StepRecord> = timed
        .iter()
        .copied()
        // Evidence of agents before tree meters has no `tree` at all: its
        // tables show "-" there, with nothing to warn about.
        .filter(|r| r.tree.as_ref().is_some_and(|t| t.unavailable.is_some()))
        .collect();
    if let Some(first) = without.first() {
        let why = first
            .tree
            .as_ref()
            .and_then(|t| t.unavailable.clone())
            .unwrap_or_default();
        out.push(Warning::new(
            WarningKind::NoTreeMeters,
            format!(
                "{} of {} timed steps have no whole-tree figures ({why}); their memory is the largest single process only.",
                without.len(),
                timed.len()
            ),
        ));
    }
    out
}

fn examples(items: impl Iterator<Item = String>) -> String {
    let all: Vec<String> = items.collect();
    let mut text = all
        .iter()
        .take(EXAMPLES)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if all.len() > EXAMPLES {
        text.push_str(&format!(" and {} more", all.len() - EXAMPLES));
    }
    text
}
