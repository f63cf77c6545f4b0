//! `labrun-agent scan`: hashes a tree into its manifest, as the host does
//! for a folder it pushes (the same streamed scan: memory does not grow
//! with the number of files), and prints the manifest's digest.

use super::generate::gb;
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// The tree to hash.
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// Where to write the manifest [default: DIR.manifest.jsonl, beside DIR
    /// so it is never part of the tree].
    #[arg(long, value_name = "PATH")]
    pub manifest: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let manifest_path = match args.manifest {
        Some(p) => p,
        None => labrun_dataset::default_manifest_path(&args.dir)?,
    };
    labrun_dataset::check_outside(&manifest_path, &args.dir)?;
    let started = Instant::now();
    let written = labrun_dataset::scan_to_file(&args.dir, &manifest_path)
        .with_context(|| format!("hashing {}", args.dir.display()))?;
    println!(
        "scan: {} entries, {} of files in {:.1} s; manifest {} (sha256 {})",
        written.entries,
        gb(written.file_bytes),
        started.elapsed().as_secs_f64(),
        manifest_path.display(),
        written.sha256
    );
    Ok(ExitCode::SUCCESS)
}
