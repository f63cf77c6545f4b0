//! `labrun up`: bring up the lab's VM (building the image when missing),
//! wait for SSH, install the lab's tools. Ctrl-C leaves nothing behind.

use crate::context::Context;
use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressStyle};
use labrun_vm::{Paths, UpOutcome, UpProgress, VmConfig, VmError};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {}

pub async fn run(ctx: &Context, _args: Args) -> anyhow::Result<ExitCode> {
    let cfg = vm_config(ctx)?;
    let paths = paths(ctx);
    let (cancel_tx, cancel_rx) = tokio::sync::watch::channel(false);
    let signals = tokio::spawn(async move {
        wait_for_interrupt().await;
        let _ = cancel_tx.send(true);
    });
    let progress = Spinner::new();
    let outcome = labrun_vm::up(&cfg, &paths, &progress, cancel_rx).await;
    progress.finish();
    signals.abort();
    match outcome {
        Ok(UpOutcome::AlreadyUp { state }) => {
            println!(
                "{} is already up (since {}, SSH on 127.0.0.1:{}): nothing to do",
                state.domain_name,
                state.created,
                state.ssh_port.unwrap_or(0)
            );
            Ok(ExitCode::SUCCESS)
        }
        Ok(UpOutcome::Started {
            state,
            session,
            lock,
            boot,
            image_built,
        }) => {
            // Tools come from the lab's pinned artifacts once the lab file
            // names them; the digests the guest computes are the evidence.
            let tools: Vec<labrun_vm::ToolInstall> = Vec::new();
            let installed = tokio::select! {
                r = labrun_vm::install_tools(&session, &tools) => r,
                _ = wait_for_interrupt() => Err(VmError::Cancelled),
            };
            let installed = match installed {
                Ok(i) => i,
                Err(e) => {
                    drop(session);
                    drop(lock);
                    let removed =
                        labrun_vm::down(&cfg.uri, &paths.state_root, &cfg.lab_name, &cfg.lab_path)?;
                    eprintln!(
                        "labrun: removed {} after the failure",
                        removed.removed.join(", ")
                    );
                    return match e {
                        VmError::Cancelled => Ok(ExitCode::from(130)),
                        e => Err(e.into()),
                    };
                }
            };
            let digests =
                labrun_vm::LabDir::for_lab(&paths.state_root, &cfg.lab_name, &cfg.lab_path)
                    .binary_digests();
            std::fs::write(&digests, labrun_vm::tools::digest_lines(&installed))
                .with_context(|| format!("writing {}", digests.display()))?;
            let _ = session.close().await;
            drop(lock);
            println!(
                "{} is up: SSH ready {:.1} s after start{}, 127.0.0.1:{}, {} vCPU, {} MiB, {}",
                state.domain_name,
                boot.as_secs_f64(),
                if image_built {
                    " (image built first)"
                } else {
                    ""
                },
                state.ssh_port.unwrap_or(0),
                state.vcpus,
                state.memory_mib,
                labrun_vm::up::describe(state.acceleration),
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(VmError::Cancelled) => {
            eprintln!("labrun: interrupted: everything this `up` made was removed");
            Ok(ExitCode::from(130))
        }
        Err(e) => Err(e.into()),
    }
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

/// The lab file's absolute path (it need not exist any more for `down`).
pub(crate) fn lab_path(ctx: &Context) -> anyhow::Result<PathBuf> {
    if let Ok(p) = std::fs::canonicalize(&ctx.lab_path) {
        return Ok(p);
    }
    let cwd = std::env::current_dir().context("cannot read the current folder")?;
    Ok(cwd.join(&ctx.lab_path))
}

/// The VM settings of the lab. The lab's name is the file name without its
/// extension until the lab schema's `name:` is read here.
pub(crate) fn vm_config(ctx: &Context) -> anyhow::Result<VmConfig> {
    let path = lab_path(ctx)?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let name: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let cfg = VmConfig::new(name, path);
    cfg.validate()?;
    Ok(cfg)
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
        }
    }

    /// A permanent line above the spinner; plain stderr when it is not a
    /// terminal (CI logs), where indicatif draws nothing.
    fn line(&self, text: String) {
        if self.bar.is_hidden() {
            eprintln!("{text}");
        } else {
            self.bar.println(text);
        }
    }

    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl UpProgress for Spinner {
    fn warn(&self, message: &str) {
        self.bar.suspend(|| eprintln!("\n*** WARNING: {message}\n"));
    }

    fn step(&self, message: &str) {
        if let Ok(mut t) = self.step_started.lock() {
            *t = Instant::now();
        }
        self.line(format!("up: {message}"));
        self.bar.set_message(message.to_string());
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
            let mut l = line.to_string();
            l.truncate(100);
            self.bar.set_message(format!("image: {l}"));
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
