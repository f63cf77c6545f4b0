//! `labrun-agent change`: applies the deterministic 5% change to a tree made
//! by `gen`, and writes the tree's new manifest.

use super::generate::{ProgressLine, gb};
use anyhow::Context;
use labrun_dataset::{DatasetParams, DatasetProfile};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// The tree to change, as `gen` made it.
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// The seed the tree was generated with.
    #[arg(long, default_value_t = DatasetParams::DEFAULT_SEED)]
    pub seed: u64,
    /// The scale the tree was generated with.
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// The profile the tree was generated with; each has its own change
    /// (published: 5% of files and regions rewritten; tiny-files: 5%
    /// rewritten, a few added and removed; media: 5% of the bytes added as
    /// new photos; vm-image: 5% of the written blocks overwritten in place).
    #[arg(long, default_value_t = DatasetProfile::Published)]
    pub profile: DatasetProfile,
    /// Seed of the change: which files and regions, and their new bytes
    /// [default: seed + 1, as in a plan that names none].
    #[arg(long)]
    pub change_seed: Option<u64>,
    /// Where to write the changed tree's manifest [default:
    /// DIR.manifest.jsonl, beside DIR, replacing the generated one since it
    /// no longer describes the tree].
    #[arg(long, value_name = "PATH")]
    pub manifest: Option<PathBuf>,
    /// The tree's manifest before the change (e.g. the one `gen` wrote):
    /// only the changed files are then re-hashed. Without it the whole tree
    /// is rescanned.
    #[arg(long, value_name = "PATH")]
    pub base_manifest: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let params = DatasetParams {
        seed: args.seed,
        scale: args.scale,
        profile: args.profile,
    };
    params.validate()?;
    let change_seed = args.change_seed.unwrap_or(args.seed.wrapping_add(1));
    let manifest_path = match args.manifest {
        Some(p) => p,
        None => labrun_dataset::default_manifest_path(&args.dir)?,
    };
    labrun_dataset::check_outside(&manifest_path, &args.dir)?;

    let touched = labrun_dataset::change_extent(&params, change_seed);
    println!(
        "change: {}, seed {}, scale {}, change seed {change_seed}: rewriting {} files, \
         overwriting {} regions ({}) in {}",
        params.profile,
        params.seed,
        params.scale,
        touched.files_rewritten,
        touched.regions,
        gb(touched.region_bytes),
        args.dir.display()
    );

    let started = Instant::now();
    let mut report = ProgressLine::new("change");
    let mut progress = |d, t| report.update(d, t);
    match &args.base_manifest {
        // Both manifests as files, read and written as they come: a tree of
        // millions of files is never held (issue 31).
        Some(base) => labrun_dataset::apply_change_from_file(
            &args.dir,
            &params,
            change_seed,
            base,
            &manifest_path,
            &mut progress,
        )
        .context("applying the change")?,
        // The new manifest goes to its file as the tree is rescanned.
        None => labrun_dataset::apply_change_to_file(
            &args.dir,
            &params,
            change_seed,
            &manifest_path,
            &mut progress,
        )
        .map(drop)
        .context("applying the change")?,
    }
    println!(
        "changed in {:.1} s; manifest: {}",
        started.elapsed().as_secs_f64(),
        manifest_path.display()
    );
    Ok(ExitCode::SUCCESS)
}
