//! `labrun fetch`: every tool's artifact (and, for the whole lab, every
//! archive its dataset names and a cloud image it boots) into the cache,
//! verified, and the tools' binaries extracted. The work is in
//! `labrun-artifact`; this file picks the tools, draws the progress bar
//! and prints the table.

use crate::context::Context;
use crate::exit;
use indicatif::{ProgressBar, ProgressStyle};
use labrun_artifact::{
    FetchOptions, FetchedArtifact, Fetcher, InstallKind, Installable, Progress, Source, extract,
};
use labrun_lab::{Lab, ToolSpec};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Only these tools (comma-separated names from the lab file); without
    /// it, the dataset's archives and the cloud image too.
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub tools: Vec<String>,
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let lab = match Lab::load(&ctx.lab_path) {
        Ok(lab) => lab,
        Err(e) => {
            safe_eprintln!("labrun fetch: {e}");
            return Ok(ExitCode::from(exit::FAILED));
        }
    };
    let wanted = (!args.tools.is_empty()).then_some(args.tools.as_slice());
    // The servers a lab pins come with its tools.
    let everything = match lab.installs(wanted) {
        Ok(t) => t,
        Err(e) => {
            safe_eprintln!("labrun fetch: {e}");
            return Ok(ExitCode::from(exit::NOTHING_DONE));
        }
    };
    let tools: Vec<&ToolSpec> = everything.iter().collect();
    let ready = match fetch_and_extract(ctx, &tools).await {
        Ok(r) => r,
        Err(e) => {
            safe_eprintln!("labrun fetch: {e:#}");
            return Ok(ExitCode::from(if e.is::<Interrupted>() {
                exit::INTERRUPTED
            } else {
                exit::FAILED
            }));
        }
    };
    for (tool, r) in tools.iter().zip(&ready) {
        print_row(tool, &r.fetched, &r.installable);
    }
    let mut count = tools.len();
    // The whole lab (no --tools): its dataset's archives, so a bench needs
    // no network for them either.
    if wanted.is_none() {
        match super::fetch_dataset::fetch_all(ctx, &lab).await {
            Ok(n) => count += n,
            Err(e) => {
                safe_eprintln!("labrun fetch: {e:#}");
                return Ok(ExitCode::from(if e.is::<Interrupted>() {
                    exit::INTERRUPTED
                } else {
                    exit::FAILED
                }));
            }
        }
    }
    // The whole lab: its cloud image too.
    if wanted.is_none()
        && let Ok((_, mut cfg)) = crate::lab_vm::load(ctx)
    {
        let mut bar = Bar::default();
        let image = crate::lab_vm::fetch_cloud_image(ctx, &lab, &mut cfg, &mut bar);
        match until_interrupted(image).await {
            Err(interrupted) => {
                safe_eprintln!("labrun fetch: {interrupted}");
                return Ok(ExitCode::from(exit::INTERRUPTED));
            }
            Ok(Ok(Some(image))) => {
                safe_println!("vm image: {}", image.path.display());
                safe_println!("  sha256   {} ok", image.sha256);
                count += 1;
            }
            Ok(Ok(None)) => {}
            Ok(Err(e)) => {
                safe_eprintln!("labrun fetch: {e:#}");
                return Ok(ExitCode::from(exit::FAILED));
            }
        }
    }
    safe_println!(
        "ok: {} artifact(s) verified in {}",
        count,
        labrun_artifact::Cache::new(&ctx.cache_dir).root().display()
    );
    Ok(ExitCode::SUCCESS)
}

/// A tool's artifact, verified, and what to install from it.
pub struct Ready {
    pub fetched: FetchedArtifact,
    pub installable: Installable,
}

/// SIGINT or SIGTERM arrived during a fetch.
#[derive(Debug)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted (SIGINT or SIGTERM); no partial file was kept")
    }
}

impl std::error::Error for Interrupted {}

/// Runs `work` until it ends or SIGINT/SIGTERM arrives. On a signal the work
/// is dropped, and with it the partial file it was writing (a temporary file
/// deleted on drop); the signal's default action would end the process
/// before any drop ran and leave the partial in the cache.
pub(crate) async fn until_interrupted<T>(work: impl Future<Output = T>) -> Result<T, Interrupted> {
    tokio::select! {
        out = work => Ok(out),
        () = crate::commands::up::wait_for_interrupt() => Err(Interrupted),
    }
}

/// Fetches every tool's artifact and checks its SHA-256, then extracts the
/// binaries. Every file is verified before any is extracted: a mismatch stops
/// everything with nothing done for any tool. SIGINT or SIGTERM stops it with
/// [`Interrupted`] and no partial file left.
pub async fn fetch_and_extract(ctx: &Context, tools: &[&ToolSpec]) -> anyhow::Result<Vec<Ready>> {
    until_interrupted(fetch_and_extract_all(ctx, tools)).await?
}

async fn fetch_and_extract_all(ctx: &Context, tools: &[&ToolSpec]) -> anyhow::Result<Vec<Ready>> {
    let fetcher = Fetcher::new(FetchOptions::new(ctx.cache_dir.clone(), ctx.mirror.clone()))?;
    let mut fetched = Vec::new();
    for tool in tools {
        let mut bar = Bar::default();
        fetched.push(fetcher.fetch(&tool.name, &tool.artifact, &mut bar).await?);
    }
    let mut ready = Vec::new();
    for (tool, f) in tools.iter().zip(fetched) {
        let spec = tool.artifact.clone();
        let for_extract = f.clone();
        let installable =
            tokio::task::spawn_blocking(move || extract(&for_extract, &spec)).await??;
        ready.push(Ready {
            fetched: f,
            installable,
        });
    }
    Ok(ready)
}

fn print_row(tool: &ToolSpec, f: &FetchedArtifact, i: &Installable) {
    use crate::terminal::one_line;
    // "cache", "mirror PATH", "apt PKG=VERSION", "file PATH" or the URL
    // (with every redirect: "URL -> URL2 -> URL3").
    safe_println!(
        "{} {}: from {}",
        one_line(&tool.name),
        one_line(&tool.version),
        one_line(&f.from.to_string())
    );
    safe_println!("  file     {}", f.path.display());
    safe_println!("  sha256   {} ok", f.sha256);
    let pinned = match &tool.artifact.binary_sha256 {
        Some(_) => "matches binary_sha256",
        None => "recorded (binary_sha256 not pinned)",
    };
    match &i.kind {
        InstallKind::Binary => safe_println!("  binary   {}", i.path.display()),
        InstallKind::Deb { binary_path } => {
            safe_println!("  binary   {binary_path} (installed in the guest with dpkg -i)")
        }
        InstallKind::PythonVenv { entry_point } => {
            // The evidence of a wheel bundle is its wheels, each by digest.
            safe_println!(
                "  binary   {} (the venv's entry point {entry_point} in the guest)",
                tool.install_path()
            );
            if let Ok(m) = labrun_artifact::build::python::bundle::read_manifest(&i.path) {
                for w in &m.wheels {
                    safe_println!("  wheel    {} sha256 {}", one_line(&w.file), w.sha256);
                }
            }
            return;
        }
    }
    safe_println!("  binary sha256 {} {pinned}", i.binary_sha256);
}

/// An indicatif bar on stderr (indicatif draws nothing when stderr is not a
/// terminal, so logs and pipes stay clean).
#[derive(Default)]
pub struct Bar {
    bar: Option<ProgressBar>,
}

impl Progress for Bar {
    fn start(&mut self, name: &str, source: &Source, total: Option<u64>) {
        let bar = match total {
            Some(n) => ProgressBar::new(n),
            None => ProgressBar::new_spinner(),
        };
        let template = if total.is_some() {
            "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}"
        } else {
            "{msg} {spinner} {bytes} {bytes_per_sec}"
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(crate::terminal::bar_line(&format!(
            "{name} from {}",
            source.kind()
        )));
        self.bar = Some(bar);
    }

    fn advance(&mut self, bytes: u64) {
        if let Some(b) = &self.bar {
            b.inc(bytes);
        }
    }

    fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }

    fn step(&mut self, name: &str, what: &str) {
        let bar = self.bar.get_or_insert_with(|| {
            let bar = ProgressBar::new_spinner();
            if let Ok(style) = ProgressStyle::with_template("{spinner} [{elapsed}] {msg}") {
                bar.set_style(style);
            }
            bar.enable_steady_tick(std::time::Duration::from_millis(250));
            bar
        });
        bar.set_message(crate::terminal::bar_line(&format!(
            "building {name}: {what}"
        )));
        // Without a terminal the spinner draws nothing: say each step once.
        if bar.is_hidden() {
            safe_eprintln!("labrun: building {name}: {what}");
        }
    }

    fn notice(&mut self, message: &str) {
        match &self.bar {
            Some(b) => b.suspend(|| safe_eprintln!("labrun fetch: {message}")),
            None => safe_eprintln!("labrun fetch: {message}"),
        }
    }
}
