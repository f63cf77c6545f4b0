//! A new run (not `--attach`): the lab loaded, its run named, then each of
//! its variants ([`crate::bench::variants`]) or its one plan run on its
//! machine, `--until-conclusive` adding pairs after, and the summary made.

use crate::bench::follow::summarize;
use crate::bench::layout::HostRun;
use crate::bench::prepare::{OnTarget, prepare};
use crate::bench::progress::Display;
use crate::bench::request::BenchRequest;
use crate::bench::timestamp::utc_stamp;
use crate::exit;
use anyhow::bail;
use labrun_lab::{Lab, PlanOverrides};
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

/// Runs the request's lab from the start.
pub async fn start(req: &BenchRequest, display: &mut dyn Display) -> anyhow::Result<ExitCode> {
    let ctx = &req.ctx;
    let lab = Lab::load(&ctx.lab_path)?;
    if req.until_conclusive.is_some() && lab.compare_plan().is_none() {
        bail!(
            "`--until-conclusive` adds pairs to the comparisons and series a lab asks for, and {} asks for none: add a `compare:` block naming a baseline and a candidate tool (or give a tool `versions:`), or drop the option",
            ctx.lab_path.display()
        );
    }
    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let run_id = lab.run_id(&utc_stamp(started));
    if lab.has_variants() {
        return crate::bench::variants::run_all(req, &lab, &run_id, started, display).await;
    }
    let host = HostRun::new(&req.results, &run_id);
    run_lab(req, &lab, &req.overrides, &run_id, started, &host, display).await
}

/// One run of one lab (a lab without variants, or one variant) into `host`.
pub async fn run_lab(
    req: &BenchRequest,
    lab: &Lab,
    overrides: &PlanOverrides,
    run_id: &str,
    started: u64,
    host: &HostRun,
    display: &mut dyn Display,
) -> anyhow::Result<ExitCode> {
    let mut on = prepare(req, lab, overrides, run_id, started, host, display).await?;
    let plan = on.plan.clone();
    let code = on.run(&plan, host, display, true).await?;
    let Some(max) = req.until_conclusive else {
        return Ok(code);
    };
    if code == ExitCode::from(exit::CONNECTION_LOST)
        || crate::bench::variants::INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst)
    {
        return Ok(code);
    }
    until_conclusive(&mut on, host, max, code, display).await
}

/// `--until-conclusive`: pairs added to an inconclusive comparison after the
/// run's own cycles (`code`: how those ended), the verdicts made again.
pub async fn until_conclusive(
    on: &mut OnTarget,
    host: &HostRun,
    max: u32,
    code: ExitCode,
    display: &mut dyn Display,
) -> anyhow::Result<ExitCode> {
    let more = crate::bench::more_pairs::add_until_conclusive(on, host, Some(max), display).await?;
    match more {
        None => Ok(code),
        Some(later) if later == ExitCode::from(exit::CONNECTION_LOST) => Ok(later),
        Some(later) => {
            // The verdicts again, now saying how many pairs were added.
            summarize(host)?;
            Ok(if code == ExitCode::SUCCESS {
                later
            } else {
                code
            })
        }
    }
}
