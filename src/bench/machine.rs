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
                client_key: lab_relative(&ctx.lab_path, &t.key),
                host_key: t.host_key.clone(),
            },
            remote_base: t.workdir.clone(),
            acceleration: None,
            disk_cache: None,
            libvirt_version: None,
            qemu_version: None,
        }),
        Machine::Vm(_) => vm_access(ctx, lab),
    }
}

/// The VM `labrun up` brought up. (Wired to the VM state once it lands.)
fn vm_access(_ctx: &crate::context::Context, lab: &Lab) -> anyhow::Result<Access> {
    anyhow::bail!(
        "lab `{}` runs in a VM, and `labrun bench` cannot reach VMs yet",
        lab.name
    )
}
