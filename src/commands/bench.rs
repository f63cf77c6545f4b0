//! `labrun bench`: the main job. Everything but argument handling lives in
//! `crate::bench`.

use crate::bench::dataset_push;
use crate::bench::environment;
use crate::bench::estimate;
use crate::bench::host_phases::HostPhases;
use crate::bench::layout::{HostRun, RemoteRun};
use crate::bench::machine::{self, Access};
use crate::bench::progress::{Display, Mode};
use crate::bench::pull::{FollowEnd, Follower};
use crate::bench::remote::{self, AgentState};
use crate::bench::session_file::SessionFile;
use crate::bench::timestamp::utc_stamp;
use crate::context::Context;
use anyhow::{Context as _, bail};
use labrun_evidence::{Event, Plan};
use labrun_lab::{Lab, PlanOverrides};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[derive(clap::Args)]
pub struct Args {
    /// Shrink the dataset (1.0 = 6.10 GB), e.g. 0.01 for a quick look.
    #[arg(long)]
    pub scale: Option<f64>,
    /// Cycles per tool (the lab's default is 3).
    #[arg(long)]
    pub cycles: Option<u32>,
    /// Run only these tools, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// Bring the VM up first (`labrun up`).
    #[arg(long)]
    pub up: bool,
    /// Take the VM down afterwards, whatever happened (`labrun down`).
    #[arg(long)]
    pub down: bool,
    /// Reconnect to a run in progress (the newest one, or RUN_ID) and finish it.
    #[arg(long, value_name = "RUN_ID", num_args = 0..=1, default_missing_value = "")]
    pub attach: Option<String>,
    /// Where run folders are written.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// The static guest agent to push (default: beside `labrun`, else the
    /// `make agent` output).
    #[arg(long, env = "LABRUN_AGENT")]
    pub agent: Option<PathBuf>,
    /// While a comparison the lab asks for (`compare:`) has an inconclusive
    /// row, add one more cycle of its two tools (one more pair), at most N
    /// cycles in all.
    #[arg(long, value_name = "N")]
    pub until_conclusive: Option<u32>,
    /// Print only warnings and the summary.
    #[arg(long, conflicts_with = "plain")]
    pub quiet: bool,
    /// One line per event, no live display (the default when not a terminal).
    #[arg(long)]
    pub plain: bool,
}

/// Exit codes: 0 all passed; 1 a step failed or the run was stopped; 3 the
/// connection was lost while the run goes on in the guest.
pub(crate) const EXIT_CONNECTION_LOST: u8 = 3;

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let mut display = Mode::choose(args.quiet, args.plain).display();
    if args.up {
        let code = crate::commands::up::bring_up(ctx, args.tools.as_deref()).await?;
        if code != ExitCode::SUCCESS {
            return Ok(code);
        }
    }
    let result = match &args.attach {
        Some(id) => attach(ctx, &args, id, display.as_mut()).await,
        None => start(ctx, &args, display.as_mut()).await,
    };
    if args.down
        && let Err(e) = crate::commands::down::take_down(ctx).await
    {
        safe_eprintln!("labrun: warning: `--down` failed: {e:#}; run `labrun down`");
    }
    result
}

async fn start(ctx: &Context, args: &Args, display: &mut dyn Display) -> anyhow::Result<ExitCode> {
    let lab = Lab::load(&ctx.lab_path)?;
    if args.until_conclusive.is_some() && lab.compare.is_none() {
        bail!(
            "`--until-conclusive` adds pairs to the comparisons a lab asks for, and {} asks for none: add a `compare:` block naming a baseline and a candidate tool, or drop the option",
            ctx.lab_path.display()
        );
    }
    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let run_id = lab.run_id(&utc_stamp(started));
    if lab.has_variants() {
        return crate::bench::variants::run_all(ctx, args, &lab, &run_id, started, display).await;
    }
    let host = HostRun::new(&args.results, &run_id);
    let overrides = overrides(args);
    run_lab(
        ctx, args, &lab, &overrides, &run_id, started, &host, display,
    )
    .await
}

/// What the command line changes for every lab (or variant) it runs.
pub(crate) fn overrides(args: &Args) -> PlanOverrides {
    PlanOverrides {
        scale: args.scale,
        cycles: args.cycles,
        tools: args.tools.clone(),
    }
}

/// One run of one lab (a lab without variants, or one variant) into `host`.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run_lab(
    ctx: &Context,
    args: &Args,
    lab: &Lab,
    overrides: &PlanOverrides,
    run_id: &str,
    started: u64,
    host: &HostRun,
    display: &mut dyn Display,
) -> anyhow::Result<ExitCode> {
    let mut on = prepare(ctx, args, lab, overrides, run_id, started, host, display).await?;
    let plan = on.plan.clone();
    let code = on.run(&plan, host, display, true).await?;
    let Some(max) = args.until_conclusive else {
        return Ok(code);
    };
    if code == ExitCode::from(EXIT_CONNECTION_LOST)
        || crate::bench::variants::INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst)
    {
        return Ok(code);
    }
    until_conclusive(&mut on, host, max, code, display).await
}

/// `--until-conclusive`: pairs added to an inconclusive comparison after the
/// run's own cycles (`code`: how those ended), the verdicts made again.
pub(crate) async fn until_conclusive(
    on: &mut OnTarget,
    host: &HostRun,
    max: u32,
    code: ExitCode,
    display: &mut dyn Display,
) -> anyhow::Result<ExitCode> {
    let more = crate::bench::more_pairs::add_until_conclusive(on, host, max, display).await?;
    match more {
        None => Ok(code),
        Some(later) if later == ExitCode::from(EXIT_CONNECTION_LOST) => Ok(later),
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

/// A run made ready on its machine: connected, checked, its agent pushed
/// and the machine's facts written; [`OnTarget::run`] then runs its plan, or
/// each of its rounds.
pub(crate) struct OnTarget {
    pub session: labrun_ssh::Session,
    pub remote: RemoteRun,
    /// The whole run's plan.
    pub plan: Plan,
    pub phases: HostPhases,
    session_file: SessionFile,
    session_path: PathBuf,
}

impl OnTarget {
    /// Writes `plan` (the run's, or a part of it: one round, added pairs)
    /// into the guest, starts the agent on it and follows it to its end;
    /// the summary is made and printed when `summary`.
    pub(crate) async fn run(
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
            summary,
        )
        .await
    }
}

/// Everything before the agent starts: the machine reached and checked, the
/// run's folder and facts written here, the estimate said, the agent pushed.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn prepare(
    ctx: &Context,
    args: &Args,
    lab: &Lab,
    overrides: &PlanOverrides,
    run_id: &str,
    started: u64,
    host: &HostRun,
    display: &mut dyn Display,
) -> anyhow::Result<OnTarget> {
    let access = machine::resolve(ctx, lab)?;
    let mut plan = lab.to_plan(run_id, overrides)?;
    let agent = locate_agent(args.agent.as_deref())?;
    let agent_sha = labrun_artifact::digest::sha256_file(&agent)
        .with_context(|| format!("reading the agent {}", agent.display()))?;

    let mut phases = HostPhases::default();
    let t = HostPhases::begin("connect");
    let session = connect(&access).await?;
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
    if let Some(request) = lab.compare.as_ref().and_then(|c| c.to_plan()) {
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
    let (pushed, env) = tokio::join!(push, environment_of(&session, &access));
    pushed?;
    phases.end(t);
    std::fs::write(
        host.raw().join(labrun_report::ENVIRONMENT_FILE),
        serde_json::to_vec_pretty(&env)?,
    )?;
    Ok(OnTarget {
        session,
        remote: remote.clone(),
        plan,
        phases,
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

/// Refuses to start beside a run that goes on on the target.
async fn refuse_if_busy(
    session: &labrun_ssh::Session,
    remote: &RemoteRun,
    access: &Access,
) -> anyhow::Result<()> {
    let Some(running) = remote::running_agent(session, remote)
        .await
        .context("checking for a run already going on on the target")?
    else {
        return Ok(());
    };
    bail!(
        "a run is already going on on {host}: run {id} (agent pid {pid} there); a second one beside it would skew both.\n  follow it (and get its evidence) with: labrun bench --attach {id}   (Ctrl-C there stops it and keeps what it measured)\n  or stop it on the target with: kill {pid}",
        host = access.target.host,
        id = running.run_id,
        pid = running.pid,
    )
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

async fn attach(
    ctx: &Context,
    args: &Args,
    id: &str,
    display: &mut dyn Display,
) -> anyhow::Result<ExitCode> {
    let dir = if id.is_empty() {
        newest_run(&args.results)?
    } else {
        args.results.join(id)
    };
    let host = HostRun { dir };
    let mut s = SessionFile::read(&host.session_file())?;
    let lab = machine_lab(Lab::load(Path::new(&s.lab_path))?, &host)?;
    let ctx = on_the_run_host(ctx, &s)?;
    let access = machine::resolve(&ctx, &lab)?;
    display.note(&format!("attaching to run {}", s.run_id));
    let session = connect(&access).await?;
    let pid = match s.agent_pid {
        Some(pid) => pid,
        // `bench` stopped while it started the agent: the guest knows.
        None => {
            let Some(pid) = remote::read_agent_pid(&session, &s.remote).await? else {
                bail!(
                    "run {} never started in the guest: `labrun bench` stopped before it started the agent (no {}); start a new run with `labrun bench`",
                    s.run_id,
                    s.remote.pid_file()
                );
            };
            s.agent_pid = Some(pid);
            s.write(&host.session_file())?;
            pid
        }
    };
    let mut phases = HostPhases::appending_to(&host.raw());
    follow_to_end(&session, &s.remote, pid, &host, display, &mut phases, true).await
}

pub(crate) async fn follow_to_end(
    session: &labrun_ssh::Session,
    remote: &RemoteRun,
    pid: u32,
    host: &HostRun,
    display: &mut dyn Display,
    phases: &mut HostPhases,
    summary: bool,
) -> anyhow::Result<ExitCode> {
    let t = HostPhases::begin("follow");
    let follower = Follower {
        session,
        remote,
        raw: host.raw(),
        agent_pid: pid,
    };
    let mut on_event = |e: &Event| display.event(e);
    let end = tokio::select! {
        end = follower.follow(&mut on_event) => end?,
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
        return Ok(ExitCode::from(EXIT_CONNECTION_LOST));
    }
    let t = HostPhases::begin("pull");
    follower.pull_all().await.context("pulling the evidence")?;
    let state = remote::agent_state(session, remote, pid).await?;
    phases.end(t);
    if state == AgentState::Exited(AGENT_COULD_NOT_RUN) {
        // Its reason is on its stderr, which the event stream does not carry
        // when the run was refused before it began.
        // Remote text: escaped (terminal.rs).
        safe_eprintln!(
            "labrun: the agent could not run:\n{}",
            remote::agent_error(session, remote).await
        );
        if !has_records(host) {
            return Ok(ExitCode::from(1));
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
            ExitCode::from(1)
        }
        AgentState::Running => ExitCode::from(1),
        AgentState::Vanished => {
            eprintln!(
                "labrun: the agent was killed before it finished; the evidence it wrote is kept"
            );
            ExitCode::from(1)
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

async fn wait_for_exit(session: &labrun_ssh::Session, remote: &RemoteRun, pid: u32) {
    for _ in 0..120 {
        match remote::agent_state(session, remote, pid).await {
            Ok(AgentState::Running) => tokio::time::sleep(Duration::from_millis(500)).await,
            _ => return,
        }
    }
}

/// Writes the summary files and prints the table.
pub(crate) fn summarize(host: &HostRun) -> anyhow::Result<ExitCode> {
    let (summary, written) = labrun_report::make_report(&host.dir)?;
    safe_print!("{}", labrun_report::render_terminal(&summary));
    for p in written {
        safe_println!("wrote {}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Connecting for a run is tried this many times, 2 s apart: a busy guest's
/// sshd can drop a handshake (seen through a pool host's jump, two TCG guests
/// having just booted side by side), and one dropped handshake would fail
/// the whole variant. A wrong key, a refused login or a timeout is final.
const CONNECT_ATTEMPTS: u32 = 3;
const CONNECT_PAUSE: Duration = Duration::from_secs(2);

async fn connect(access: &Access) -> anyhow::Result<labrun_ssh::Session> {
    connect_target(&access.target).await.with_context(|| {
        format!(
            "connecting to {}@{}:{}",
            access.target.user, access.target.host, access.target.port
        )
    })
}

/// [`labrun_ssh::connect`], tried again after a failure that may pass (the
/// last attempt's error is the one returned).
async fn connect_target(
    target: &labrun_ssh::Target,
) -> Result<labrun_ssh::Session, labrun_ssh::SshError> {
    let mut attempt = 1;
    loop {
        match labrun_ssh::connect(target, Duration::from_secs(30)).await {
            Err(e)
                if attempt < CONNECT_ATTEMPTS
                    && !e.is_final()
                    && !matches!(e, labrun_ssh::SshError::Timeout(_)) =>
            {
                attempt += 1;
                tokio::time::sleep(CONNECT_PAUSE).await;
            }
            other => return other,
        }
    }
}

/// Where each of the lab's tools came from (the lab's source in one line;
/// for a binary built here, the build's own record: toolchain, flags, the
/// binary's embedded build info), and whether this run runs it.
fn write_tool_sources(ctx: &Context, lab: &Lab, plan: &Plan, raw: &Path) -> anyhow::Result<()> {
    let tools: Vec<labrun_report::ToolSource> = lab
        .tools
        .iter()
        .map(|t| {
            let a = &t.artifact;
            let build = a
                .source
                .is_build()
                .then(|| labrun_artifact::build::find_record(&ctx.cache_dir, &a.sha256))
                .flatten();
            labrun_report::ToolSource {
                name: t.name.clone(),
                version: Some(t.version.clone()),
                source: a.provenance(),
                run: plan.tools.iter().any(|p| p.name == t.name),
                sha256: Some(a.sha256.clone()),
                sha256_source: a.sha256_source.clone(),
                binary_sha256: a.binary_sha256.clone(),
                build,
                download: labrun_artifact::Cache::new(&ctx.cache_dir).download_record(&a.sha256),
            }
        })
        .collect();
    let path = raw.join(labrun_report::TOOL_SOURCES_FILE);
    std::fs::write(&path, serde_json::to_vec_pretty(&tools)?)
        .with_context(|| format!("writing {}", path.display()))
}

/// Prints each quoted path that is an executable file, in the given order;
/// exits 1 when any is not. (Their digests are the agent's: it hashes each
/// binary once, checks the lab's pins and keeps the listing as evidence.)
fn installed_script(paths: &[String]) -> String {
    format!(
        "rc=0\nfor f in {}; do if [ -f \"$f\" ] && [ -x \"$f\" ]; then printf '%s\\n' \"$f\"; else rc=1; fi; done\nexit $rc\n",
        paths.join(" ")
    )
}

/// Before anything is pushed: every tool of the plan is installed in the
/// guest, or the run is refused with what to do.
async fn check_installed(session: &labrun_ssh::Session, plan: &Plan) -> anyhow::Result<()> {
    let paths: Vec<String> = plan
        .tools
        .iter()
        .map(|t| crate::bench::layout::sh_quote(&t.binary))
        .collect();
    let out = session.exec(&installed_script(&paths)).await?;
    if out.exit_code == Some(0) {
        return Ok(());
    }
    let listed = String::from_utf8_lossy(&out.stdout);
    let (present, missing): (
        Vec<&labrun_evidence::ToolPlan>,
        Vec<&labrun_evidence::ToolPlan>,
    ) = plan
        .tools
        .iter()
        .partition(|t| listed.lines().any(|l| l == t.binary));
    let names = |ts: &[&labrun_evidence::ToolPlan]| {
        ts.iter()
            .map(|t| format!("{} ({})", t.name, t.binary))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let others = if present.is_empty() {
        String::new()
    } else {
        let installed: Vec<&str> = present.iter().map(|t| t.name.as_str()).collect();
        format!(
            ", or run the installed ones with `--tools {}`",
            installed.join(",")
        )
    };
    bail!(
        "not installed in the guest: {}\n  install them with `labrun up` (VM; `up --tools` installs a subset) or on the target machine{others}",
        names(&missing),
    )
}

async fn say_estimate(
    session: &labrun_ssh::Session,
    lab: &Lab,
    plan: &Plan,
    access: &Access,
    remote: &RemoteRun,
    display: &mut dyn Display,
) -> Option<estimate::Estimate> {
    let scale = match plan.dataset {
        labrun_evidence::DatasetPlan::Synthetic { scale, .. } => Some(scale),
        // A git history has no scale: the lab estimates its size.
        labrun_evidence::DatasetPlan::GitHistory { .. } => None,
    };
    let bytes = estimate::dataset_bytes(lab, scale);
    let probe = format!(
        "mkdir -p {base} && cd {base} && {}",
        estimate::PROBE,
        base = crate::bench::layout::sh_quote(&remote.base)
    );
    let rates = match session.exec(&probe).await {
        Ok(o) => estimate::MachineRates::parse(&String::from_utf8_lossy(&o.stdout)),
        Err(_) => None,
    };
    let emulated = access.acceleration.as_deref() == Some("tcg");
    match rates {
        Some(rates) => {
            let tool_steps = labrun_evidence::protocol::flat(&plan.protocol)
                .filter(|s| s.as_run().is_some())
                .count();
            let e = estimate::estimate(bytes, plan.tools.len(), plan.cycles, tool_steps, rates);
            display.note(&estimate::describe(&e, scale.unwrap_or(1.0), emulated));
            Some(e)
        }
        None => {
            display
                .note("could not measure the machine's write and hash rates: no duration estimate");
            None
        }
    }
}

async fn environment_of(
    session: &labrun_ssh::Session,
    access: &Access,
) -> labrun_report::Environment {
    let mut env = environment::capture(session, access.hypervisor.as_ref()).await;
    env.acceleration = access.acceleration.clone();
    env.disk_cache = access.disk_cache.clone();
    env.disk_profile = access.disk_profile.map(|p| p.name().to_string());
    env.disk_iotune = access.disk_profile.map(|p| p.iotune());
    env.libvirt_version = env
        .libvirt_version
        .take()
        .or_else(|| access.libvirt_version.clone());
    env.qemu_version = env
        .qemu_version
        .take()
        .or_else(|| access.qemu_version.clone());
    env.hypervisor = access.pool_host.clone().or(env.hypervisor.take());
    env
}

/// `--agent`, else `labrun-agent` beside this executable, else the `make
/// agent` output under the current folder.
fn locate_agent(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(p) = given {
        if p.is_file() {
            return Ok(p.to_path_buf());
        }
        bail!(
            "the agent {} does not exist: build it with `make agent`",
            p.display()
        );
    }
    let mut candidates = Vec::new();
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        candidates.push(dir.join("labrun-agent"));
    }
    candidates.push(PathBuf::from(
        "target/x86_64-unknown-linux-gnu/release/labrun-agent",
    ));
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .ok_or_else(|| {
            anyhow::anyhow!(
                "no static guest agent found: build it with `make agent`, or name it with --agent / LABRUN_AGENT"
            )
        })
}

/// The lab whose machine a run used: a variant's run (`<run>/variants/<name>`)
/// ran on that variant's machine, which may have another shape (its own VM)
/// than the lab's.
fn machine_lab(lab: Lab, host: &HostRun) -> anyhow::Result<Lab> {
    let Some(name) = variant_of(&host.dir) else {
        return Ok(lab);
    };
    let variants = lab.variants().map_err(|_| {
        anyhow::anyhow!(
            "{} no longer expands into its variants: the run's variant `{name}` cannot be found",
            lab.source.file.display()
        )
    })?;
    variants
        .into_iter()
        .find(|v| v.record.name == name)
        .map(|v| v.lab)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "{} has no variant `{name}` any more: put it back to attach to its run",
                lab.source.file.display()
            )
        })
}

/// The variant a run folder belongs to, if it is a variant's.
fn variant_of(dir: &Path) -> Option<String> {
    let parent = dir.parent()?;
    (parent.file_name()? == labrun_evidence::variant::VARIANTS_DIR)
        .then(|| dir.file_name().map(|n| n.to_string_lossy().into_owned()))
        .flatten()
}

/// The context `--attach` connects with: the pool host the run is on, as its
/// session file says, unless `--host` names it already. Another host is
/// refused (the run's agent is not there).
fn on_the_run_host(ctx: &Context, s: &SessionFile) -> anyhow::Result<Context> {
    match (&ctx.host, &s.host) {
        (Some(given), Some(ran)) if given != ran => bail!(
            "run {} is on host `{ran}`, not `{given}`: attach without --host (or with --host {ran})",
            s.run_id
        ),
        (None, Some(ran)) => Ok(Context {
            host: Some(ran.clone()),
            ..ctx.clone()
        }),
        _ => Ok(ctx.clone()),
    }
}

/// What `--attach` takes for this run: its folder under `--results`
/// (`<run>/variants/<name>` for a variant's run).
fn attach_id(host: &HostRun, run_id: &str) -> String {
    let parts: Vec<String> = host
        .dir
        .iter()
        .rev()
        .take(3)
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    match parts.as_slice() {
        [name, dir, run] if dir == labrun_evidence::variant::VARIANTS_DIR => {
            format!("{run}/{dir}/{name}")
        }
        _ => run_id.to_string(),
    }
}

/// The run whose session file is newest: a run folder, or a variant's
/// folder inside one (`<run>/variants/<name>`).
fn newest_run(results: &Path) -> anyhow::Result<PathBuf> {
    let entries =
        std::fs::read_dir(results).with_context(|| format!("no runs in {}", results.display()))?;
    let runs: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    let variants = runs.iter().flat_map(|run| {
        std::fs::read_dir(run.join(labrun_evidence::variant::VARIANTS_DIR))
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|e| e.path())
    });
    let session = |dir: &PathBuf| std::fs::metadata(dir.join("session.json")).ok();
    runs.iter()
        .cloned()
        .chain(variants.collect::<Vec<_>>())
        .filter_map(|dir| Some((session(&dir)?.modified().ok()?, dir)))
        .max_by_key(|(modified, _)| *modified)
        .map(|(_, dir)| dir)
        .ok_or_else(|| anyhow::anyhow!("no run to attach to in {}", results.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variants_run_is_attached_by_its_folder() {
        let v = HostRun::new(Path::new("results/lab-x/variants"), "512m");
        assert_eq!(attach_id(&v, "lab-x.512m"), "lab-x/variants/512m");
        let plain = HostRun::new(Path::new("results"), "lab-x");
        assert_eq!(attach_id(&plain, "lab-x"), "lab-x");
        // The same folders tell `--attach` whose machine the run used.
        assert_eq!(variant_of(&v.dir).as_deref(), Some("512m"));
        assert_eq!(variant_of(&plain.dir), None);
    }

    #[tokio::test]
    async fn a_dropped_handshake_is_tried_again() {
        use labrun_ssh::test_support::Sshd;
        let sshd = Sshd::start().expect("sshd");
        // A relay to the sshd that drops its first connection at once, as
        // a busy guest's sshd did.
        let relay = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = relay.local_addr().unwrap().port();
        let to = sshd.port();
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            while let Ok((mut client, _)) = relay.accept().await {
                if count.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                    drop(client);
                    continue;
                }
                tokio::spawn(async move {
                    if let Ok(mut server) = tokio::net::TcpStream::connect(("127.0.0.1", to)).await
                    {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
            }
        });
        let session = connect_target(&sshd.keys().target(port))
            .await
            .expect("the second attempt connects");
        let out = session.exec("echo hi").await.unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "hi");
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 2);
        // A refused login is final: one attempt, at once.
        let mut wrong = sshd.keys().target(port);
        wrong.user = "nobody-here".into();
        let before = accepted.load(std::sync::atomic::Ordering::SeqCst);
        assert!(connect_target(&wrong).await.is_err());
        assert_eq!(
            accepted.load(std::sync::atomic::Ordering::SeqCst),
            before + 1
        );
    }

    #[test]
    fn attach_goes_to_the_pool_host_the_run_is_on() {
        let ctx = |host: Option<&str>| Context {
            lab_path: "lab.yaml".into(),
            mirror: None,
            cache_dir: "cache".into(),
            state_root: "state".into(),
            host: host.map(String::from),
            force_host: false,
        };
        let session = |host: Option<&str>| SessionFile {
            run_id: "lab-x.second".into(),
            lab_path: "/lab.yaml".into(),
            remote: RemoteRun {
                base: "/srv/labrun".into(),
                run_id: "lab-x.second".into(),
            },
            agent_pid: Some(7),
            started_unix: 1,
            host: host.map(String::from),
        };
        let on = |c: Option<&str>, s: Option<&str>| {
            on_the_run_host(&ctx(c), &session(s)).map(|c| c.host)
        };
        // Not told: the host the run is on.
        assert_eq!(on(None, Some("remote")).unwrap().as_deref(), Some("remote"));
        assert_eq!(
            on(Some("remote"), Some("remote")).unwrap().as_deref(),
            Some("remote")
        );
        // A run of a lab with one host, or of an older labrun: as before.
        assert_eq!(on(None, None).unwrap(), None);
        assert_eq!(on(Some("here"), None).unwrap().as_deref(), Some("here"));
        let other = on(Some("here"), Some("remote")).unwrap_err().to_string();
        assert!(
            other.contains("is on host `remote`, not `here`") && other.contains("--host remote"),
            "{other}"
        );
    }

    #[test]
    fn installed_lists_the_executables_in_order_and_fails_for_any_other() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, plain) = (
            dir.path().join("a b"),
            dir.path().join("b"),
            dir.path().join("plain"),
        );
        for p in [&a, &b, &plain] {
            std::fs::write(p, "#!/bin/sh\n").unwrap();
        }
        for p in [&a, &b] {
            std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
        }
        let quoted = |p: &Path| crate::bench::layout::sh_quote(&p.display().to_string());
        let run = |paths: &[String]| {
            std::process::Command::new("sh")
                .arg("-c")
                .arg(installed_script(paths))
                .output()
                .unwrap()
        };
        let out = run(&[quoted(&b), quoted(&a)]);
        assert!(out.status.success());
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            format!("{}\n{}\n", b.display(), a.display())
        );
        for other in [plain, dir.path().join("missing"), dir.path().to_path_buf()] {
            let out = run(&[quoted(&a), quoted(&other)]);
            assert_eq!(out.status.code(), Some(1), "{}", other.display());
            assert_eq!(
                String::from_utf8(out.stdout).unwrap(),
                format!("{}\n", a.display())
            );
        }
    }
}
