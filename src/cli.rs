//! The command line as clap sees it. Nothing here does work: `context.rs`
//! turns the global options into typed settings, and each subcommand's own
//! arguments live beside its implementation in `commands/`.

use crate::commands;
use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
// The version names the commit it was built from (build.rs).
#[command(
    name = "labrun",
    version = env!("LABRUN_LONG_VERSION"),
    about,
    propagate_version = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(clap::Args)]
pub struct GlobalArgs {
    /// The lab file.
    #[arg(
        short = 'f',
        long = "file",
        env = "LABRUN_LAB",
        global = true,
        default_value = "lab.yaml"
    )]
    pub lab: PathBuf,
    /// A folder of artifacts looked up by file name before any download.
    #[arg(long, env = "LABRUN_MIRROR", global = true)]
    pub mirror: Option<PathBuf>,
    /// Where downloaded artifacts and built images are cached.
    #[arg(long, env = "LABRUN_CACHE", global = true)]
    pub cache: Option<PathBuf>,
    /// Where per-lab state (keys, overlay, domain info) is kept.
    #[arg(long, env = "LABRUN_STATE", global = true)]
    pub state: Option<PathBuf>,
    /// Which of the lab's `hosts:` (hypervisors) `up`, `ssh` and `bench`
    /// use, and `down` takes down (default: the first for `up`, every host
    /// the lab has a VM on for `down`); `bench` of a lab with variants
    /// spreads them over `a,b,...`.
    #[arg(long, env = "LABRUN_HOST", global = true)]
    pub host: Option<String>,
    /// Use a host even when it is not the machine its `hosts[].expect`
    /// describes (the evidence records what it was).
    #[arg(long, global = true)]
    pub force_host: bool,
}

#[derive(Subcommand)]
pub enum Command {
    /// Validate a lab file and print what it will do.
    Check(commands::check::Args),
    /// What this host gives a run and why (acceleration, libvirt, QEMU, disk, noise sources); exit 1 when a run cannot start.
    Doctor(commands::doctor::Args),
    /// Download and verify the lab's pinned artifacts into the cache.
    Fetch(commands::fetch::Args),
    /// Write a tool's digest into the lab file from the upstream checksum list.
    Pin(commands::pin::Args),
    /// Build or inspect base images.
    Image(commands::image::Args),
    /// Bring up the machine under test and install the tools.
    Up(commands::up::Args),
    /// Tear the machine down, whatever state it is in.
    Down(commands::down::Args),
    /// Show what is up.
    Status(commands::status::Args),
    /// A shell, or one command, in the guest.
    Ssh(commands::ssh::Args),
    /// Run the timed cycles and summarize them.
    Bench(commands::bench::Args),
    /// The first commit of a tool's source where a figure got worse beyond the margin (a series tool built from git).
    Bisect(commands::bisect::Args),
    /// Follow a tool's branch: benchmark each new commit against the lab's anchor, import it, bisect each step slower (a series tool built from git; for a timer or cron).
    Track(commands::track::Args),
    /// Re-make the summary of a run from its raw evidence.
    Report(commands::report::Args),
    /// Verdicts between two tools of a run, or two runs: slower, faster, no change, inconclusive.
    Compare(commands::compare::Args),
    /// Pack a run folder into one file with a SHA-256 manifest, to share or commit it.
    Pack(commands::pack::Args),
    /// The runs under results/ (or a folder), newest first, and which compare.
    Runs(commands::runs::Args),
    /// Finished runs (packs or run folders) into the results store, each once.
    Import(commands::import::Args),
    /// A static site of the results store: tools x datasets x machine classes, trends, tools side by side.
    Site(commands::site::Args),
    /// One tool across every run of the results store: a trend per dataset and machine class, each step judged.
    Trend(commands::trend::Args),
    /// Man pages and shell completions from this definition (`make install`).
    #[command(hide = true)]
    Generate(commands::generate::Args),
}
