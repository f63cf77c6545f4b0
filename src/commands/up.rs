//! `labrun up`: bring up the lab's VM (building the image when missing),
//! wait for SSH, install the lab's tools. Every artifact is fetched and its
//! SHA-256 checked before the VM starts; Ctrl-C leaves nothing behind.

use crate::commands::fetch::{Bar, Ready, fetch_and_extract};
use crate::context::Context;
use crate::exit;
use anyhow::{Context as _, bail};
use indicatif::{ProgressBar, ProgressStyle};
use labrun_artifact::InstallKind;
use labrun_vm::GuestInstall;
use labrun_vm::{Paths, UpOutcome, UpProgress, VmError};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// Fetch, install and check only these tools (comma-separated names from
    /// the lab file); the others are not fetched at all.
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub tools: Vec<String>,
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let wanted = (!args.tools.is_empty()).then_some(args.tools.as_slice());
    bring_up(ctx, wanted).await
}

/// `labrun up`, also called by `labrun bench --up`; `wanted` picks tools.
pub async fn bring_up(ctx: &Context, wanted: Option<&[String]>) -> anyhow::Result<ExitCode> {
    let lab = labrun_lab::Lab::load(&ctx.lab_path)?;
    bring_up_lab(ctx, &lab, wanted).await
}

/// Where the guest's SSH listens: this host's loopback, or a remote
/// hypervisor's (reached through its sshd).
fn ssh_place(state: &labrun_vm::VmState) -> String {
    let port = state.ssh_port.unwrap_or(0);
    match &state.remote {
        Some(r) => format!("127.0.0.1:{port} on {} (through its sshd)", r.name),
        None => format!("127.0.0.1:{port}"),
    }
}

/// A pool host that is not what the lab expects is refused before anything
/// is made there (or, with `--force-host`, used with a warning).
async fn check_host(
    ctx: &Context,
    lab: &labrun_lab::Lab,
    cfg: &labrun_vm::VmConfig,
) -> anyhow::Result<()> {
    let Some(host) = crate::lab_vm::pick_host(lab, ctx.host.as_deref())? else {
        return Ok(());
    };
    if host.expect == labrun_lab::HostExpect::default() {
        return Ok(());
    }
    let found = crate::bench::environment::probe_machine(cfg.remote.as_ref()).await;
    let wrong = crate::host_check::mismatches(&host.expect, &found.host);
    if wrong.is_empty() {
        return Ok(());
    }
    let what = format!(
        "host `{}` is not the machine lab `{}` expects: {}",
        host.name,
        lab.name,
        wrong.join("; ")
    );
    if ctx.force_host {
        safe_eprintln!("warning: {what}; going on (--force-host)");
        return Ok(());
    }
    bail!(
        "{what}. Its figures would not compare with the lab's: fix `hosts[].expect`, or pass --force-host to use it anyway"
    )
}

/// `up` for a lab already loaded: `bench` boots each variant's machine
/// shape with it.
pub async fn bring_up_lab(
    ctx: &Context,
    lab: &labrun_lab::Lab,
    wanted: Option<&[String]>,
) -> anyhow::Result<ExitCode> {
    crate::folders::ensure_usable(ctx)?;
    let mut cfg = crate::lab_vm::vm_of(lab, ctx)?;
    if !labrun_vm::access::is_root()
        && let Some(access) = crate::lab_vm::local_access(lab, ctx.host.as_deref())?
    {
        safe_eprintln!("up: libvirt: {}", access.describe());
    }
    check_host(ctx, lab, &cfg).await?;
    // A wrong digest stops everything before anything is booted or installed.
    let tools = lab.selected_tools(wanted)?;
    if tools.len() < lab.tools.len() {
        let left: Vec<&str> = lab
            .tools
            .iter()
            .filter(|t| !tools.iter().any(|w| w.name == t.name))
            .map(|t| t.name.as_str())
            .collect();
        safe_eprintln!(
            "up: only {} of the lab's tools; not installed: {}",
            tools.len(),
            left.join(", ")
        );
    }
    // The storage servers a lab pins are installed with its tools.
    let everything = lab.installs(wanted)?;
    let tools: Vec<&labrun_lab::ToolSpec> = everything.iter().collect();
    let ready = fetch_and_extract(ctx, &tools)
        .await
        .context("fetching the lab's tools (nothing was started)")?;
    crate::lab_vm::fetch_cloud_image(ctx, lab, &mut cfg, &mut Bar::default())
        .await
        .context("fetching the lab's cloud image (nothing was started)")?;
    let installs = tool_installs(&tools, &ready);
    let paths = paths(ctx);
    let (cancel_tx, cancel_rx) = tokio::sync::watch::channel(false);
    let signals = tokio::spawn(async move {
        wait_for_interrupt().await;
        let _ = cancel_tx.send(true);
    });
    let progress = Spinner::for_host(ctx, lab);
    let outcome = labrun_vm::up(&cfg, &paths, &progress, cancel_rx).await;
    progress.finish();
    signals.abort();
    match outcome {
        Ok(UpOutcome::AlreadyUp { state }) => {
            safe_println!(
                "{} is already up (since {}, SSH on {}): nothing to do",
                state.domain_name,
                state.created,
                ssh_place(&state)
            );
            Ok(ExitCode::SUCCESS)
        }
        Ok(UpOutcome::Started {
            state,
            session,
            lock,
            boot,
            image_built,
            boot_retry,
        }) => {
            if let Some(first) = &boot_retry {
                // Also kept in the VM's state (`boot_retry`) for the evidence.
                safe_eprintln!(
                    "{}up: the guest's kernel {first}; it came up on a second boot",
                    progress.who
                );
            }
            safe_eprintln!("{}up: installing {} tool(s)", progress.who, installs.len());
            let installed = tokio::select! {
                r = install_checked(&session, &installs, &ready) => r,
                _ = wait_for_interrupt() => Err(VmError::Cancelled.into()),
            };
            let installed = match installed {
                Ok(i) => i,
                Err(e) => {
                    drop(session);
                    drop(lock);
                    let removed = labrun_vm::down(&cfg, &paths.state_root).await?;
                    safe_eprintln!(
                        "labrun: removed {} after the failure",
                        removed.removed.join(", ")
                    );
                    return match e.downcast_ref::<VmError>() {
                        Some(VmError::Cancelled) => Ok(ExitCode::from(exit::INTERRUPTED)),
                        _ => Err(e),
                    };
                }
            };
            let digests = labrun_vm::LabDir::for_config(&paths.state_root, &cfg).binary_digests();
            std::fs::write(&digests, labrun_vm::tools::digest_lines(&installed))
                .with_context(|| format!("writing {}", digests.display()))?;
            for t in &installed {
                safe_println!(
                    "installed {} at {} (sha256 {} checked in the guest)",
                    t.name,
                    t.guest_path,
                    t.binary_sha256
                );
            }
            let _ = session.close().await;
            drop(lock);
            safe_println!(
                "{} is up: SSH ready {:.1} s after start{}, {}, {} vCPU, {} MiB, {}",
                state.domain_name,
                boot.as_secs_f64(),
                if image_built {
                    " (image built first)"
                } else {
                    ""
                },
                ssh_place(&state),
                state.vcpus,
                state.memory_mib,
                labrun_vm::up::describe(state.acceleration),
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(VmError::Cancelled) => {
            safe_eprintln!("labrun: interrupted: everything this `up` made was removed");
            Ok(ExitCode::from(exit::INTERRUPTED))
        }
        Err(e) => Err(e.into()),
    }
}

/// What to push for each tool: the extracted binary, the whole `.deb`, or
/// a Python package's wheel bundle.
fn tool_installs(tools: &[&labrun_lab::ToolSpec], ready: &[Ready]) -> Vec<labrun_vm::ToolInstall> {
    tools
        .iter()
        .zip(ready)
        .map(|(tool, r)| {
            let guest_path = tool.install_path();
            let how = match &r.installable.kind {
                InstallKind::Binary => GuestInstall::Binary,
                InstallKind::Deb { .. } => GuestInstall::Deb,
                InstallKind::PythonVenv { entry_point } => GuestInstall::PythonVenv {
                    venv: guest_path
                        .strip_suffix(&format!("/bin/{entry_point}"))
                        .unwrap_or(&guest_path)
                        .to_string(),
                },
            };
            labrun_vm::ToolInstall {
                name: tool.name.clone(),
                local_path: r.installable.path.clone(),
                guest_path,
                // The uploaded file's digest: the .deb's or bundle's, or the binary's.
                sha256: match how {
                    GuestInstall::Binary => r.installable.binary_sha256.clone(),
                    GuestInstall::Deb | GuestInstall::PythonVenv { .. } => r.fetched.sha256.clone(),
                },
                how,
            }
        })
        .collect()
}

/// Installs, then compares what the guest computed for each binary with the
/// digest the host extracted: the binary that runs is the one pinned.
async fn install_checked(
    session: &labrun_ssh::Session,
    installs: &[labrun_vm::ToolInstall],
    ready: &[Ready],
) -> anyhow::Result<Vec<labrun_vm::InstalledTool>> {
    let installed = labrun_vm::install_tools(session, installs).await?;
    for (t, r) in installed.iter().zip(ready) {
        // A venv's entry point is a script pip writes in the guest: what
        // was checked there is the bundle and each wheel (`SHA256SUMS`).
        let venv = matches!(r.installable.kind, InstallKind::PythonVenv { .. });
        if !venv && t.binary_sha256 != r.installable.binary_sha256 {
            bail!(
                "{} at {} in the guest has SHA-256 {}, but the verified artifact's binary is {}: the install did not put the pinned binary there",
                t.name,
                t.guest_path,
                t.binary_sha256,
                r.installable.binary_sha256
            );
        }
    }
    Ok(installed)
}

/// SIGINT or SIGTERM.
pub(crate) async fn wait_for_interrupt() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

pub(crate) fn paths(ctx: &Context) -> Paths {
    Paths {
        cache_dir: ctx.cache_dir.clone(),
        state_root: ctx.state_root.clone(),
        apt_dir: PathBuf::from("/etc/apt"),
    }
}

/// One spinner line: the current step, the image build's phase, or the SSH
/// wait's elapsed time and attempt count.
pub(crate) struct Spinner {
    bar: ProgressBar,
    step_started: std::sync::Mutex<Instant>,
    /// `[host] ` when several hosts of a pool come up at once, else empty.
    who: String,
}

impl Spinner {
    pub(crate) fn new() -> Spinner {
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        Spinner {
            bar,
            step_started: std::sync::Mutex::new(Instant::now()),
            who: String::new(),
        }
    }

    /// A spinner whose lines say which host of a pool they are about.
    fn for_host(ctx: &Context, lab: &labrun_lab::Lab) -> Spinner {
        let mut s = Spinner::new();
        if let (Some(h), true) = (&ctx.host, lab.hosts.len() > 1) {
            s.who = format!("[{h}] ");
            // Several hosts come up at once: two spinners would draw over
            // each other, so each says its steps as lines only.
            s.bar.finish_and_clear();
            s.bar = ProgressBar::hidden();
        }
        s
    }

    /// A permanent line above the spinner; plain stderr when it is not a
    /// terminal (CI logs), where indicatif draws nothing.
    fn line(&self, text: String) {
        if self.bar.is_hidden() {
            safe_eprintln!("{text}");
        } else {
            self.bar.println(crate::terminal::bar_line(&text));
        }
    }

    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl UpProgress for Spinner {
    fn warn(&self, message: &str) {
        self.bar
            .suspend(|| safe_eprintln!("\n*** WARNING: {message}\n"));
    }

    fn step(&self, message: &str) {
        if let Ok(mut t) = self.step_started.lock() {
            *t = Instant::now();
        }
        self.line(format!("{}up: {message}", self.who));
        self.bar.set_message(crate::terminal::bar_line(message));
    }

    fn image_line(&self, line: &str) {
        // mmdebstrap's "I: ..." lines and the recipe's "phase: ..." lines
        // say where the build is; the rest is apt's chatter.
        if line.starts_with("phase:") {
            self.line(format!(
                "image: {}",
                line.trim_start_matches("phase:").trim()
            ));
        }
        if line.starts_with("I: ") || line.starts_with("phase:") || line.starts_with("E: ") {
            // By characters: `String::truncate` panics inside a multi-byte one.
            let l: String = line.chars().take(100).collect();
            self.bar
                .set_message(crate::terminal::bar_line(&format!("image: {l}")));
        }
    }

    fn ssh_attempt(&self, n: u32) {
        let secs = self
            .step_started
            .lock()
            .map(|t| t.elapsed().as_secs())
            .unwrap_or(0);
        self.bar
            .set_message(format!("waiting for SSH: {secs} s, attempt {n}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_image_line_is_cut_between_characters() {
        // Byte 100 falls inside an `é`: cutting there used to panic.
        let line = format!("I: {}", "é".repeat(60));
        let spinner = Spinner::new();
        spinner.image_line(&line);
        spinner.image_line("phase: \x1b[2J");
        spinner.finish();
    }
}
