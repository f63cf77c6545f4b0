//! `labrun pack RUN_DIR [-o FILE]`: the run folder as one deterministic
//! `.tar.gz` with a SHA-256 manifest inside; prints the manifest's digest,
//! the run's address. `report` and `compare` open the file as the folder.

use crate::context::Context;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The run folder, e.g. `results/default-20261129T1851Z-3fa2c1` (the one
    /// holding `raw/`).
    pub run_dir: PathBuf,
    /// The pack to write (default: RUN_DIR.tar.gz beside the folder); the
    /// same run always packs to the same bytes.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub async fn run(_ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let output = args.output.unwrap_or_else(|| default_output(&args.run_dir));
    let packed = labrun_report::pack::write(&args.run_dir, &output)?;
    safe_println!(
        "packed {} files ({} bytes) of run {} into {}",
        packed.files,
        packed.bytes,
        packed.run,
        packed.path.display()
    );
    safe_println!("manifest sha256:{}", packed.manifest_sha256);
    Ok(ExitCode::SUCCESS)
}

/// `results/<run-id>` -> `results/<run-id>.tar.gz`.
fn default_output(run_dir: &Path) -> PathBuf {
    let dir = run_dir.components().as_path();
    let named = match dir.file_name() {
        Some(_) => dir.to_path_buf(),
        // `.` or `..`: the folder's own name.
        None => dir.canonicalize().unwrap_or_else(|_| PathBuf::from("run")),
    };
    let mut name = named.file_name().unwrap_or_default().to_os_string();
    name.push(".tar.gz");
    named.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_pack_sits_beside_the_folder() {
        assert_eq!(
            default_output("results/run-1/".as_ref()),
            PathBuf::from("results/run-1.tar.gz")
        );
        assert_eq!(
            default_output("run-1".as_ref()),
            PathBuf::from("run-1.tar.gz")
        );
    }
}
