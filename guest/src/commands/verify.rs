//! `labrun-agent verify`: hashes every file under a directory on all cores
//! and compares the tree with a manifest. Exit 0: it matches; 1: it does not
//! (differences printed); 2: it could not be checked.

use super::generate::gb;
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// The manifest the tree should match (from `gen` or `change`).
    #[arg(long, value_name = "PATH")]
    pub manifest: PathBuf,
    /// The tree to check.
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// Print the outcome as one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    // Both the manifest and the tree are read as they come: a tree of
    // millions of files is never held (issue 31).
    let outcome = labrun_dataset::verify_against_file(&args.dir, &args.manifest)
        .with_context(|| format!("checking {}", args.dir.display()))?;
    let secs = started.elapsed().as_secs_f64();

    if args.json {
        println!("{}", serde_json::to_string(&outcome)?);
    } else {
        let verdict = if outcome.passed { "pass" } else { "FAIL" };
        println!(
            "verify: {verdict}: {} files, {} checked in {secs:.1} s against {}",
            outcome.files_checked,
            gb(outcome.bytes_checked),
            args.manifest.display()
        );
        if !outcome.passed {
            println!(
                "  {} missing, {} extra, {} changed{}",
                outcome.missing,
                outcome.extra,
                outcome.changed,
                if outcome.missing + outcome.extra + outcome.changed
                    > outcome.first_differences.len() as u64
                {
                    format!(" (first {} named)", outcome.first_differences.len())
                } else {
                    String::new()
                }
            );
            for d in &outcome.first_differences {
                println!("  {d}");
            }
        }
    }
    Ok(if outcome.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
