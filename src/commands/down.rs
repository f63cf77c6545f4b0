//! `labrun down [--all]`: remove the lab's VM and its state, whatever state
//! it is in. Exit 0 when there was nothing to remove.

use crate::context::Context;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Every domain labrun marked and every lab folder under the state root
    /// (orphan clean-up), not just this lab's.
    #[arg(long)]
    all: bool,
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let cfg = super::up::vm_config(ctx)?;
    let state_root = ctx.state_root.clone();
    let report = tokio::task::spawn_blocking(move || {
        if args.all {
            labrun_vm::down_all(&cfg.uri, &state_root)
        } else {
            labrun_vm::down(&cfg.uri, &state_root, &cfg.lab_name, &cfg.lab_path)
        }
    })
    .await??;
    for l in &report.left {
        println!("left: {l}");
    }
    if report.removed.is_empty() {
        println!("nothing to remove");
    } else {
        for r in &report.removed {
            println!("removed: {r}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
