//! `status`: what labrun has up, from the state folders and libvirt.

use crate::accel::Acceleration;
use crate::error::VmError;
use crate::hypervisor::Hypervisor;
use crate::state::{self, Phase};
use serde::Serialize;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LabStatus {
    pub lab_name: String,
    pub lab_path: PathBuf,
    pub domain_name: String,
    /// `running`, `stopped` (domain exists, not running) or `absent`.
    pub state: String,
    /// How far `up` got.
    pub phase: Phase,
    /// When `up` created it (RFC 3339).
    pub since: String,
    pub ssh_port: Option<u16>,
    pub vcpus: u32,
    pub memory_mib: u64,
    pub acceleration: Acceleration,
    pub image_digest: String,
    pub state_dir: PathBuf,
    /// The remote hypervisor's host (its name in the lab's `hosts:`); None:
    /// this host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// One entry per lab folder with a readable state file under `state_root`.
pub fn status(state_root: &Path) -> Result<Vec<LabStatus>, VmError> {
    let mut out = Vec::new();
    let mut conns: Vec<(String, Option<Hypervisor>)> = Vec::new();
    for dir in state::lab_dirs(state_root)? {
        let Some(s) = dir.read_state()? else {
            continue;
        };
        if !conns.iter().any(|(u, _)| *u == s.uri) {
            conns.push((s.uri.clone(), Hypervisor::open(&s.uri).ok()));
        }
        let hv = conns
            .iter()
            .find(|(u, _)| *u == s.uri)
            .and_then(|(_, h)| h.as_ref());
        let domain = match hv {
            Some(h) => h.find(&s.domain_name)?,
            // A remote host may be away; the others are still listed.
            None if s.remote.is_some() => {
                out.push(entry(s, "unreachable", dir.path));
                continue;
            }
            None => {
                return Err(VmError::Libvirtd {
                    uri: s.uri.clone(),
                    reason: "connection failed".into(),
                });
            }
        };
        let state = match domain {
            Some(d) if d.active => "running",
            Some(_) => "stopped",
            None => "absent",
        };
        out.push(entry(s, state, dir.path));
    }
    Ok(out)
}

fn entry(s: crate::state::VmState, state: &str, state_dir: PathBuf) -> LabStatus {
    LabStatus {
        host: s.remote.map(|r| r.name),
        lab_name: s.lab_name,
        lab_path: s.lab_path,
        domain_name: s.domain_name,
        state: state.into(),
        phase: s.phase,
        since: s.created,
        ssh_port: s.ssh_port,
        vcpus: s.vcpus,
        memory_mib: s.memory_mib,
        acceleration: s.acceleration,
        image_digest: s.image_digest,
        state_dir,
    }
}
