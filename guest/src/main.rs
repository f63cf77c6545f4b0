//! `labrun-agent`: the measuring half of labrun. Runs inside the guest (or on
//! any Linux host) and needs nothing but itself and the tools under test.

mod commands;
mod malloc_arenas;
mod run;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "labrun-agent", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate the seeded dataset and write its manifest.
    Gen(commands::generate::Args),
    /// Apply the deterministic 5% change and write the new manifest.
    Change(commands::change::Args),
    /// Hash a tree and compare it with a manifest.
    Verify(commands::verify::Args),
    /// Hash a tree into its manifest.
    Scan(commands::scan::Args),
    /// Run the timed cycles of a plan, writing evidence as it goes.
    Run(commands::run::Args),
    /// Unpack a dataset archive into a new folder, safely and bounded.
    Unpack(commands::unpack::Args),
}

fn main() -> ExitCode {
    malloc_arenas::limit();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Gen(a) => commands::generate::run(a),
        Command::Change(a) => commands::change::run(a),
        Command::Verify(a) => commands::verify::run(a),
        Command::Scan(a) => commands::scan::run(a),
        Command::Run(a) => commands::run::run(a),
        Command::Unpack(a) => commands::unpack::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("labrun-agent: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
