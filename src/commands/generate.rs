//! `labrun generate man DIR` and `labrun generate completions SHELL DIR`
//! (hidden): the man pages and shell completions `make install` ships, made
//! from the same clap definition the binary parses, so they never drift.

use crate::cli::Cli;
use anyhow::Context as _;
use clap::CommandFactory;
use clap_complete::Shell;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(clap::Subcommand)]
enum What {
    /// labrun.1 and one page per subcommand (labrun-bench.1, ...).
    Man { out_dir: PathBuf },
    /// The completion script for one shell.
    Completions { shell: Shell, out_dir: PathBuf },
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let out_dir = match &args.what {
        What::Man { out_dir } | What::Completions { out_dir, .. } => out_dir,
    };
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let written = match args.what {
        What::Man { out_dir } => man_pages(&out_dir)?,
        What::Completions { shell, out_dir } => {
            vec![
                clap_complete::generate_to(shell, &mut public_command(), "labrun", &out_dir)
                    .with_context(|| format!("writing the {shell} completions"))?,
            ]
        }
    };
    for path in written {
        safe_println!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The command line without its hidden subcommands (this one): clap's
/// completion scripts would otherwise offer them, and clap has no way to
/// take a subcommand out, so the command is made again around the rest.
fn public_command() -> clap::Command {
    let full = Cli::command();
    let mut public = clap::Command::new("labrun")
        .version(env!("LABRUN_LONG_VERSION"))
        .propagate_version(true)
        .subcommand_required(full.is_subcommand_required_set())
        .args(full.get_arguments().cloned())
        .subcommands(full.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
    if let Some(about) = full.get_about() {
        public = public.about(about.clone());
    }
    public
}

fn man_pages(out_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    clap_mangen::generate_to(public_command(), out_dir)
        .with_context(|| format!("writing man pages into {}", out_dir.display()))?;
    let mut written: Vec<PathBuf> = std::fs::read_dir(out_dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "1"))
        .collect();
    written.sort();
    Ok(written)
}
