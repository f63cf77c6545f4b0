//! Host checks before anything is made: each failure names the command that
//! fixes it.

use crate::accel::{self, AccelProbe, Acceleration};
use crate::access::{self, Folder};
use crate::config::VmConfig;
use crate::error::VmError;
use crate::hypervisor::Hypervisor;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

pub const VIRTLOGD_SOCKET: &str = "/run/libvirt/virtlogd-sock";

/// Room an image build needs: root tree + raw ext4 + qcow2, with margin.
pub const IMAGE_BUILD_MIB: u64 = 3 * 1024;
/// Room a fresh overlay needs before the guest writes to it.
pub const OVERLAY_MIN_MIB: u64 = 2 * 1024;

/// What the checks found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostReport {
    pub acceleration: Acceleration,
    /// To print loudly (TCG, little disk space).
    pub warnings: Vec<String>,
}

/// A socket file alone proves nothing: a virtlogd that died (or a /run kept
/// from another boot) leaves it behind, and libvirt then fails at domain
/// start with "Connection refused". Connecting is the real test. A socket we
/// may not open (not root) is left for libvirt to judge.
fn virtlogd_answers(socket: &Path) -> Result<(), VmError> {
    match std::os::unix::net::UnixStream::connect(socket) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Ok(()),
        Err(e) => Err(VmError::Virtlogd {
            socket: socket.into(),
            reason: e.to_string(),
        }),
    }
}

/// Checks programs, virtlogd, libvirtd at the URI, that the QEMU user can
/// reach the cache and state folders, free space, and which acceleration
/// works. `build_image` adds the image-build tools and space.
pub fn preflight(
    cfg: &VmConfig,
    cache_dir: &Path,
    state_dir: &Path,
    build_image: bool,
) -> Result<HostReport, VmError> {
    cfg.validate()?;
    image_build_allowed(build_image, cache_dir)?;
    let mut programs = vec![
        ("qemu-system-x86_64", "qemu-system-x86"),
        ("qemu-img", "qemu-utils"),
    ];
    if build_image {
        programs.push(("mmdebstrap", "mmdebstrap"));
        programs.push(("mkfs.ext4", "e2fsprogs"));
    }
    for (program, package) in programs {
        if find_program(program).is_none() {
            return Err(VmError::MissingProgram { program, package });
        }
    }
    // The system daemon's QEMU runs as libvirt-qemu and logs through the
    // system virtlogd; a session's runs as the user, with its own virtlogd.
    let system = cfg.uri == access::SYSTEM_URI;
    if system {
        virtlogd_answers(Path::new(VIRTLOGD_SOCKET))?;
    }
    Hypervisor::open(&cfg.uri)?;
    if is_local_uri(&cfg.uri) {
        access::ensure_writable(cache_dir, Folder::Cache)?;
        access::ensure_writable(state_dir, Folder::State)?;
    }
    if system {
        qemu_can_reach(cache_dir)?;
        qemu_can_reach(state_dir)?;
    }

    let mut warnings = Vec::new();
    if build_image {
        require_space(cache_dir, IMAGE_BUILD_MIB, "building the base image")?;
    }
    let free = require_space(state_dir, OVERLAY_MIN_MIB, "the VM's overlay disk")?;
    let disk_mib = u64::from(cfg.image.disk_gib()) * 1024;
    if free < disk_mib {
        warnings.push(format!(
            "only {free} MiB free under {}; the guest's disk can grow to {disk_mib} MiB and would fail when the host runs out",
            state_dir.display()
        ));
    }
    let kvm = Path::new("/dev/kvm");
    if system && let Some(w) = kvm_node_warning(kvm, &access::group_id("kvm")) {
        warnings.push(w);
    }
    let probe = AccelProbe::read_host();
    // Under a session QEMU opens /dev/kvm as the user.
    let denied = (cfg.uri == access::SESSION_URI)
        .then(|| access::kvm_denied(kvm, &access::Groups::of_this_process()))
        .flatten();
    let (acceleration, warning) =
        accel::choose_for(cfg.accel, probe.kvm_unusable_reason().or(denied))?;
    warnings.extend(warning);
    Ok(HostReport {
        acceleration,
        warnings,
    })
}

/// The checks of [`preflight`] for a hypervisor on another host: libvirt
/// answers at the remote URI, the host has room for the overlay, and the
/// acceleration is chosen from the host's own CPU and `/dev/kvm`. Only an
/// image build happens here, and needs this host's tools and space.
pub async fn remote(
    cfg: &VmConfig,
    cache_dir: &Path,
    build_image: bool,
    shell: &crate::remote::HostShell,
) -> Result<HostReport, VmError> {
    cfg.validate()?;
    image_build_allowed(build_image, cache_dir)?;
    if build_image {
        for (program, package) in [("mmdebstrap", "mmdebstrap"), ("mkfs.ext4", "e2fsprogs")] {
            if find_program(program).is_none() {
                return Err(VmError::MissingProgram { program, package });
            }
        }
        require_space(cache_dir, IMAGE_BUILD_MIB, "building the base image")?;
    }
    Hypervisor::open(&cfg.uri)?;
    let host = shell.host();
    let free = shell.free_mib().await?;
    if free < OVERLAY_MIN_MIB {
        return Err(VmError::RemoteCommand {
            host: host.name.clone(),
            what: "the space check".into(),
            reason: format!(
                "only {free} MiB free under {}, {OVERLAY_MIN_MIB} MiB needed for the VM's overlay disk: free some space there or name another `dir`",
                host.dir
            ),
        });
    }
    let mut warnings = Vec::new();
    let disk_mib = u64::from(cfg.image.disk_gib()) * 1024;
    if free < disk_mib {
        warnings.push(format!(
            "only {free} MiB free under {} on {}; the guest's disk can grow to {disk_mib} MiB and would fail when the host runs out",
            host.dir, host.name
        ));
    }
    let (acceleration, warning) = accel::choose(cfg.accel, &shell.accel_probe().await?)?;
    warnings.extend(warning.map(|w| format!("on {}: {w}", host.name)));
    Ok(HostReport {
        acceleration,
        warnings,
    })
}

/// The recipe's image is built as root only: said before anything else,
/// with the two ways out.
fn image_build_allowed(build_image: bool, cache_dir: &Path) -> Result<(), VmError> {
    if build_image && !access::is_root() {
        return Err(VmError::ImageBuildNeedsRoot {
            cache: cache_dir.to_path_buf(),
        });
    }
    Ok(())
}

/// libvirt probes QEMU with KVM and caches the result only while the QEMU
/// user can open `/dev/kvm`; a root-only node (0600) makes it re-probe on
/// every domain start, which costs ~45 s on a busy 2-core host.
fn kvm_node_warning(node: &Path, kvm_gid: &Option<u32>) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(node).ok()?;
    let mode = meta.mode();
    let group_ok = kvm_gid.is_some_and(|g| g == meta.gid()) && mode & 0o060 == 0o060;
    if group_ok || mode & 0o006 == 0o006 {
        return None;
    }
    Some(format!(
        "{} (mode {:o}) cannot be opened by the QEMU user, so libvirt re-probes QEMU on every start (tens of seconds); fix as root: `chgrp kvm {0} && chmod 0660 {0}` (what Debian's udev rule does)",
        node.display(),
        mode & 0o777
    ))
}

/// A URI whose QEMU runs on this host (files, sockets and free ports are
/// checked locally only then).
pub fn is_local_uri(uri: &str) -> bool {
    uri.starts_with("qemu:///")
}

pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/sbin:/usr/bin:/sbin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The system daemon runs QEMU as `libvirt-qemu`, which must traverse every
/// folder above the images and overlays (a 0700 `/root` or home stops it).
pub fn qemu_can_reach(path: &Path) -> Result<(), VmError> {
    for ancestor in path.ancestors() {
        let Ok(meta) = std::fs::metadata(ancestor) else {
            // Not made yet: labrun creates it 0755.
            continue;
        };
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o001 == 0 {
            return Err(VmError::NotTraversable {
                path: path.to_path_buf(),
                ancestor: ancestor.to_path_buf(),
                mode,
            });
        }
    }
    Ok(())
}

/// Free MiB at `path` (or its nearest existing ancestor).
pub fn free_mib(path: &Path) -> Result<u64, VmError> {
    let existing = path
        .ancestors()
        .find(|a| a.exists())
        .unwrap_or(Path::new("/"));
    let st = rustix::fs::statvfs(existing).map_err(|e| VmError::io(existing)(e.into()))?;
    Ok(st.f_bavail.saturating_mul(st.f_frsize) / (1024 * 1024))
}

/// Free MiB at `path` (or its nearest existing ancestor); an error below `need_mib`.
fn require_space(path: &Path, need_mib: u64, what: &'static str) -> Result<u64, VmError> {
    let free_mib = free_mib(path)?;
    if free_mib < need_mib {
        return Err(VmError::DiskSpace {
            path: path.to_path_buf(),
            free_mib,
            need_mib,
            what,
        });
    }
    Ok(free_mib)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_ancestor_is_reported_with_the_fix() {
        let tmp = tempfile::tempdir().unwrap();
        let private = tmp.path().join("home");
        std::fs::create_dir(&private).unwrap();
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = qemu_can_reach(&private.join("cache/labrun"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("--cache") && err.contains("700"), "{err}");
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o755)).unwrap();
        qemu_can_reach(&private.join("cache/labrun")).unwrap();
    }

    #[test]
    fn a_stale_virtlogd_socket_is_not_taken_for_a_running_daemon() {
        let tmp = tempfile::tempdir().unwrap();
        let socket = tmp.path().join("virtlogd-sock");
        let missing = virtlogd_answers(&socket).unwrap_err().to_string();
        assert!(missing.contains("virtlogd -d"), "{missing}");

        let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        virtlogd_answers(&socket).unwrap();
        // A daemon that stopped listening; the file stays. (Shut down, not
        // dropped: a process another test forks at that moment would hold
        // the fd open, and the socket would still take connections.)
        rustix::net::shutdown(&listener, rustix::net::Shutdown::Both).unwrap();
        assert!(socket.exists());
        let stale = virtlogd_answers(&socket).unwrap_err().to_string();
        assert!(
            stale.contains("refused") && stale.contains("virtlogd -d"),
            "{stale}"
        );
    }

    #[test]
    fn space_check_names_what_needs_it() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(require_space(tmp.path(), 1, "x").unwrap() >= 1);
        let err = require_space(&tmp.path().join("not/yet"), u64::MAX / 2, "the overlay")
            .unwrap_err()
            .to_string();
        assert!(err.contains("the overlay"), "{err}");
    }

    #[test]
    fn root_only_kvm_node_is_warned_about() {
        use std::os::unix::fs::MetadataExt;
        let tmp = tempfile::tempdir().unwrap();
        let node = tmp.path().join("kvm");
        std::fs::write(&node, "").unwrap();
        let gid = Some(std::fs::metadata(&node).unwrap().gid());
        std::fs::set_permissions(&node, std::fs::Permissions::from_mode(0o600)).unwrap();
        let w = kvm_node_warning(&node, &gid).unwrap();
        assert!(w.contains("chmod 0660"), "{w}");
        std::fs::set_permissions(&node, std::fs::Permissions::from_mode(0o660)).unwrap();
        assert!(kvm_node_warning(&node, &gid).is_none());
        assert!(kvm_node_warning(&node, &None).is_some());
        assert!(kvm_node_warning(&tmp.path().join("none"), &gid).is_none());
    }

    #[test]
    fn a_user_is_told_how_to_get_the_base_image() {
        let cache = Path::new("/home/u/.cache/labrun");
        image_build_allowed(false, cache).unwrap();
        match image_build_allowed(true, cache) {
            Ok(()) => assert!(access::is_root()),
            Err(e) => {
                assert!(!access::is_root());
                let e = e.to_string();
                assert!(
                    e.contains("sudo labrun image build --cache /home/u/.cache/labrun")
                        && e.contains("vm.image.cloud"),
                    "{e}"
                );
            }
        }
    }

    #[test]
    fn programs_are_found_on_path() {
        assert!(find_program("sh").is_some());
        assert!(find_program("labrun-no-such-program").is_none());
    }
}
