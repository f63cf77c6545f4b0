//! How `bench` reaches the machine under test: the lab's existing target, or
//! the VM that `labrun up` brought up. Either way the result is an SSH target
//! with a pinned host key, and what the evidence should say about it.

use labrun_lab::{Lab, Machine};
use std::path::Path;

pub struct Access {
    pub target: labrun_ssh::Target,
    /// Folder in the machine under which labrun keeps its agent and runs.
    pub remote_base: String,
    /// `kvm` or `tcg` for a VM; None for an existing machine.
    pub acceleration: Option<String>,
    pub disk_cache: Option<String>,
    /// The VM disk's profile; None for an existing machine.
    pub disk_profile: Option<labrun_lab::DiskProfile>,
    pub libvirt_version: Option<String>,
    pub qemu_version: Option<String>,
}

/// Resolves a path from a lab file relative to the lab file's folder.
pub fn lab_relative(lab_path: &Path, p: &Path) -> std::path::PathBuf {
    if p.is_absolute() {
        return p.to_path_buf();
    }
    lab_path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map_or_else(|| p.to_path_buf(), |d| d.join(p))
}

pub fn resolve(ctx: &crate::context::Context, lab: &Lab) -> anyhow::Result<Access> {
    match lab.machine() {
        Machine::Target(t) => Ok(Access {
            target: labrun_ssh::Target {
                host: t.host.clone(),
                port: t.port,
                user: t.user.clone(),
                // The lab's own file, not `-f`: an attached run loads the lab it named.
                client_key: lab_relative(&lab.source.file, &t.key),
                host_key: t.host_key.clone(),
                via: None,
            },
            remote_base: t.workdir.clone(),
            acceleration: None,
            disk_cache: None,
            disk_profile: None,
            libvirt_version: None,
            qemu_version: None,
        }),
        Machine::Vm(_) => vm_access(ctx, lab),
    }
}

/// Where labrun works inside its own VMs: the image's root file system.
const VM_WORKDIR: &str = "/srv/labrun";

/// The VM `labrun up` brought up: its forwarded port and pinned host key
/// come from the state `up` recorded.
fn vm_access(ctx: &crate::context::Context, lab: &Lab) -> anyhow::Result<Access> {
    let cfg = crate::lab_vm::vm_of(lab, &ctx.cache_dir)?;
    let dir = labrun_vm::LabDir::for_lab(&ctx.state_root, &cfg.lab_name, &cfg.lab_path);
    let state = dir
        .read_state()?
        .filter(|s| s.phase == labrun_vm::Phase::Ready);
    let Some(target) = state.as_ref().and_then(|s| s.ssh_target()) else {
        anyhow::bail!(
            "lab `{}` is not up: run `labrun up` first (or `labrun bench --up`)",
            lab.name
        );
    };
    // What the domain got at `up`, not what the lab says now.
    let disk_profile = state.as_ref().map(|s| s.disk_profile);
    let acceleration = state.map(|s| match s.acceleration {
        labrun_vm::Acceleration::Kvm => "kvm".to_string(),
        labrun_vm::Acceleration::Tcg => "tcg".to_string(),
    });
    Ok(Access {
        target,
        remote_base: VM_WORKDIR.to_string(),
        acceleration,
        disk_cache: Some(cfg.disk_cache.as_str().to_string()),
        disk_profile,
        libvirt_version: first_line_of("libvirtd", &["--version"]),
        qemu_version: first_line_of("qemu-system-x86_64", &["--version"]),
    })
}

/// First line of a local command's output, if it runs.
fn first_line_of(program: &str, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new(program)
        .args(args)
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
}
