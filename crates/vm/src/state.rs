//! Per-lab state: one folder under the state root holding `state.json`, the
//! keys, the overlay, the seed and the console log. Deleting the folder is
//! the whole file-side teardown.

use crate::accel::Acceleration;
use crate::error::VmError;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

pub const STATE_FILE: &str = "state.json";
const STATE_SCHEMA: u32 = 1;

/// The per-lab folder and the names of what lives in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabDir {
    pub path: PathBuf,
}

impl LabDir {
    /// `<state_root>/<lab>-<first 8 hex of SHA-256(absolute lab path)>`: two
    /// checkouts of one lab never share state.
    pub fn for_lab(state_root: &Path, lab_name: &str, lab_path: &Path) -> LabDir {
        let digest = hex::encode(Sha256::digest(lab_path.as_os_str().as_encoded_bytes()));
        LabDir {
            path: state_root.join(format!("{lab_name}-{}", &digest[..8])),
        }
    }

    /// The folder of `cfg`'s machine: the lab's own for this host, one
    /// beside it per remote hypervisor (`<lab>-<hex>@<host>`), so a lab can
    /// have a machine on each host of its pool at once.
    pub fn for_config(state_root: &Path, cfg: &crate::VmConfig) -> LabDir {
        let dir = LabDir::for_lab(state_root, &cfg.lab_name, &cfg.lab_path);
        match &cfg.remote {
            None => dir,
            Some(r) => {
                let mut name = dir.path.into_os_string();
                name.push(format!("@{}", r.name));
                LabDir { path: name.into() }
            }
        }
    }

    pub fn state_file(&self) -> PathBuf {
        self.path.join(STATE_FILE)
    }
    pub fn lock_file(&self) -> PathBuf {
        self.path.join("lock")
    }
    pub fn client_key(&self) -> PathBuf {
        self.path.join("client_ed25519")
    }
    pub fn host_key(&self) -> PathBuf {
        self.path.join("host_ed25519")
    }
    pub fn known_hosts(&self) -> PathBuf {
        self.path.join("known_hosts")
    }
    pub fn overlay(&self) -> PathBuf {
        self.path.join("overlay.qcow2")
    }
    pub fn seed(&self) -> PathBuf {
        self.path.join("seed.img")
    }
    pub fn console_log(&self) -> PathBuf {
        self.path.join("console.log")
    }
    pub fn domain_xml(&self) -> PathBuf {
        self.path.join("domain.xml")
    }
    pub fn binary_digests(&self) -> PathBuf {
        self.path.join("binary-sha256.txt")
    }

    /// Creates the folder (and the state root) with 0755, so the QEMU user
    /// can reach the overlay and seed libvirt hands it.
    pub fn create(&self) -> Result<(), VmError> {
        std::fs::create_dir_all(&self.path).map_err(VmError::io(&self.path))?;
        for d in [
            self.path.as_path(),
            self.path.parent().unwrap_or(&self.path),
        ] {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755))
                .map_err(VmError::io(d))?;
        }
        Ok(())
    }

    pub fn read_state(&self) -> Result<Option<VmState>, VmError> {
        read_state(&self.state_file())
    }

    pub fn write_state(&self, state: &VmState) -> Result<(), VmError> {
        let path = self.state_file();
        let json = serde_json::to_vec_pretty(state).map_err(|e| VmError::State {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        write_atomic(&path, &json, 0o644)
    }
}

/// How far `up` got: `down` must handle every one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Files (keys, overlay, seed) are being made; no domain yet.
    Creating,
    /// The domain was created; SSH not yet answering.
    Booting,
    /// SSH answered with the pinned key.
    Ready,
}

/// What `up` recorded. Written before anything is made, updated as it goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VmState {
    pub schema: u32,
    pub lab_name: String,
    pub lab_path: PathBuf,
    pub domain_name: String,
    pub uri: String,
    /// Identifies this `up` (also in the domain's metadata).
    pub up_id: String,
    /// RFC 3339, UTC.
    pub created: String,
    pub phase: Phase,
    pub ssh_port: Option<u16>,
    pub vcpus: u32,
    pub memory_mib: u64,
    pub acceleration: Acceleration,
    /// The main disk's throttle as the domain got it (absent in states
    /// written before disk profiles: those disks were unthrottled).
    #[serde(default)]
    pub disk_profile: crate::config::DiskProfile,
    /// The vCPUs' pinning as the domain got it, and why it is less than the
    /// lab asked (None: the lab asked for none, or a state from before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_pinning: Option<crate::config::Pinned>,
    pub image_digest: String,
    pub image_dir: PathBuf,
    /// The one host key the SSH client accepts (`ssh-ed25519 AAAA...`).
    pub host_key: Option<String>,
    pub client_key: PathBuf,
    /// The machine's shape as `up` made it ([`crate::VmConfig::shape`]):
    /// `bench` reboots when a variant asks for another. Empty in states
    /// written before it was recorded (never taken for a match).
    #[serde(default)]
    pub shape: String,
    /// The hypervisor's host when it is not this one: where the disks are
    /// and how the guest is reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<crate::remote::RemoteHost>,
    /// How the first boot crashed, when the guest's kernel crashed while
    /// booting and `up` booted it once more (None: the first boot came up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_retry: Option<String>,
}

impl VmState {
    pub fn schema() -> u32 {
        STATE_SCHEMA
    }

    /// Where the SSH client connects, with the pinned host key. None before
    /// the domain has a port and a host key.
    pub fn ssh_target(&self) -> Option<labrun_ssh::Target> {
        let guest = labrun_ssh::Target {
            host: "127.0.0.1".into(),
            port: self.ssh_port?,
            user: "root".into(),
            client_key: self.client_key.clone(),
            host_key: self.host_key.clone()?,
            via: None,
        };
        Some(match &self.remote {
            // QEMU forwards to the remote host's loopback: reached through
            // that host's sshd.
            Some(r) => r.guest_target(guest),
            None => guest,
        })
    }
}

pub fn read_state(path: &Path) -> Result<Option<VmState>, VmError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(VmError::io(path)(e)),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| VmError::State {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })
}

/// Writes `bytes` to a temporary file beside `path`, syncs it and renames it
/// over `path`: a reader (or a crash) sees the old file or the new one, never
/// half of one.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<(), VmError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.set_permissions(std::fs::Permissions::from_mode(mode))?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(VmError::io(path))
}

/// Every lab folder under the state root (those with a state file or a lock,
/// i.e. made by labrun).
pub fn lab_dirs(state_root: &Path) -> Result<Vec<LabDir>, VmError> {
    let entries = match std::fs::read_dir(state_root) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(VmError::io(state_root)(e)),
    };
    let mut dirs: Vec<LabDir> = entries
        .filter_map(|e| e.ok())
        .map(|e| LabDir { path: e.path() })
        .filter(|d| d.path.is_dir() && (d.state_file().exists() || d.lock_file().exists()))
        .collect();
    dirs.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(dirs)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample(dir: &LabDir) -> VmState {
        VmState {
            schema: STATE_SCHEMA,
            lab_name: "t".into(),
            lab_path: "/srv/lab.yaml".into(),
            domain_name: "labrun-t".into(),
            uri: "qemu:///system".into(),
            up_id: "abc".into(),
            created: "2026-11-29T00:00:00Z".into(),
            phase: Phase::Creating,
            ssh_port: None,
            vcpus: 4,
            memory_mib: 3072,
            disk_profile: crate::config::DiskProfile::Hdd,
            cpu_pinning: None,
            acceleration: Acceleration::Tcg,
            image_digest: "d".into(),
            image_dir: "/i".into(),
            host_key: None,
            client_key: dir.client_key(),
            shape: String::new(),
            remote: None,
            boot_retry: None,
        }
    }

    #[test]
    fn a_remote_hypervisors_vm_has_a_folder_of_its_own_and_is_reached_through_it() {
        let mut cfg = crate::VmConfig::new("t", "/srv/lab.yaml");
        let here = LabDir::for_config(Path::new("/s"), &cfg);
        let jump = labrun_ssh::Target {
            host: "10.0.0.2".into(),
            port: 22,
            user: "bench".into(),
            client_key: "/k".into(),
            host_key: "ssh-ed25519 AAAA".into(),
            via: None,
        };
        cfg.remote = Some(crate::RemoteHost {
            name: "rack2".into(),
            ssh: jump.clone(),
            dir: "/var/tmp/labrun".into(),
        });
        let there = LabDir::for_config(Path::new("/s"), &cfg);
        assert_eq!(
            there.path.to_string_lossy(),
            format!("{}@rack2", here.path.display())
        );
        let mut s = sample(&there);
        s.remote = cfg.remote.clone();
        s.ssh_port = Some(40000);
        s.host_key = Some("ssh-ed25519 BBBB".into());
        let t = s.ssh_target().unwrap();
        assert_eq!((t.host.as_str(), t.port), ("127.0.0.1", 40000));
        assert_eq!(t.via.as_deref(), Some(&jump));
        // The state file keeps the host, and reads back the same.
        let json = serde_json::to_string(&s).unwrap();
        let back: VmState = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        // A state written before remote hosts reads as local.
        let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
        v.as_object_mut().unwrap().remove("remote");
        let old: VmState = serde_json::from_value(v).unwrap();
        assert!(old.remote.is_none() && old.ssh_target().unwrap().via.is_none());
    }

    #[test]
    fn lab_dir_name_depends_on_the_absolute_path() {
        let a = LabDir::for_lab(Path::new("/s"), "x", Path::new("/a/lab.yaml"));
        let b = LabDir::for_lab(Path::new("/s"), "x", Path::new("/b/lab.yaml"));
        assert_ne!(a, b);
        assert!(
            a.path
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("x-")
        );
        assert_eq!(
            a,
            LabDir::for_lab(Path::new("/s"), "x", Path::new("/a/lab.yaml"))
        );
    }

    #[test]
    fn a_boot_retry_is_kept_and_older_states_have_none() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = LabDir::for_lab(tmp.path(), "t", Path::new("/srv/lab.yaml"));
        dir.create().unwrap();
        let mut s = sample(&dir);
        dir.write_state(&s).unwrap();
        let text = std::fs::read_to_string(dir.state_file()).unwrap();
        assert!(!text.contains("boot_retry"), "{text}");
        assert_eq!(dir.read_state().unwrap().unwrap().boot_retry, None);
        s.boot_retry = Some("crashed 1.8s into its boot (Kernel panic - not syncing)".into());
        dir.write_state(&s).unwrap();
        assert_eq!(dir.read_state().unwrap().unwrap(), s);
    }

    #[test]
    fn state_round_trips_and_is_written_atomically() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = LabDir::for_lab(tmp.path(), "t", Path::new("/srv/lab.yaml"));
        dir.create().unwrap();
        assert_eq!(dir.read_state().unwrap(), None);
        let mut s = sample(&dir);
        dir.write_state(&s).unwrap();
        assert_eq!(dir.read_state().unwrap().unwrap(), s);
        assert!(s.ssh_target().is_none());
        s.phase = Phase::Ready;
        s.ssh_port = Some(2222);
        s.host_key = Some("ssh-ed25519 AAAA".into());
        dir.write_state(&s).unwrap();
        assert_eq!(
            dir.read_state()
                .unwrap()
                .unwrap()
                .ssh_target()
                .unwrap()
                .port,
            2222
        );
        // No temporary file is left beside it.
        let names: Vec<_> = std::fs::read_dir(&dir.path)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["state.json"]);
        assert_eq!(
            std::fs::metadata(&dir.path).unwrap().permissions().mode() & 0o777,
            0o755
        );
        assert_eq!(lab_dirs(tmp.path()).unwrap(), vec![dir]);
    }

    #[test]
    fn a_torn_state_file_is_an_error_that_names_the_fix() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("state.json");
        std::fs::write(&p, "{\"schema\": 1, \"lab_na").unwrap();
        let err = read_state(&p).unwrap_err().to_string();
        assert!(err.contains("labrun down"), "{err}");
    }

    #[test]
    fn write_atomic_replaces_and_sets_mode() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("f");
        write_atomic(&p, b"one", 0o600).unwrap();
        write_atomic(&p, b"two", 0o644).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o644
        );
    }
}
