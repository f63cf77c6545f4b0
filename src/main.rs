//! `labrun`: benchmark backup tools in an isolated VM and keep the evidence.
//!
//! This file reads like a table of contents: parse the command line, turn it
//! into typed options, hand them to the command that does the work.

// First, so that its `safe_println!` and friends are in scope everywhere.
#[macro_use]
mod terminal;

mod bench;
mod bisect;
mod cli;
mod commands;
mod context;
mod exit;
mod folders;
mod host_check;
mod lab_vm;
mod real_tree;
mod store_location;
mod track;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let ctx = context::Context::from_cli(&cli.global);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("labrun: error: cannot start the async runtime: {e}");
            return ExitCode::from(exit::NOTHING_DONE);
        }
    };
    match runtime.block_on(commands::dispatch(&ctx, cli.command)) {
        Ok(code) => code,
        Err(e) => {
            // The whole chain, escaped once: every cause may quote a lab
            // file, a path or a remote machine's words.
            safe_eprintln!("labrun: error: {e:#}");
            ExitCode::from(exit::FAILED)
        }
    }
}
