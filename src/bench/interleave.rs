//! Variants that share a machine, run cycle by cycle: cycle 1 of every
//! variant, then cycle 2 of every variant (the order rotated from cycle to
//! cycle, as the agent rotates tools), and so on. Whatever drifts on the
//! machine over the hours of a run (a neighbour's load, the disk filling,
//! the host's thermal state) then falls on every variant alike instead of on
//! the last ones.
//!
//! Each variant stays a run of its own, with its own evidence: a round is
//! one agent run of one cycle that continues its variant's evidence
//! ([`labrun_evidence::Round`]). The dataset the first round generates waits
//! in the machine's dataset store for the next round that uses it, so it is
//! generated once, not once per round.

use crate::bench::follow::summarize;
use crate::bench::layout::HostRun;
use crate::bench::prepare::{OnTarget, prepare};
use crate::bench::progress::Display;
use crate::bench::request::BenchRequest;
use crate::bench::start::until_conclusive;
use crate::bench::variants::{
    INTERRUPTED, RunOutcome, record_failure, start_variant, variant_overrides,
};
use crate::exit;
use labrun_lab::Variant;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

/// One variant of the group while it runs.
struct Running<'v> {
    variant: &'v Variant,
    host: HostRun,
    on: OnTarget,
    /// How its rounds went so far: success until one fails.
    code: ExitCode,
    /// Whether any round of it ran (an interrupted run may stop before).
    ran: bool,
}

/// Runs `group` (variants of one machine shape, its machine up) in rounds.
/// The names of the variants that failed go into `failed`.
#[allow(clippy::too_many_arguments)]
pub async fn run_group(
    req: &BenchRequest,
    run_id: &str,
    started: u64,
    group: &[(usize, &Variant)],
    total: usize,
    run_dir: &std::path::Path,
    display: &mut dyn Display,
    failed: &mut Vec<String>,
) -> anyhow::Result<RunOutcome> {
    let mut running: Vec<Running> = Vec::new();
    for (i, v) in group {
        let name = &v.record.name;
        let host = start_variant(run_dir, v, *i, total, display)?;
        let sub_id = format!("{run_id}.{name}");
        let o = variant_overrides(req, v);
        match prepare(req, &v.lab, &o, &sub_id, started, &host, display).await {
            Ok(on) => running.push(Running {
                variant: v,
                host,
                on,
                code: ExitCode::SUCCESS,
                ran: false,
            }),
            Err(e) => record_failure(&host, name, &e, failed),
        }
    }
    let cycles: Vec<u32> = running.iter().map(|r| r.on.plan.cycles).collect();
    let order = schedule(&cycles);
    display.note(&format!(
        "{} variants share this machine: {} rounds, cycle by cycle",
        running.len(),
        order.len()
    ));
    let mut dropped = vec![false; running.len()];
    for (at, &(i, cycle)) in order.iter().enumerate() {
        if dropped[i] {
            continue;
        }
        let keep = order[at + 1..]
            .iter()
            .any(|&(j, _)| !dropped[j] && running[j].on.plan.dataset == running[i].on.plan.dataset);
        let r = &mut running[i];
        let name = r.variant.record.name.clone();
        display.note(&format!(
            "cycle {cycle} of {}: variant `{name}`",
            r.on.plan.cycles
        ));
        let plan = r.on.plan.round_of(cycle, run_id, keep);
        let outcome = r.on.run(&plan, &r.host, display, false).await;
        r.ran = true;
        match outcome {
            Ok(code) if code == ExitCode::from(exit::CONNECTION_LOST) => {
                safe_eprintln!(
                    "labrun: variant `{name}` goes on in the guest without this connection; the rounds after it were not started"
                );
                return Ok(RunOutcome::ConnectionLost(code));
            }
            Ok(code) if code != ExitCode::SUCCESS => r.code = code,
            Ok(_) => {}
            Err(e) => {
                record_failure(&r.host, &name, &e, failed);
                dropped[i] = true;
            }
        }
        if INTERRUPTED.load(Ordering::SeqCst) {
            safe_eprintln!(
                "labrun: interrupted: the rounds after variant `{name}`'s cycle {cycle} were not started; what ran is kept and compared"
            );
            break;
        }
    }

    for (i, r) in running.iter_mut().enumerate() {
        let name = r.variant.record.name.clone();
        if dropped[i] {
            continue;
        }
        if !r.ran {
            safe_eprintln!("labrun: variant `{name}` did not run: the run was interrupted first");
            failed.push(name);
            continue;
        }
        if let Err(e) = summarize(&r.host) {
            record_failure(&r.host, &name, &e, failed);
            continue;
        }
        let mut code = r.code;
        if let Some(max) = req.until_conclusive
            && !INTERRUPTED.load(Ordering::SeqCst)
        {
            code = until_conclusive(&mut r.on, &r.host, max, code, display).await?;
            if code == ExitCode::from(exit::CONNECTION_LOST) {
                return Ok(RunOutcome::ConnectionLost(code));
            }
        }
        if code != ExitCode::SUCCESS {
            failed.push(name);
        }
    }
    Ok(RunOutcome::Done)
}

/// The rounds in order, as (variant index, cycle): every variant's cycle 1,
/// then every variant's cycle 2, ..., the variants' order rotated by one
/// each cycle so that none always runs first. A variant with fewer cycles
/// drops out after its last.
fn schedule(cycles: &[u32]) -> Vec<(usize, u32)> {
    let n = cycles.len();
    let last = cycles.iter().copied().max().unwrap_or(0);
    let mut order = Vec::new();
    for cycle in 1..=last {
        for k in 0..n {
            let i = (k + cycle as usize - 1) % n;
            if cycles[i] >= cycle {
                order.push((i, cycle));
            }
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::schedule;

    #[test]
    fn rounds_go_cycle_by_cycle_and_rotate_the_variants() {
        assert_eq!(
            schedule(&[2, 2, 2]),
            vec![(0, 1), (1, 1), (2, 1), (1, 2), (2, 2), (0, 2)]
        );
        assert_eq!(schedule(&[3, 1]), vec![(0, 1), (1, 1), (0, 2), (0, 3)]);
        assert!(schedule(&[]).is_empty());
    }
}
