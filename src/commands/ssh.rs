//! `labrun ssh [-- COMMAND...]`: an interactive shell through the system
//! `ssh` client with the pinned key, or one command through labrun's client,
//! streamed, exiting with its status.

use crate::context::Context;
use anyhow::{Context as _, bail};
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    /// The command to run in the guest (after `--`); none for a shell.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<String>,
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let cfg = crate::lab_vm::config_for_teardown(ctx)?;
    let dir = labrun_vm::LabDir::for_config(&ctx.state_root, &cfg);
    let Some(state) = dir.read_state()? else {
        bail!("{} is not up: run `labrun up` first", cfg.domain_name());
    };
    let Some(target) = state.ssh_target() else {
        bail!(
            "{} has no SSH port yet (its `up` did not finish): run `labrun down` and `labrun up`",
            state.domain_name
        );
    };
    if args.command.is_empty() {
        return interactive(&dir, &state.domain_name, &target);
    }
    let session = labrun_ssh::connect(&target, Duration::from_secs(15))
        .await
        .with_context(|| format!("connecting to {}", state.domain_name))?;
    let command = args.command.join(" ");
    let mut out = std::io::stdout();
    let mut err = std::io::stderr();
    let code = session
        .exec_streaming(
            &command,
            &mut |b: &[u8]| {
                let _ = out.write_all(b);
                let _ = out.flush();
            },
            &mut |b: &[u8]| {
                let _ = err.write_all(b);
                let _ = err.flush();
            },
        )
        .await?;
    let _ = session.close().await;
    // No status (killed by a signal): report failure like a shell would.
    Ok(ExitCode::from(
        code.map(|c| c.min(255) as u8).unwrap_or(255),
    ))
}

/// Replaces this process with `ssh`, pinned to the injected host key.
fn interactive(
    dir: &labrun_vm::LabDir,
    alias: &str,
    target: &labrun_ssh::Target,
) -> anyhow::Result<ExitCode> {
    use std::os::unix::process::CommandExt;
    let mut ssh = std::process::Command::new("ssh");
    if let Some(jump) = &target.via {
        ssh.arg("-o").arg(proxy_command(dir, jump)?);
    }
    let err = ssh
        .args(["-F", "/dev/null", "-o", "StrictHostKeyChecking=yes", "-o"])
        .arg(format!(
            "UserKnownHostsFile={}",
            dir.known_hosts().display()
        ))
        .args(["-o", "GlobalKnownHostsFile=/dev/null", "-o"])
        .arg(format!("HostKeyAlias={alias}"))
        .args(["-o", "IdentitiesOnly=yes", "-i"])
        .arg(&target.client_key)
        .arg("-p")
        .arg(target.port.to_string())
        .arg(format!("{}@{}", target.user, target.host))
        .exec();
    bail!(
        "cannot run the system `ssh` client: {err} (install it: `apt-get install openssh-client`)"
    )
}

/// A VM on a remote hypervisor: `ssh -W` through the host's sshd, whose key
/// is pinned in a known_hosts file of the lab's state folder.
fn proxy_command(dir: &labrun_vm::LabDir, jump: &labrun_ssh::Target) -> anyhow::Result<String> {
    let known = dir.path.join("hypervisor_known_hosts");
    std::fs::write(&known, format!("hypervisor {}\n", jump.host_key))
        .with_context(|| format!("writing {}", known.display()))?;
    let q = |p: &std::path::Path| labrun_ssh::shell_quote(&p.to_string_lossy());
    Ok(format!(
        "ProxyCommand=ssh -F /dev/null -o StrictHostKeyChecking=yes -o UserKnownHostsFile={} -o GlobalKnownHostsFile=/dev/null -o HostKeyAlias=hypervisor -o IdentitiesOnly=yes -i {} -p {} -W %h:%p {}",
        q(&known),
        q(&jump.client_key),
        jump.port,
        labrun_ssh::shell_quote(&format!("{}@{}", jump.user, jump.host)),
    ))
}
