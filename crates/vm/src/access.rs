//! Which of this host's libvirt daemons labrun may use, and who its QEMU
//! runs as.
//!
//! Root uses the system daemon (`qemu:///system`) as it always has. An
//! ordinary user gets the system daemon through its group socket when the
//! host lets members of `libvirt` in (polkit's rule, or `unix_sock_group`
//! with `auth_unix_rw = "none"`); otherwise the user's own session daemon
//! (`qemu:///session`), which libvirt starts on first use and whose QEMU runs
//! as the user. A lab that names `qemu:///session` gets it as written.

use crate::error::VmError;
use crate::hypervisor::Hypervisor;
use std::path::Path;
use std::sync::OnceLock;

pub const SYSTEM_URI: &str = "qemu:///system";
pub const SESSION_URI: &str = "qemu:///session";
/// The system daemon's read-write socket (libvirtd's default).
pub const SYSTEM_SOCKET: &str = "/run/libvirt/libvirt-sock";

/// How labrun reaches this host's libvirt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalAccess {
    /// Root on the system daemon: today's paths and behaviour.
    Root,
    /// An ordinary user whom the system daemon lets in through its socket;
    /// QEMU still runs as the daemon's QEMU user (libvirt-qemu).
    SystemAsUser,
    /// The user's own session daemon: QEMU runs as the user.
    Session {
        /// Why the system daemon was not used (None: the lab asked for it).
        system_refused: Option<String>,
    },
}

impl LocalAccess {
    pub fn uri(&self) -> &'static str {
        match self {
            LocalAccess::Root | LocalAccess::SystemAsUser => SYSTEM_URI,
            LocalAccess::Session { .. } => SESSION_URI,
        }
    }

    /// One line for `labrun check` and `up`.
    pub fn describe(&self) -> String {
        match self {
            LocalAccess::Root => format!("{SYSTEM_URI} (as root)"),
            LocalAccess::SystemAsUser => format!(
                "{SYSTEM_URI} through its socket {SYSTEM_SOCKET} (as a member of group libvirt); QEMU runs as libvirt-qemu"
            ),
            LocalAccess::Session {
                system_refused: None,
            } => format!("{SESSION_URI} (the lab asks for it); QEMU runs as you"),
            LocalAccess::Session {
                system_refused: Some(why),
            } => format!(
                "{SESSION_URI}, your own libvirt daemon: QEMU runs as you (the system daemon at {SYSTEM_SOCKET} refused you: {why})"
            ),
        }
    }
}

/// True when this process runs as root.
pub fn is_root() -> bool {
    euid() == 0
}

/// This process's effective user id.
pub fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The daemon a lab's local `uri` resolves to for this user. Root, and any
/// URI that is not this host's system daemon, are taken as written without
/// connecting. Decided once per process: every command of one run then
/// agrees (a session daemon's first start takes seconds).
pub fn resolve(uri: &str) -> Result<LocalAccess, VmError> {
    if uri == SESSION_URI {
        return Ok(LocalAccess::Session {
            system_refused: None,
        });
    }
    if uri != SYSTEM_URI || is_root() {
        return Ok(LocalAccess::Root);
    }
    static DECIDED: OnceLock<Result<LocalAccess, String>> = OnceLock::new();
    DECIDED
        .get_or_init(|| probe_as_user().map_err(|e| e.to_string()))
        .clone()
        .map_err(VmError::NoAccess)
}

/// The lab's URI as this user uses it (see [`resolve`]).
pub fn local_uri(uri: &str) -> Result<String, VmError> {
    if !crate::preflight::is_local_uri(uri) {
        return Ok(uri.to_string());
    }
    Ok(resolve(uri)?.uri().to_string())
}

fn probe_as_user() -> Result<LocalAccess, VmError> {
    let system = match Hypervisor::open(SYSTEM_URI) {
        Ok(_) => return Ok(LocalAccess::SystemAsUser),
        Err(VmError::Libvirtd { reason, .. }) => reason,
        Err(e) => e.to_string(),
    };
    match Hypervisor::open(SESSION_URI) {
        Ok(_) => Ok(LocalAccess::Session {
            system_refused: Some(system),
        }),
        Err(e) => {
            let session = match e {
                VmError::Libvirtd { reason, .. } => reason,
                e => e.to_string(),
            };
            Err(no_access(&system, &session, &Groups::of_this_process()))
        }
    }
}

/// The groups that matter, by membership of this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Groups {
    pub libvirt: bool,
    pub kvm: bool,
}

impl Groups {
    pub fn of_this_process() -> Groups {
        let mine: Vec<u32> = rustix::process::getgroups()
            .unwrap_or_default()
            .into_iter()
            .map(|g| g.as_raw())
            .chain([rustix::process::getegid().as_raw()])
            .collect();
        let member = |name: &str| group_id(name).is_some_and(|g| mine.contains(&g));
        Groups {
            libvirt: member("libvirt"),
            kvm: member("kvm"),
        }
    }
}

/// The id of group `name` in /etc/group.
pub fn group_id(name: &str) -> Option<u32> {
    let groups = std::fs::read_to_string("/etc/group").ok()?;
    groups
        .lines()
        .find(|l| l.split(':').next() == Some(name))
        .and_then(|l| l.split(':').nth(2))
        .and_then(|g| g.parse().ok())
}

/// Neither daemon would take this user: what each said, and what to do.
fn no_access(system: &str, session: &str, groups: &Groups) -> VmError {
    let fix = if groups.libvirt {
        "you are in group libvirt, but the system daemon does not let the group in without polkit: as root, set `unix_sock_group = \"libvirt\"`, `unix_sock_rw_perms = \"0770\"` and `auth_unix_rw = \"none\"` in /etc/libvirt/libvirtd.conf and restart libvirtd; or make `libvirtd --timeout=120` (package libvirt-daemon) runnable by you for `qemu:///session`"
    } else {
        "you are not in group libvirt: as root, `usermod -aG libvirt,kvm $USER`, then log in again (or run labrun as root)"
    };
    VmError::NoLibvirtAccess {
        socket: SYSTEM_SOCKET.into(),
        system: system.to_string(),
        session: session.to_string(),
        fix,
    }
}

/// Why QEMU running as this user could not open `/dev/kvm`, with the fix;
/// None when it can (or there is none: the accelerator probe says so).
pub fn kvm_denied(node: &Path, groups: &Groups) -> Option<String> {
    if !node.exists() {
        return None;
    }
    let rw = rustix::fs::Access::READ_OK | rustix::fs::Access::WRITE_OK;
    if rustix::fs::access(node, rw).is_ok() {
        return None;
    }
    let fix = if groups.kvm {
        format!(
            "as root, `chgrp kvm {0} && chmod 0660 {0}` (what Debian's udev rule does)",
            node.display()
        )
    } else {
        "as root, `usermod -aG kvm $USER`, then log in again".to_string()
    };
    Some(format!(
        "you cannot open {} (QEMU runs as you under qemu:///session): {fix}",
        node.display()
    ))
}

/// labrun's two folders on this host, named the way the user sets them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Folder {
    /// Downloaded artifacts and built images.
    Cache,
    /// Per-lab state: keys, overlay, seed, console log.
    State,
}

impl Folder {
    fn words(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Folder::Cache => ("the image cache", "XDG_CACHE_HOME or LABRUN_CACHE", "cache"),
            Folder::State => (
                "the state folder",
                "XDG_STATE_HOME or LABRUN_STATE",
                "state",
            ),
        }
    }
}

/// `path` (or, not made yet, its nearest existing ancestor) is one this
/// process can write into; otherwise whose it is and what to do. A cache
/// root made by an earlier `sudo labrun` is the usual case.
pub fn ensure_writable(path: &Path, folder: Folder) -> Result<(), VmError> {
    use std::os::unix::fs::MetadataExt;
    let Some(existing) = path.ancestors().find(|a| a.exists()) else {
        return Ok(());
    };
    let rwx = rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK;
    if rustix::fs::access(existing, rwx).is_ok() {
        return Ok(());
    }
    let (what, env, flag) = folder.words();
    let elsewhere = format!("set {env} (or --{flag}) to a folder of yours");
    // chown is offered for labrun's own folder only, never for a parent
    // (which may be `/` or a system folder).
    let why = if existing == path {
        let owner = std::fs::metadata(existing).map_or(0, |m| m.uid());
        let whose = if owner == 0 {
            "root's, made by an earlier run as root".to_string()
        } else {
            format!("uid {owner}'s")
        };
        format!(
            "it is not writable by you (it is {whose}): `chown -R $USER {}` as root, or {elsewhere}",
            path.display()
        )
    } else {
        format!(
            "it cannot be made, as {} is not writable by you: {elsewhere}",
            existing.display()
        )
    };
    Err(VmError::NotWritable {
        what,
        path: path.to_path_buf(),
        why,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_and_named_uris_are_taken_as_written() {
        assert_eq!(
            resolve(SESSION_URI).unwrap(),
            LocalAccess::Session {
                system_refused: None
            }
        );
        assert_eq!(
            local_uri("qemu+libssh://u@h/system").unwrap(),
            "qemu+libssh://u@h/system"
        );
        if is_root() {
            // No connection is made for root: nothing changes for it.
            assert_eq!(resolve(SYSTEM_URI).unwrap(), LocalAccess::Root);
            assert_eq!(local_uri(SYSTEM_URI).unwrap(), SYSTEM_URI);
        }
    }

    #[test]
    fn each_access_says_who_runs_qemu() {
        assert!(LocalAccess::Root.describe().contains("as root"));
        assert!(
            LocalAccess::SystemAsUser
                .describe()
                .contains("group libvirt")
        );
        let refused = LocalAccess::Session {
            system_refused: Some("polkit said no".into()),
        };
        assert_eq!(refused.uri(), SESSION_URI);
        let d = refused.describe();
        assert!(
            d.contains("runs as you") && d.contains("polkit said no"),
            "{d}"
        );
    }

    #[test]
    fn no_access_names_the_socket_and_the_fix() {
        let out = no_access(
            "Permission denied",
            "no libvirtd",
            &Groups {
                libvirt: false,
                kvm: false,
            },
        )
        .to_string();
        assert!(
            out.contains(SYSTEM_SOCKET) && out.contains("usermod -aG libvirt"),
            "{out}"
        );
        assert!(out.contains("Permission denied") && out.contains("no libvirtd"));
        let member = no_access(
            "polkit",
            "x",
            &Groups {
                libvirt: true,
                kvm: true,
            },
        )
        .to_string();
        assert!(member.contains("auth_unix_rw"), "{member}");
    }

    #[test]
    fn a_kvm_node_one_cannot_open_is_named_with_the_fix() {
        let tmp = tempfile::tempdir().unwrap();
        let none = tmp.path().join("kvm");
        let groups = Groups {
            libvirt: true,
            kvm: false,
        };
        assert_eq!(kvm_denied(&none, &groups), None);
        std::fs::write(&none, "").unwrap();
        // Root opens anything: the denied case is checked as a user only.
        if !is_root() {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&none, std::fs::Permissions::from_mode(0o000)).unwrap();
            let why = kvm_denied(&none, &groups).unwrap();
            assert!(why.contains("usermod -aG kvm"), "{why}");
        } else {
            assert_eq!(kvm_denied(&none, &groups), None);
        }
    }

    #[test]
    fn a_folder_one_cannot_write_names_its_owner_and_the_fix() {
        let tmp = tempfile::tempdir().unwrap();
        ensure_writable(&tmp.path().join("not/yet"), Folder::Cache).unwrap();
        if is_root() {
            return;
        }
        use std::os::unix::fs::PermissionsExt;
        let closed = tmp.path().join("closed");
        std::fs::create_dir(&closed).unwrap();
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o555)).unwrap();
        let err = ensure_writable(&closed, Folder::Cache)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("image cache") && err.contains("chown") && err.contains("XDG_CACHE_HOME"),
            "{err}"
        );
        // A parent that is not labrun's own is never offered to chown.
        let err = ensure_writable(&closed.join("labrun"), Folder::State)
            .unwrap_err()
            .to_string();
        assert!(
            !err.contains("chown") && err.contains("XDG_STATE_HOME"),
            "{err}"
        );
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}
