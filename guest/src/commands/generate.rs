//! `labrun-agent gen`: writes the seeded dataset and its manifest, and
//! prints the totals by class.

use anyhow::Context;
use labrun_dataset::{DatasetParams, DatasetProfile, Footprint};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// Directory to generate into: created if missing, refused if not empty.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Seed of the dataset: the same seed and scale give a byte-identical
    /// tree and manifest on any machine.
    #[arg(long, default_value_t = DatasetParams::DEFAULT_SEED)]
    pub seed: u64,
    /// Shrinks the dataset: the number of small files and the size of the
    /// large files are multiplied by it. 1 is the published 6.10 GB; 0.01
    /// is about 61 MB. From 0.0001 to 100.
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// The dataset's shape: published (SPEC 3), tiny-files (1,000,000
    /// files of 0-4 KiB at scale 1), media (photos and videos, 6.10 GB) or
    /// vm-image (one 20 GiB sparse disk image).
    #[arg(long, default_value_t = DatasetProfile::Published)]
    pub profile: DatasetProfile,
    /// Where to write the manifest [default: DIR.manifest.jsonl, beside DIR
    /// so it is never part of the tree].
    #[arg(long, value_name = "PATH")]
    pub manifest: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let params = DatasetParams {
        seed: args.seed,
        scale: args.scale,
        profile: args.profile,
    };
    params.validate()?;
    let manifest_path = match args.manifest {
        Some(p) => p,
        None => labrun_dataset::default_manifest_path(&args.out)?,
    };
    labrun_dataset::check_outside(&manifest_path, &args.out)?;

    println!(
        "dataset: {}, seed {}, scale {} -> {}",
        params.profile,
        params.seed,
        params.scale,
        args.out.display()
    );
    print_totals(&labrun_dataset::footprint(&params));

    let started = Instant::now();
    let mut report = ProgressLine::new("gen");
    // The manifest goes to its file as the tree is written: a million
    // files are never held (issue 31).
    let written =
        labrun_dataset::generate_to_file(&args.out, &params, &manifest_path, &mut |d, t| {
            report.update(d, t)
        })
        .context("generating the dataset")?;
    let secs = started.elapsed().as_secs_f64();
    let bytes = written.file_bytes;
    println!(
        "generated {} entries, {} in {:.1} s ({:.0} MB/s); manifest: {}",
        written.entries,
        gb(bytes),
        secs,
        bytes as f64 / 1e6 / secs.max(1e-9),
        manifest_path.display()
    );
    Ok(ExitCode::SUCCESS)
}

pub fn gb(bytes: u64) -> String {
    labrun_evidence::human::bytes(bytes as f64)
}

/// The totals by class, one per line, and what a sparse file leaves out.
pub fn print_totals(f: &Footprint) {
    let rows = f.rows.iter().map(|r| (r.class, r.files, r.bytes));
    for (name, files, bytes) in rows.chain([("total", f.files, f.bytes)]) {
        println!(
            "  {name:<27} {files:>9} files {:>12} ({bytes} bytes)",
            gb(bytes)
        );
    }
    if f.allocated_bytes != f.bytes {
        println!(
            "  {:<27} {:>15} {:>12} ({} bytes; the rest is holes)",
            "allocated on disk",
            "",
            gb(f.allocated_bytes),
            f.allocated_bytes
        );
    }
}

/// Progress on stderr: a line every 10% or every 10 seconds, whichever
/// comes first, so a log stays short and a slow run still shows life.
pub struct ProgressLine {
    what: &'static str,
    last_tenth: u64,
    last_at: Instant,
}

impl ProgressLine {
    pub fn new(what: &'static str) -> ProgressLine {
        ProgressLine {
            what,
            last_tenth: 0,
            last_at: Instant::now(),
        }
    }

    pub fn update(&mut self, done: u64, total: u64) {
        let tenth = (done * 10).checked_div(total).unwrap_or(10);
        if tenth > self.last_tenth || self.last_at.elapsed() >= Duration::from_secs(10) {
            self.last_tenth = tenth;
            self.last_at = Instant::now();
            let pct = (done as f64 * 100.0 / total.max(1) as f64).min(100.0);
            let _ = writeln!(
                std::io::stderr(),
                "{}: {pct:.0}% ({} of {})",
                self.what,
                gb(done),
                gb(total)
            );
        }
    }
}
