//! A started run followed to its end: its events through the consumers
//! ([`crate::bench::consumers`]), Ctrl-C turned into a stop in the guest,
//! the evidence pulled, the summary made and the exit code chosen (0
//! passed; 1 a step failed, the agent could not run or was stopped; 3 the
//! connection was lost while the run goes on).

use crate::bench::attach::attach_id;
use crate::bench::consumers;
use crate::bench::environment::{NoiseProbe, record_noise_after};
use crate::bench::host_phases::HostPhases;
use crate::bench::layout::{HostRun, RemoteRun};
use crate::bench::log_puller::{SessionLogs, pull_all};
use crate::bench::progress::Display;
use crate::bench::remote::{self, AgentState};
use crate::bench::tail::{EventTail, FollowEnd};
use crate::exit;
use anyhow::Context as _;
use labrun_ssh::Session;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// What [`follow_to_end`] does once the agent ended.
pub struct AtEnd<'a> {
    /// Where the host's noise is read again (None: not recorded).
    pub noise: Option<&'a NoiseProbe>,
    /// Make and print the summary.
    pub summary: bool,
}

/// Follows the agent `pid` of `remote` into `host` until it ends, then does
/// what `end` asks.
pub async fn follow_to_end(
    session: &Arc<Session>,
    remote: &RemoteRun,
    pid: u32,
    host: &HostRun,
    display: &mut dyn Display,
    phases: &mut HostPhases,
    end: AtEnd<'_>,
) -> anyhow::Result<ExitCode> {
    let AtEnd { noise, summary } = end;
    let t = HostPhases::begin("follow");
    let raw = host.raw();
    let tail = EventTail {
        session,
        remote,
        agent_pid: pid,
    };
    let logs = SessionLogs {
        session: session.clone(),
        remote: remote.clone(),
        raw: raw.clone(),
    };
    let end = tokio::select! {
        end = consumers::follow(&raw, logs, &mut *display, |fan| tail.produce(&raw, fan)) => end?,
        _ = tokio::signal::ctrl_c() => {
            // Ctrl-C stops the run, not just the display: the agent kills the
            // running tool, records the interruption and flushes; the partial
            // evidence is pulled and summarized below.
            eprintln!("\nlabrun: interrupted: stopping the run in the guest and keeping its evidence");
            crate::bench::variants::INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
            remote::stop_agent(session, pid).await?;
            wait_for_exit(session, remote, pid).await;
            FollowEnd::AgentEnded
        }
    };
    display.finish();
    phases.end(t);
    if let FollowEnd::ConnectionLost(why) = end {
        safe_eprintln!(
            "labrun: the connection was lost ({why}); the run goes on in the guest.\n  evidence so far: {}\n  reconnect with: labrun bench --attach {}",
            host.raw().display(),
            attach_id(host, &remote.run_id)
        );
        return Ok(ExitCode::from(exit::CONNECTION_LOST));
    }
    let t = HostPhases::begin("pull");
    pull_all(session, remote, &raw)
        .await
        .context("pulling the evidence")?;
    let state = remote::agent_state(session, remote, pid).await?;
    phases.end(t);
    // Read before the summary, which warns about it.
    record_noise_after(&raw, noise).await;
    if state == AgentState::Exited(AGENT_COULD_NOT_RUN) {
        // Its reason is on its stderr, which the event stream does not carry
        // when the run was refused before it began.
        // Remote text: escaped (terminal.rs).
        safe_eprintln!(
            "labrun: the agent could not run:\n{}",
            remote::agent_error(session, remote).await
        );
        if !has_records(host) {
            return Ok(ExitCode::from(exit::FAILED));
        }
    }
    let code = if summary {
        let t = HostPhases::begin("summary");
        let code = summarize(host)?;
        phases.end(t);
        code
    } else {
        ExitCode::SUCCESS
    };
    let exit = match state {
        AgentState::Exited(0) => code,
        AgentState::Exited(n) => {
            eprintln!(
                "labrun: the agent exited with status {n}: some steps failed (see the summary and raw/logs)"
            );
            ExitCode::from(exit::FAILED)
        }
        AgentState::Running => ExitCode::from(exit::FAILED),
        AgentState::Vanished => {
            eprintln!(
                "labrun: the agent was killed before it finished; the evidence it wrote is kept"
            );
            ExitCode::from(exit::FAILED)
        }
    };
    Ok(exit)
}

/// The agent's exit status when the run could not start or go on (its
/// other statuses: 0 passed, 1 some step failed, 128+N stopped by signal N).
const AGENT_COULD_NOT_RUN: i32 = 2;

fn has_records(host: &HostRun) -> bool {
    std::fs::metadata(host.raw().join(labrun_evidence::files::RECORDS)).is_ok_and(|m| m.len() > 0)
}

async fn wait_for_exit(session: &Session, remote: &RemoteRun, pid: u32) {
    for _ in 0..120 {
        match remote::agent_state(session, remote, pid).await {
            Ok(AgentState::Running) => tokio::time::sleep(Duration::from_millis(500)).await,
            _ => return,
        }
    }
}

/// Writes the summary files and prints the table.
pub fn summarize(host: &HostRun) -> anyhow::Result<ExitCode> {
    let (summary, written) = labrun_report::make_report(&host.dir)?;
    safe_print!("{}", labrun_report::render_terminal(&summary));
    for p in written {
        safe_println!("wrote {}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}
