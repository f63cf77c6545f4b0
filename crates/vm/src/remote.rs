//! A hypervisor on another host. libvirt is reached by its remote URI
//! (`qemu+libssh://user@host/session?...`, `qemu+ssh://...`); the files a
//! domain needs (the base image, the overlay, the seed, the console log) live
//! in a folder of labrun's on that host and are moved over SSH to the host's
//! own sshd, its host key pinned; the guest's forwarded port listens on that
//! host's loopback and is reached through the same sshd (direct-tcpip). Nothing
//! listens on any network interface.
//!
//! On the host, under [`RemoteHost::dir`]:
//! - `images/<digest>/`: a base image, uploaded once and checked by SHA-256;
//!   its manifest is written last, so a folder without it is incomplete.
//! - `labs/<lab folder>/`: one lab's overlay, seed and console log; removing
//!   it is the whole file-side teardown there.

use crate::accel::AccelProbe;
use crate::error::VmError;
use labrun_ssh::{Session, Target, shell_quote as q};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long connecting to a hypervisor host may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// A hypervisor host other than this one, as a lab's `hosts:` names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteHost {
    /// The pool's name for the host: in state folders, progress and evidence.
    pub name: String,
    /// SSH to the host itself (not to a guest), its host key pinned.
    pub ssh: Target,
    /// labrun's folder on the host (absolute).
    pub dir: String,
}

impl RemoteHost {
    fn images_dir(&self) -> String {
        format!("{}/images", self.dir.trim_end_matches('/'))
    }

    /// The folder of one lab's disks on the host, named like its local state
    /// folder.
    pub fn lab_dir(&self, local: &Path) -> String {
        let name = local
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "lab".into());
        format!("{}/labs/{name}", self.dir.trim_end_matches('/'))
    }

    /// An SSH target reached through this host: the guest's port forwarded
    /// to the host's loopback.
    pub fn guest_target(&self, guest: Target) -> Target {
        guest.through(self.ssh.clone())
    }

    /// Connects to the host's sshd.
    pub async fn connect(&self) -> Result<HostShell, VmError> {
        let session = labrun_ssh::connect(&self.ssh, CONNECT_TIMEOUT)
            .await
            .map_err(|e| self.unreachable(e.to_string()))?;
        Ok(HostShell {
            host: self.clone(),
            session,
        })
    }

    fn unreachable(&self, reason: String) -> VmError {
        VmError::RemoteHost {
            host: self.name.clone(),
            login: self.ssh.label(),
            reason,
        }
    }
}

/// Names one upload's folder apart from any other's, on this host or
/// another labrun's.
fn upload_nonce() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{}-{nanos:09}", std::process::id())
}

/// An open SSH connection to a hypervisor host, with the few things labrun
/// does there.
pub struct HostShell {
    host: RemoteHost,
    session: Session,
}

/// A file of a base image, with where it came from on this host.
pub struct ImageFile {
    pub local: PathBuf,
    /// The name it keeps in the host's image folder.
    pub name: String,
}

impl HostShell {
    pub fn host(&self) -> &RemoteHost {
        &self.host
    }

    /// Runs a POSIX shell script; its stdout, or an error naming `what`.
    async fn run(&self, what: &str, script: &str) -> Result<String, VmError> {
        let out = self
            .session
            .exec(script)
            .await
            .map_err(|e| self.host.unreachable(format!("{what}: {e}")))?;
        if !out.success() {
            return Err(VmError::RemoteCommand {
                host: self.host.name.clone(),
                what: what.to_string(),
                reason: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Makes sure the image `key` (a recipe digest or a cloud image's
    /// SHA-256) is complete on the host, uploading and checking its files
    /// when it is not. Returns the image's folder there.
    pub async fn place_image(
        &self,
        key: &str,
        files: &[ImageFile],
        manifest: Option<&Path>,
        on_step: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<String, VmError> {
        let dir = format!("{}/{key}", self.host.images_dir());
        let marker = format!("{dir}/{}", MARKER);
        if self
            .run(
                "looking for the image",
                &format!("test -f {} && echo yes || true", q(&marker)),
            )
            .await?
            .trim()
            == "yes"
        {
            return Ok(dir);
        }
        on_step(&format!(
            "uploading the base image to {} (once; kept in {dir})",
            self.host.name
        ));
        // A folder of this upload's own: two `up`s that upload the same
        // image at once (two labs, or labrun on two machines) each fill
        // theirs; uploads killed more than a day ago are cleared away.
        let part = format!("{dir}.part-{}", upload_nonce());
        self.run(
            "making the image folder",
            &format!(
                "umask 022 && find {images} -maxdepth 1 -name {stale} -mmin +1440 -exec rm -rf {{}} + 2>/dev/null; mkdir -p {p}",
                images = q(&self.host.images_dir()),
                stale = q(&format!("{key}.part-*")),
                p = q(&part)
            ),
        )
        .await?;
        for f in files {
            let remote = format!("{part}/{}", f.name);
            self.session
                .upload(&f.local, &remote, 0o644)
                .await
                .map_err(|e| {
                    self.host
                        .unreachable(format!("uploading {}: {e}", f.local.display()))
                })?;
            let local = file_sha256(&f.local).await?;
            let theirs = self
                .run("checking the upload", &format!("sha256sum {}", q(&remote)))
                .await?;
            let theirs = theirs.split_whitespace().next().unwrap_or_default();
            if theirs != local {
                return Err(VmError::RemoteCommand {
                    host: self.host.name.clone(),
                    what: format!("uploading {}", f.local.display()),
                    reason: format!(
                        "the host computed SHA-256 {theirs}, this host {local}: the copy was damaged; run `labrun up` again"
                    ),
                });
            }
        }
        let marker_part = format!("{part}/{MARKER}");
        match manifest {
            Some(m) => self
                .session
                .upload(m, &marker_part, 0o644)
                .await
                .map_err(|e| {
                    self.host
                        .unreachable(format!("uploading {}: {e}", m.display()))
                })?,
            None => {
                self.run(
                    "marking the image complete",
                    &format!("echo {} > {}", q(key), q(&marker_part)),
                )
                .await?;
            }
        }
        // A complete folder is never replaced (a running guest's overlay may
        // stand on it): the rename fails when another upload put its copy in
        // place first, and this one is dropped.
        self.run(
            "putting the image in place",
            &format!(
                "chmod 0755 {p} && {{ mv -T {p} {d} 2>/dev/null || {{ test -f {m} && rm -rf {p}; }} || \
                 {{ echo \"cannot move {p} to {d}: it exists without its manifest {MARKER}, or is not writable; remove it\" >&2; exit 1; }}; }}",
                d = q(&dir),
                p = q(&part),
                m = q(&marker),
            ),
        )
        .await?;
        Ok(dir)
    }

    /// An empty folder for one lab's disks, readable by a system QEMU user.
    pub async fn make_lab_dir(&self, dir: &str) -> Result<(), VmError> {
        self.run(
            "making the lab's folder",
            &format!("rm -rf {d} && mkdir -p {d} && chmod 0755 {d}", d = q(dir)),
        )
        .await
        .map(drop)
    }

    /// Removes one lab's folder; whether there was one.
    pub async fn remove_lab_dir(&self, dir: &str) -> Result<bool, VmError> {
        let out = self
            .run(
                "removing the lab's disks",
                &format!(
                    "if test -e {d}; then rm -rf {d} && echo removed; fi",
                    d = q(dir)
                ),
            )
            .await?;
        Ok(out.trim() == "removed")
    }

    /// The names of the folders in `dir` (none when it does not exist).
    pub async fn list_dirs(&self, dir: &str) -> Result<Vec<String>, VmError> {
        let out = self
            .run(
                "listing labrun's folders",
                &format!(
                    "if test -d {d}; then cd {d} && for f in *; do test -d \"$f\" && printf '%s\\n' \"$f\"; done; fi; true",
                    d = q(dir)
                ),
            )
            .await?;
        Ok(out.lines().map(str::to_string).collect())
    }

    /// `qemu-img create` on the host: the overlay backed by the host's copy
    /// of the base image.
    pub async fn create_overlay(
        &self,
        base: &str,
        format: &str,
        overlay: &str,
        size_gib: Option<u32>,
    ) -> Result<(), VmError> {
        let size = size_gib.map(|g| format!(" {g}G")).unwrap_or_default();
        self.run(
            "making the overlay disk (is qemu-utils installed there?)",
            &format!(
                "qemu-img create -q -f qcow2 -F {} -b {} {}{size} && chmod 0644 {2}",
                q(format),
                q(base),
                q(overlay)
            ),
        )
        .await
        .map(drop)
    }

    pub async fn upload(&self, local: &Path, remote: &str) -> Result<(), VmError> {
        self.session
            .upload(local, remote, 0o644)
            .await
            .map_err(|e| {
                self.host
                    .unreachable(format!("uploading {}: {e}", local.display()))
            })
    }

    /// The last lines of a file on the host (for a guest that did not boot).
    pub async fn tail(&self, path: &str, lines: usize) -> String {
        match self
            .run(
                "reading the console log",
                &format!("tail -n {lines} {}", q(path)),
            )
            .await
        {
            Ok(t) if !t.trim().is_empty() => t,
            Ok(_) => format!("(the console log {path} on {} is empty)", self.host.name),
            Err(e) => e.to_string(),
        }
    }

    /// What decides the acceleration, read on the host.
    pub async fn accel_probe(&self) -> Result<AccelProbe, VmError> {
        let out = self
            .run(
                "reading the host's CPU and KVM",
                "test -e /dev/kvm && echo dev_kvm; test -e /sys/module/kvm_pvm && echo kvm_pvm; grep -m1 '^flags' /proc/cpuinfo",
            )
            .await?;
        Ok(AccelProbe {
            dev_kvm: out.lines().any(|l| l == "dev_kvm"),
            kvm_pvm_loaded: out.lines().any(|l| l == "kvm_pvm"),
            cpu_virt_flags: out
                .lines()
                .filter(|l| l.starts_with("flags"))
                .any(|l| l.split_whitespace().any(|f| f == "vmx" || f == "svm")),
        })
    }

    /// The host's online CPUs by core, for a lab's `cpu_pinning`.
    pub async fn cpu_topology(&self) -> Result<crate::pinning::Topology, VmError> {
        let what = "reading the host's CPU topology";
        let out = self.run(what, "lscpu -p=CPU,CORE,SOCKET").await?;
        crate::pinning::Topology::from_lscpu(&out).ok_or_else(|| VmError::RemoteCommand {
            host: self.host.name.clone(),
            what: what.into(),
            reason: format!("unexpected `lscpu -p` output: {out}"),
        })
    }

    /// Free MiB under labrun's folder on the host (made if missing).
    pub async fn free_mib(&self) -> Result<u64, VmError> {
        let dir = q(&self.host.dir);
        let out = self
            .run(
                "reading the host's free space",
                &format!("mkdir -p {dir} && chmod 0755 {dir} && df -Pk {dir} | tail -n 1"),
            )
            .await?;
        out.split_whitespace()
            .nth(3)
            .and_then(|k| k.parse::<u64>().ok())
            .map(|k| k / 1024)
            .ok_or_else(|| VmError::RemoteCommand {
                host: self.host.name.clone(),
                what: "reading the host's free space".into(),
                reason: format!("unexpected `df` output: {out}"),
            })
    }

    pub async fn close(self) {
        let _ = self.session.close().await;
    }
}

/// Written last into a host's image folder: its presence means complete.
const MARKER: &str = "image.json";

async fn file_sha256(path: &Path) -> Result<String, VmError> {
    let p = path.to_path_buf();
    tokio::task::spawn_blocking(move || {
        labrun_evidence::digest::sha256_file(&p).map_err(VmError::io(&p))
    })
    .await
    .map_err(|e| VmError::Libvirt(format!("internal: hashing stopped: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> RemoteHost {
        RemoteHost {
            name: "rack2".into(),
            ssh: Target {
                host: "10.0.0.2".into(),
                port: 22,
                user: "bench".into(),
                client_key: "/k".into(),
                host_key: "ssh-ed25519 AAAA".into(),
                via: None,
            },
            dir: "/var/tmp/labrun/".into(),
        }
    }

    #[test]
    fn folders_on_the_host_follow_the_local_lab_folder() {
        let h = host();
        assert_eq!(
            h.lab_dir(Path::new("/var/lib/labrun/demo-1a2b3c4d@rack2")),
            "/var/tmp/labrun/labs/demo-1a2b3c4d@rack2"
        );
        assert_eq!(h.images_dir(), "/var/tmp/labrun/images");
        assert_eq!(h.ssh.label(), "bench@10.0.0.2:22");
    }

    #[test]
    fn the_guest_is_reached_through_the_host() {
        let h = host();
        let guest = Target {
            host: "127.0.0.1".into(),
            port: 40000,
            user: "root".into(),
            client_key: "/c".into(),
            host_key: "ssh-ed25519 BBBB".into(),
            via: None,
        };
        let t = h.guest_target(guest);
        assert_eq!(t.via.as_deref(), Some(&h.ssh));
        assert_eq!(t.port, 40000);
    }
}
