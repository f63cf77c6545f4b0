//! `labrun down [--all]`: remove the lab's VM and its state, whatever state
//! it is in. Exit 0 when there was nothing to remove.

use crate::context::Context;
use crate::exit;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Every domain labrun marked and every lab folder under the state root
    /// (orphan clean-up), not just this lab's.
    #[arg(long)]
    all: bool,
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    // Hosts of the pool that could not be cleaned: said, and exit 1.
    let mut unreached = 0;
    let report = if args.all {
        // Orphan clean-up needs no lab file: the lab's URI when it loads,
        // else this user's default local hypervisor.
        let uri = match crate::lab_vm::config_for_teardown(ctx) {
            Ok(c) => c.uri,
            Err(_) => labrun_vm::access::local_uri(labrun_vm::access::SYSTEM_URI)?,
        };
        let mut report = labrun_vm::down_all(&uri, &ctx.state_root).await?;
        // And every remote hypervisor of the lab's pool, when it loads.
        if let Ok(lab) = labrun_lab::Lab::load(&ctx.lab_path) {
            for host in &lab.hosts {
                let Ok(cfg) = crate::lab_vm::vm_on(&lab, &ctx.cache_dir, Some(host)) else {
                    continue;
                };
                let Some(remote) = &cfg.remote else { continue };
                match labrun_vm::down_host(&cfg.uri, remote).await {
                    Ok(r) => {
                        report.removed.extend(r.removed);
                        report.left.extend(r.left);
                    }
                    Err(e) => {
                        unreached += 1;
                        report.left.push(format!("host `{}`: {e}", host.name));
                    }
                }
            }
        }
        report
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
    if unreached > 0 {
        safe_eprintln!(
            "labrun: {unreached} host(s) of the pool could not be cleaned (above): run `labrun down --all` again when they answer"
        );
        return Ok(ExitCode::from(exit::FAILED));
    }
    Ok(ExitCode::SUCCESS)
}

/// Removes this lab's VMs and state, whatever state they are in, on every
/// host it has one on (or the one `--host` names); also used by `labrun
/// bench --down`.
pub async fn take_down(ctx: &Context) -> anyhow::Result<labrun_vm::DownReport> {
    let mut report = labrun_vm::DownReport::default();
    let mut failed = Vec::new();
    // Every host is tried: one that does not answer keeps its state (to
    // retry) but does not stop the others' clean-up.
    for cfg in crate::lab_vm::configs_for_teardown(ctx)? {
        match labrun_vm::down(&cfg, &ctx.state_root).await {
            Ok(one) => {
                report.removed.extend(one.removed);
                report.left.extend(one.left);
            }
            Err(e) => failed.push(e),
        }
    }
    match failed.len() {
        0 => Ok(report),
        _ => {
            for r in &report.removed {
                safe_println!("removed: {r}");
            }
            let why: Vec<String> = failed.iter().map(ToString::to_string).collect();
            anyhow::bail!(
                "{}; run `labrun down` again when it answers",
                why.join("; ")
            )
        }
    }
}
