//! `labrun status [--json]`: every lab labrun has state for, with its
//! domain's state, port and resources.

use crate::context::Context;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// One JSON array on stdout instead of a table.
    #[arg(long)]
    json: bool,
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let root = ctx.state_root.clone();
    let labs = tokio::task::spawn_blocking(move || labrun_vm::status(&root)).await??;
    if args.json {
        // JSON for programs: escaped the JSON way, so it parses the same.
        let json = serde_json::to_string_pretty(&labs)?;
        println!("{}", labrun_evidence::printable::printable_json(&json));
        return Ok(ExitCode::SUCCESS);
    }
    if labs.is_empty() {
        safe_println!("nothing is up");
        return Ok(ExitCode::SUCCESS);
    }
    safe_println!(
        "{:<22} {:<12} {:<11} {:<8} {:<22} {:>6} {:>5} {:>7} {:<5} IMAGE",
        "DOMAIN",
        "HOST",
        "STATE",
        "PHASE",
        "SINCE",
        "PORT",
        "VCPU",
        "MEM MiB",
        "ACCEL"
    );
    for l in labs {
        let phase = serde_json::to_value(l.phase)?;
        safe_println!(
            "{:<22} {:<12} {:<11} {:<8} {:<22} {:>6} {:>5} {:>7} {:<5} {}",
            l.domain_name,
            l.host.as_deref().unwrap_or("this host"),
            l.state,
            phase.as_str().unwrap_or(""),
            l.since,
            l.ssh_port
                .map(|p| p.to_string())
                .unwrap_or_else(|| "-".into()),
            l.vcpus,
            l.memory_mib,
            l.acceleration.as_str(),
            &l.image_digest[..l.image_digest.len().min(12)],
        );
    }
    Ok(ExitCode::SUCCESS)
}
