//! A run made ready on its machine ([`prepare`]: connected, checked, its
//! folder and facts written, the agent pushed), then run there
//! ([`OnTarget::run`]: the plan, or one round of it, followed to its end).

use crate::bench::agent_binary::locate_agent;
use crate::bench::connect::connect;
use crate::bench::dataset_push;
use crate::bench::environment::{self, NoiseProbe};
use crate::bench::estimate;
use crate::bench::follow::{AtEnd, follow_to_end};
use crate::bench::host_phases::HostPhases;
use crate::bench::layout::{HostRun, RemoteRun};
use crate::bench::machine;
use crate::bench::progress::Display;
use crate::bench::remote;
use crate::bench::request::BenchRequest;
use crate::bench::run_facts::{environment_of, say_estimate, write_tool_sources};
use crate::bench::session_file::SessionFile;
use crate::bench::target_checks::{check_installed, refuse_if_busy};
use anyhow::Context as _;
use labrun_evidence::Plan;
use labrun_lab::{Lab, PlanOverrides};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// A run made ready on its machine: connected, checked, its agent pushed
/// and the machine's facts written; [`OnTarget::run`] then runs its plan, or
/// each of its rounds.
pub struct OnTarget {
    /// Shared with the log puller, which pulls on its own task.
    pub session: Arc<labrun_ssh::Session>,
    pub remote: RemoteRun,
    /// The whole run's plan.
    pub plan: Plan,
    pub phases: HostPhases,
    /// Where the host's noise is read again at the run's end.
    noise: Option<NoiseProbe>,
    session_file: SessionFile,
    session_path: PathBuf,
}

impl OnTarget {
    /// Writes `plan` (the run's, or a part of it: one round, added pairs)
    /// into the guest, starts the agent on it and follows it to its end;
    /// the summary is made and printed when `summary`.
    pub async fn run(
        &mut self,
        plan: &Plan,
        host: &HostRun,
        display: &mut dyn Display,
        summary: bool,
    ) -> anyhow::Result<ExitCode> {
        // The session file first: a `bench` killed while the agent starts
        // must still leave a run that `--attach` can find (the pid is then
        // read from the guest), or the run would finish unseen and its
        // evidence unpulled.
        self.session_file.agent_pid = None;
        self.session_file.write(&self.session_path)?;
        let t = HostPhases::begin("start_run");
        let pid = remote::start_run(&self.session, &self.remote, plan).await?;
        self.phases.end(t);
        test_hook_after_agent_start();
        self.session_file.agent_pid = Some(pid);
        self.session_file.write(&self.session_path)?;
        follow_to_end(
            &self.session,
            &self.remote,
            pid,
            host,
            display,
            &mut self.phases,
            AtEnd {
                noise: self.noise.as_ref(),
                summary,
            },
        )
        .await
    }
}

/// Everything before the agent starts: the machine reached and checked, the
/// run's folder and facts written here, the estimate said, the agent pushed.
pub async fn prepare(
    req: &BenchRequest,
    lab: &Lab,
    overrides: &PlanOverrides,
    run_id: &str,
    started: u64,
    host: &HostRun,
    display: &mut dyn Display,
) -> anyhow::Result<OnTarget> {
    let ctx = &req.ctx;
    let access = machine::resolve(ctx, lab)?;
    let mut plan = lab.to_plan(run_id, overrides)?;
    let agent = locate_agent(req.agent.as_deref())?;
    let agent_sha = labrun_artifact::digest::sha256_file(&agent)
        .with_context(|| format!("reading the agent {}", agent.display()))?;

    let mut phases = HostPhases::default();
    let t = HostPhases::begin("connect");
    let session = Arc::new(connect(&access).await?);
    phases.end(t);
    let remote = RemoteRun {
        base: access.remote_base.clone(),
        run_id: run_id.to_string(),
    };
    // Before anything is written, here or there: a second run beside a live
    // one would skew both. Whether the tools are installed is asked at the
    // same time (both only read; one round trip instead of two), and said
    // once the run's folder holds the lab.
    let t = HostPhases::begin("target_checks");
    let (busy, installed) = tokio::join!(
        refuse_if_busy(&session, &remote, &access),
        check_installed(&session, &plan)
    );
    busy?;
    phases.end(t);

    std::fs::create_dir_all(host.raw())
        .with_context(|| format!("cannot create {}", host.raw().display()))?;
    phases.write_into(&host.raw());
    std::fs::write(host.raw().join("lab.yaml"), lab.redacted_source())?;
    // The verdicts the lab asks for are made from raw/ like every figure.
    if let Some(request) = lab.compare_plan() {
        std::fs::write(
            host.raw().join(labrun_evidence::compare::COMPARE_PLAN),
            serde_json::to_vec_pretty(&request)?,
        )?;
    }
    write_tool_sources(ctx, lab, &plan, &host.raw())?;
    display.note(&format!("run {run_id}: results in {}", host.dir.display()));

    installed?;
    let t = HostPhases::begin("estimate");
    if let Some(e) = say_estimate(&session, lab, &plan, &access, &remote, display).await {
        // Beside the run's own times: how far the guide was off (`make
        // bench-scale` projects the full scale from it).
        std::fs::write(
            host.raw().join(estimate::ESTIMATE_FILE),
            serde_json::to_vec_pretty(&e)?,
        )?;
    }
    phases.end(t);

    let t = HostPhases::begin("push_repository");
    if let Some(repo) =
        dataset_push::push_repository(&session, &remote, &mut plan, &lab.source.file, &host.dir)
            .await?
    {
        phases.end(t);
        display.note(&format!(
            "pushed the repository {} into the guest",
            repo.display()
        ));
    }
    display.note("pushing the agent");
    // The guest's facts are asked for while the agent uploads: neither
    // waits for the other.
    let t = HostPhases::begin("push_and_environment");
    let push = remote::push_agent(&session, &remote, &agent, &agent_sha, &ctx.cache_dir);
    let noise = NoiseProbe::of(ctx, lab);
    let (pushed, mut env, noise_before) = tokio::join!(
        push,
        environment_of(&session, &access),
        environment::noise_before(noise.as_ref())
    );
    pushed?;
    env.noise = noise_before;
    phases.end(t);
    // A real tree goes in once the agent is there: it checks what arrived.
    let t = HostPhases::begin("ready_trees");
    let pushed = crate::real_tree::ready_trees(ctx, lab, &session, &remote, &mut plan, &mut |m| {
        display.note(m)
    })
    .await?;
    // A phase only when there was a tree to ready, as the repository's
    // push above: a generated dataset's phases stay what they were.
    if !pushed.is_empty() {
        std::fs::write(
            host.raw().join(crate::real_tree::PUSH_FILE),
            serde_json::to_vec_pretty(&pushed)?,
        )?;
        phases.end(t);
    }
    std::fs::write(
        host.raw().join(labrun_report::ENVIRONMENT_FILE),
        serde_json::to_vec_pretty(&env)?,
    )?;
    Ok(OnTarget {
        session,
        remote: remote.clone(),
        plan,
        phases,
        noise,
        session_file: SessionFile {
            run_id: run_id.to_string(),
            lab_path: crate::lab_vm::lab_path(ctx)?.display().to_string(),
            remote,
            agent_pid: None,
            started_unix: started,
            host: ctx.host.clone(),
        },
        session_path: host.session_file(),
    })
}

/// For tests (debug builds only): with `LABRUN_TEST_HANG_AFTER_AGENT_START`
/// set, `bench` says so on stderr and stops right after the agent started,
/// before it records the pid, so a test can kill it at that very point.
fn test_hook_after_agent_start() {
    #[cfg(debug_assertions)]
    if std::env::var_os("LABRUN_TEST_HANG_AFTER_AGENT_START").is_some() {
        eprintln!("labrun: test hook: the agent started; hanging until killed");
        loop {
            std::thread::park();
        }
    }
}
