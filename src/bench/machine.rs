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
    pub acceleration: Option<labrun_vm::Acceleration>,
    pub disk_cache: Option<String>,
    /// The VM disk's profile; None for an existing machine.
    pub disk_profile: Option<labrun_lab::DiskProfile>,
    /// The vCPUs' pinning as `up` applied it; None for an existing machine
    /// or a lab that asks for none.
    pub cpu_pinning: Option<labrun_vm::Pinned>,
    pub libvirt_version: Option<String>,
    pub qemu_version: Option<String>,
    /// The remote hypervisor's host the VM runs on (None: this host, or an
    /// SSH target): the environment is probed there.
    pub hypervisor: Option<labrun_vm::RemoteHost>,
    /// The name of the lab's `hosts:` entry the VM runs on (this host's
    /// included); None for a lab without a pool.
    pub pool_host: Option<String>,
    /// How the VM's first boot crashed, when `up` booted it again.
    pub boot_retry: Option<String>,
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

/// The SSH login a lab names (`target:`, a host's `ssh:`), its key file
/// relative to the lab file.
pub fn ssh_target(lab_file: &Path, t: &labrun_lab::TargetSpec) -> labrun_ssh::Target {
    labrun_ssh::Target {
        host: t.host.clone(),
        port: t.port,
        user: t.user.clone(),
        client_key: lab_relative(lab_file, &t.key),
        host_key: t.host_key.clone(),
        via: None,
    }
}

pub fn resolve(ctx: &crate::context::Context, lab: &Lab) -> anyhow::Result<Access> {
    match lab.machine() {
        Machine::Target(t) => Ok(Access {
            // The lab's own file, not `-f`: an attached run loads the lab it named.
            target: ssh_target(&lab.source.file, &t),
            remote_base: t.workdir.clone(),
            acceleration: None,
            disk_cache: None,
            disk_profile: None,
            cpu_pinning: None,
            libvirt_version: None,
            qemu_version: None,
            hypervisor: None,
            pool_host: None,
            boot_retry: None,
        }),
        Machine::Vm(_) => vm_access(ctx, lab),
    }
}

/// Where labrun works inside its own VMs: the image's root file system.
const VM_WORKDIR: &str = "/srv/labrun";

/// The VM `labrun up` brought up: its forwarded port and pinned host key
/// come from the state `up` recorded.
fn vm_access(ctx: &crate::context::Context, lab: &Lab) -> anyhow::Result<Access> {
    let cfg = crate::lab_vm::vm_of(lab, ctx)?;
    let dir = labrun_vm::LabDir::for_config(&ctx.state_root, &cfg);
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
    let cpu_pinning = state.as_ref().and_then(|s| s.cpu_pinning.clone());
    let hypervisor = state.as_ref().and_then(|s| s.remote.clone());
    let boot_retry = state.as_ref().and_then(|s| s.boot_retry.clone());
    let acceleration = state.map(|s| s.acceleration);
    Ok(Access {
        target,
        remote_base: VM_WORKDIR.to_string(),
        acceleration,
        disk_cache: Some(cfg.disk_cache.as_str().to_string()),
        disk_profile,
        cpu_pinning,
        // A remote hypervisor's versions are read there, with its machine.
        libvirt_version: hypervisor
            .is_none()
            .then(|| first_line_of("libvirtd", &["--version"]))
            .flatten(),
        qemu_version: hypervisor
            .is_none()
            .then(|| first_line_of("qemu-system-x86_64", &["--version"]))
            .flatten(),
        hypervisor,
        pool_host: crate::lab_vm::pick_host(lab, ctx.host.as_deref())?.map(|h| h.name.clone()),
        boot_retry,
    })
}

/// First line of a local command's output, if it runs.
pub fn first_line_of(program: &str, args: &[&str]) -> Option<String> {
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
