//! What the libvirt tests of this crate share: `virsh` on the system
//! daemon, why a host cannot run them, and a transient domain destroyed
//! when the test ends.

use std::process::{Command, Output};

pub fn virsh(args: &[&str]) -> Output {
    Command::new("virsh")
        .args(["-c", "qemu:///system"])
        .args(args)
        .output()
        .expect("virsh runs")
}

/// Why this host cannot run the test, or None.
pub fn unavailable() -> Option<String> {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !root {
        return Some("not root".into());
    }
    for tool in ["virsh", "qemu-img", "qemu-system-x86_64"] {
        if !Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return Some(format!("{tool} is not installed"));
        }
    }
    if !virsh(&["version"]).status.success() {
        return Some(
            "libvirtd is not reachable at qemu:///system (run scripts/host-setup.sh)".into(),
        );
    }
    None
}

/// Destroys the transient domain when the test ends, passed or not.
pub struct Domain(pub String);

impl Drop for Domain {
    fn drop(&mut self) {
        let _ = virsh(&["destroy", &self.0]);
    }
}
