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
    let report = if args.all {
        // Orphan clean-up needs no lab file: the lab's URI when it loads,
        // else the default system hypervisor.
        let uri = crate::lab_vm::config_for_teardown(ctx)
            .map_or_else(|_| "qemu:///system".to_string(), |c| c.uri);
        labrun_vm::down_all(&uri, &ctx.state_root).await?
    } else {
        take_down(ctx).await?
    };
    for l in &report.left {
        safe_println!("left: {l}");
    }
    if report.removed.is_empty() {
        safe_println!("nothing to remove");
    } else {
        for r in &report.removed {
            safe_println!("removed: {r}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Removes this lab's VMs and state, whatever state they are in, on every
/// host it has one on (or the one `--host` names); also used by `labrun
/// bench --down`.
pub async fn take_down(ctx: &Context) -> anyhow::Result<labrun_vm::DownReport> {
    let mut report = labrun_vm::DownReport::default();
    for cfg in crate::lab_vm::configs_for_teardown(ctx)? {
        let one = labrun_vm::down(&cfg, &ctx.state_root).await?;
        report.removed.extend(one.removed);
        report.left.extend(one.left);
    }
    Ok(report)
}
