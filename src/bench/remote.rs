//! Driving the agent in the guest over SSH: push it (checked by SHA-256 in
//! the guest), write the plan, start it detached so it outlives the
//! connection, and stop it on request.

use crate::bench::layout::{RemoteRun, sh_quote};
use anyhow::{Context as _, bail};
use labrun_evidence::Plan;
use labrun_ssh::Session;
use std::path::Path;

/// Runs a command that must succeed; its stderr becomes the error.
pub async fn run_ok(session: &Session, command: &str) -> anyhow::Result<String> {
    let out = session.exec(command).await?;
    if out.exit_code != Some(0) {
        bail!(
            "`{command}` failed in the guest (exit {}): {}",
            out.exit_code
                .map_or_else(|| "none".to_string(), |c| c.to_string()),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Uploads the agent unless the guest already has this exact binary, then
/// checks its digest there.
pub async fn push_agent(
    session: &Session,
    remote: &RemoteRun,
    local_agent: &Path,
    local_sha256: &str,
) -> anyhow::Result<()> {
    let agent = sh_quote(&remote.agent());
    let have = session
        .exec(&format!("sha256sum {agent} 2>/dev/null"))
        .await?;
    let already = String::from_utf8_lossy(&have.stdout)
        .split_whitespace()
        .next()
        .is_some_and(|d| d == local_sha256);
    if !already {
        run_ok(
            session,
            &format!("mkdir -p {}", sh_quote(&format!("{}/bin", remote.base))),
        )
        .await?;
        session
            .upload(local_agent, &remote.agent(), 0o755)
            .await
            .context("uploading the agent")?;
    }
    let out = run_ok(session, &format!("sha256sum {agent}")).await?;
    let got = out.split_whitespace().next().unwrap_or_default();
    if got != local_sha256 {
        bail!(
            "the agent in the guest ({}) has SHA-256 {got}, expected {local_sha256}: the upload was corrupted; run `labrun bench` again",
            remote.agent()
        );
    }
    Ok(())
}

/// Writes the plan and creates the run folders.
pub async fn write_plan(
    session: &Session,
    remote: &RemoteRun,
    plan: &Plan,
    scratch: &Path,
) -> anyhow::Result<()> {
    run_ok(
        session,
        &format!(
            "mkdir -p {} {} && chmod 700 {}",
            sh_quote(&remote.work()),
            sh_quote(&remote.evidence()),
            sh_quote(&remote.dir())
        ),
    )
    .await?;
    // The plan carries repository passwords: it lives in a 0700 folder on the
    // guest and only transits through a 0600 scratch file on the host.
    let local = scratch.join("plan.json");
    write_private(&local, &serde_json::to_vec_pretty(plan)?)?;
    let result = session.upload(&local, &remote.plan(), 0o600).await;
    let _ = std::fs::remove_file(&local);
    result.context("uploading the plan")?;
    Ok(())
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(bytes)
}

/// Starts the agent in its own session (setsid), stdio to files, so it keeps
/// running when the SSH connection drops. Returns its pid.
pub async fn start_agent(session: &Session, remote: &RemoteRun) -> anyhow::Result<u32> {
    let q = |s: String| sh_quote(&s);
    // The exit status is written by the wrapper shell when the agent ends, so
    // a later attach can tell "finished with 1" from "killed".
    let inner = format!(
        "{agent} run --plan {plan} --work {work} --evidence {ev}; echo $? > {exit}",
        agent = q(remote.agent()),
        plan = q(remote.plan()),
        work = q(remote.work()),
        ev = q(remote.evidence()),
        exit = q(remote.exit_file()),
    );
    // Only the agent's wrapper goes to the background (the braces), with all
    // three streams redirected: a backgrounded `a && b & ...` list would keep
    // this channel's stdout open, and this call would last as long as the run.
    let command = format!(
        "cd {dir} && rm -f {exit} && {{ setsid nohup sh -c {inner} > {out} 2> {err} < /dev/null & echo $! > {pid}; }} && cat {pid}",
        dir = q(remote.dir()),
        exit = q(remote.exit_file()),
        inner = sh_quote(&inner),
        out = q(remote.agent_stdout()),
        err = q(remote.agent_stderr()),
        pid = q(remote.pid_file()),
    );
    let out = run_ok(session, &command).await?;
    out.trim()
        .parse::<u32>()
        .with_context(|| format!("the guest did not report the agent's pid (got {out:?})"))
}

/// The agent's state as seen from the guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentState {
    Running,
    Exited(i32),
    /// Gone without writing an exit status (killed, or the guest rebooted).
    Vanished,
}

pub async fn agent_state(
    session: &Session,
    remote: &RemoteRun,
    pid: u32,
) -> anyhow::Result<AgentState> {
    let out = session
        .exec(&format!(
            "if kill -0 {pid} 2>/dev/null; then echo running; elif [ -f {exit} ]; then cat {exit}; else echo vanished; fi",
            exit = sh_quote(&remote.exit_file())
        ))
        .await?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    Ok(match text.as_str() {
        "running" => AgentState::Running,
        "vanished" | "" => AgentState::Vanished,
        code => code
            .parse::<i32>()
            .map_or(AgentState::Vanished, AgentState::Exited),
    })
}

/// Asks the agent to stop: it kills the running tool, records the
/// interruption and flushes its evidence.
pub async fn stop_agent(session: &Session, pid: u32) -> anyhow::Result<()> {
    // The wrapper `sh` is the session leader; the agent is its child. Only the
    // agent is signalled, so the wrapper still records its exit status.
    session
        .exec(&format!("pkill -TERM -P {pid} 2>/dev/null; true"))
        .await?;
    Ok(())
}
