//! `labrun-agent run --plan PLAN.json --work DIR --evidence DIR`.

use crate::run::interrupt::signal_name;
use crate::run::{Interrupt, RunError, RunOptions, RunOutcome, execute};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The plan the host wrote (JSON; see labrun-evidence's `Plan`).
    #[arg(long, value_name = "PLAN.json")]
    pub plan: PathBuf,
    /// Where the dataset, repositories and restores go; the run uses
    /// DIR/<run_id>, which must not exist yet, and removes it at the end.
    #[arg(long, value_name = "DIR")]
    pub work: PathBuf,
    /// Where records, events, manifests and tool logs go; new or empty.
    #[arg(long, value_name = "DIR")]
    pub evidence: PathBuf,
    /// The marker this agent holds locked while it runs, naming its run and
    /// its running tool: a second agent with the same FILE refuses to start,
    /// and the next one stops a tool a killed agent left running. Give every
    /// run on a machine the same FILE (default: labrun-agent.lock in the
    /// work folder).
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
    /// Where datasets wait between the rounds of interleaved runs (plans
    /// with a `round`): give every run on a machine the same DIR, so that a
    /// dataset one run's round generated serves the next run's (default:
    /// datasets/ in the work folder).
    #[arg(long, value_name = "DIR")]
    pub datasets: Option<PathBuf>,
    /// Delete the plan file once read (it holds the tools' passwords; the
    /// evidence keeps a copy without them).
    #[arg(long)]
    pub remove_plan: bool,
}

/// Exit status: 0 every step passed, 1 some step failed (the run finished),
/// 2 the run could not start or go on, 128+N stopped by signal N.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let interrupt = Interrupt::install().map_err(RunError::Signals)?;
    let opts = RunOptions {
        plan: args.plan,
        work: args.work,
        evidence: args.evidence,
        lock: args.lock,
        datasets: args.datasets,
        remove_plan: args.remove_plan,
        echo_events: true,
    };
    let outcome = execute(&opts, interrupt)?;
    // Events on stdout are for the host; a person at a terminal gets a line.
    let records = opts.evidence.join(labrun_evidence::files::RECORDS);
    match outcome {
        RunOutcome::Passed => {}
        RunOutcome::SomeFailed => eprintln!(
            "labrun-agent: the run finished and some steps failed: see {}",
            records.display()
        ),
        RunOutcome::Interrupted(signal) => eprintln!(
            "labrun-agent: stopped by {}; what was measured is in {}",
            signal_name(signal),
            records.display()
        ),
    }
    Ok(ExitCode::from(outcome.exit_code()))
}
