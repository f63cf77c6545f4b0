//! `down`: remove a lab's domain and every file of its state, whatever state
//! it is in (running, paused, crashed, half-made by a killed `up`, gone).
//! The domain is found by name and by labrun's metadata, the files by the
//! lab's state folder; each is removed if present.

use crate::config::{VmConfig, domain_name};
use crate::error::VmError;
use crate::hypervisor::Hypervisor;
use crate::lock::LabLock;
use crate::remote::{HostShell, RemoteHost};
use crate::state::{self, LabDir};
use std::path::Path;

/// What `down` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DownReport {
    /// Human-readable, one per thing removed.
    pub removed: Vec<String>,
    /// Things deliberately left (they belong to another lab).
    pub left: Vec<String>,
}

/// Takes the VM of `cfg` away (on its host: this one or `cfg.remote`). What
/// `up` recorded wins over `cfg` (the lab file may have changed since).
pub async fn down(cfg: &VmConfig, state_root: &Path) -> Result<DownReport, VmError> {
    let (lab_name, lab_path) = (cfg.lab_name.as_str(), cfg.lab_path.as_path());
    let dir = LabDir::for_config(state_root, cfg);
    let name = domain_name(lab_name);
    // A torn state file must not stop the clean-up.
    let recorded = dir.read_state().ok().flatten();
    let uri = recorded
        .as_ref()
        .map(|s| s.uri.as_str())
        .unwrap_or(&cfg.uri);
    let remote = recorded
        .as_ref()
        .and_then(|s| s.remote.clone())
        .or_else(|| cfg.remote.clone());
    let hv = Hypervisor::open(uri)?;
    let mut report = DownReport::default();
    let _lock = if dir.path.exists() {
        Some(LabLock::acquire(&dir.lock_file(), lab_name, "labrun down")?)
    } else {
        None
    };
    if let Some(d) = hv.find(&name)?
        && let Some(m) = d.metadata.as_ref().filter(|m| m.lab_path != lab_path)
    {
        report.left.push(format!(
            "domain {name}: it belongs to the lab at {}",
            m.lab_path.display()
        ));
        report.removed.extend(remove_files(&dir, false)?);
        return Ok(report);
    }
    let shell = match &remote {
        Some(r) => Some(r.connect().await?),
        None => None,
    };
    report.removed = teardown(&hv, &dir, &name, false, shell.as_ref()).await?;
    Ok(report)
}

/// Every domain carrying labrun's metadata and every lab folder under
/// `state_root` (and the folders the domains' metadata name).
pub async fn down_all(uri: &str, state_root: &Path) -> Result<DownReport, VmError> {
    let hv = Hypervisor::open(uri)?;
    let mut report = DownReport::default();
    for d in hv.labrun_domains()? {
        let Some(m) = d.metadata.clone() else {
            report.left.push(format!(
                "domain {}: named like labrun's but without its metadata",
                d.name
            ));
            continue;
        };
        if let Some(gone) = hv.remove(&d.name)? {
            report
                .removed
                .push(format!("domain {} ({})", gone.name, gone.state));
        }
        let dir = LabDir { path: m.state_dir };
        if dir.state_file().exists() || dir.lock_file().exists() {
            let _lock = LabLock::acquire(&dir.lock_file(), &m.lab_name, "labrun down --all")?;
            report.removed.extend(remove_files(&dir, false)?);
        }
    }
    for dir in state::lab_dirs(state_root)? {
        let lab = dir
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let _lock = LabLock::acquire(&dir.lock_file(), &lab, "labrun down --all")?;
        let recorded = dir.read_state().ok().flatten();
        if let Some(s) = &recorded
            && s.uri != uri
            && let Ok(other) = Hypervisor::open(&s.uri)
            && let Some(gone) = other.remove(&s.domain_name)?
        {
            report
                .removed
                .push(format!("domain {} ({})", gone.name, gone.state));
        }
        if let Some(r) = recorded.and_then(|s| s.remote) {
            // The host's copy of the disks goes first: without the state
            // folder nothing would say where it is.
            let shell = r.connect().await?;
            let there = r.lab_dir(&dir.path);
            if shell.remove_lab_dir(&there).await? {
                report.removed.push(format!("disks {there} on {}", r.name));
            }
            shell.close().await;
        }
        report.removed.extend(remove_files(&dir, false)?);
    }
    Ok(report)
}

/// `down --all` on a remote hypervisor of a lab's pool: every domain there
/// carrying labrun's metadata, and every lab's disks in labrun's folder on
/// the host (its uploaded base images stay, as this host's cache does).
pub async fn down_host(uri: &str, host: &RemoteHost) -> Result<DownReport, VmError> {
    let hv = Hypervisor::open(uri)?;
    let mut report = DownReport::default();
    for d in hv.labrun_domains()? {
        if d.metadata.is_none() {
            report.left.push(format!(
                "domain {} on {}: named like labrun's but without its metadata",
                d.name, host.name
            ));
            continue;
        }
        if let Some(gone) = hv.remove(&d.name)? {
            report.removed.push(format!(
                "domain {} ({}) on {}",
                gone.name, gone.state, host.name
            ));
        }
    }
    let shell = host.connect().await?;
    let labs = format!("{}/labs", host.dir.trim_end_matches('/'));
    for dir in shell.list_dirs(&labs).await? {
        let there = format!("{labs}/{dir}");
        if shell.remove_lab_dir(&there).await? {
            report
                .removed
                .push(format!("disks {there} on {}", host.name));
        }
    }
    shell.close().await;
    Ok(report)
}

/// Removes the domain `name` and the lab folder's files. With
/// `keep_identity`, keeps the folder, its lock and the client key (used by
/// `up` to clear leftovers while it holds the lock).
/// The lab's disks on a remote hypervisor's host go too (`shell`).
pub(crate) async fn teardown(
    hv: &Hypervisor,
    dir: &LabDir,
    name: &str,
    keep_identity: bool,
    shell: Option<&HostShell>,
) -> Result<Vec<String>, VmError> {
    // The domain first: QEMU holds the disks open.
    let mut removed = Vec::new();
    if let Some(d) = hv.remove(name)? {
        let on = shell.map_or(String::new(), |sh| format!(" on {}", sh.host().name));
        removed.push(format!("domain {} ({}){on}", d.name, d.state));
    }
    if let Some(sh) = shell {
        let there = sh.host().lab_dir(&dir.path);
        if sh.remove_lab_dir(&there).await? {
            removed.push(format!("disks {there} on {}", sh.host().name));
        }
    }
    removed.extend(remove_files(dir, keep_identity)?);
    Ok(removed)
}

fn remove_files(dir: &LabDir, keep_identity: bool) -> Result<Vec<String>, VmError> {
    let mut removed = Vec::new();
    if !dir.path.exists() {
        return Ok(removed);
    }
    let described = [
        (dir.overlay(), "overlay"),
        (dir.seed(), "seed disk"),
        (dir.console_log(), "console log"),
        (dir.state_file(), "state file"),
    ];
    if keep_identity {
        for (p, what) in described {
            if p.exists() {
                std::fs::remove_file(&p).map_err(VmError::io(&p))?;
                removed.push(format!("{what} {}", p.display()));
            }
        }
        for p in [
            dir.host_key(),
            dir.host_key().with_extension("pub"),
            dir.known_hosts(),
            dir.domain_xml(),
        ] {
            let _ = std::fs::remove_file(p);
        }
        return Ok(removed);
    }
    for (p, what) in described {
        if p.exists() {
            removed.push(format!("{what} {}", p.display()));
        }
    }
    std::fs::remove_dir_all(&dir.path).map_err(VmError::io(&dir.path))?;
    removed.push(format!(
        "state folder {} (keys included)",
        dir.path.display()
    ));
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_teardown_keeps_identity_only_when_asked() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = LabDir::for_lab(tmp.path(), "t", Path::new("/srv/lab.yaml"));
        dir.create().unwrap();
        for p in [
            dir.overlay(),
            dir.seed(),
            dir.state_file(),
            dir.client_key(),
            dir.lock_file(),
            dir.known_hosts(),
        ] {
            std::fs::write(p, "x").unwrap();
        }
        let r = remove_files(&dir, true).unwrap();
        assert_eq!(r.len(), 3, "{r:?}");
        assert!(dir.client_key().exists() && dir.lock_file().exists());
        assert!(!dir.overlay().exists() && !dir.known_hosts().exists());
        let r = remove_files(&dir, false).unwrap();
        assert!(r.last().unwrap().contains("state folder"));
        assert!(!dir.path.exists());
        assert!(remove_files(&dir, false).unwrap().is_empty());
    }
}
