//! Small host-side steps of `up`: the overlay disk and a free port.

use crate::error::VmError;
use std::path::Path;

/// `qemu-img create -f qcow2 -F FORMAT -b BASE OVERLAY [SIZE]`: the base is
/// never written. `-F` is mandatory: libvirt refuses to probe a backing
/// format. `size_gib` grows the overlay past the base (a cloud image is a
/// few GiB; cloud-init grows its root partition to the disk).
pub async fn create_overlay(
    base: &Path,
    base_format: &str,
    overlay: &Path,
    size_gib: Option<u32>,
) -> Result<(), VmError> {
    let mut cmd = tokio::process::Command::new("qemu-img");
    cmd.args(["create", "-q", "-f", "qcow2", "-F", base_format, "-b"])
        .arg(base)
        .arg(overlay);
    if let Some(g) = size_gib {
        cmd.arg(format!("{g}G"));
    }
    let out = cmd
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| VmError::Command {
            command: "qemu-img create".into(),
            reason: e.to_string(),
        })?;
    if !out.status.success() {
        return Err(VmError::Command {
            command: format!(
                "qemu-img create -b {} {}",
                base.display(),
                overlay.display()
            ),
            reason: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(overlay, std::fs::Permissions::from_mode(0o644))
        .map_err(VmError::io(overlay))
}

/// A port on 127.0.0.1 that was free a moment ago. QEMU binds it later, so
/// another process can take it in between: the caller retries on that error.
pub fn free_local_port() -> Result<u16, VmError> {
    let l = std::net::TcpListener::bind(("127.0.0.1", 0)).map_err(|e| VmError::NoPort {
        attempts: 1,
        reason: e.to_string(),
    })?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| VmError::NoPort {
            attempts: 1,
            reason: e.to_string(),
        })
}

/// The last `n` lines of the serial console log (empty when none yet).
pub fn console_tail(log: &Path, n: usize) -> String {
    let text = std::fs::read(log)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(n);
    if lines.is_empty() {
        format!("(the console log {} is empty)", log.display())
    } else {
        lines[start..].join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_is_nonzero_and_bindable() {
        let p = free_local_port().unwrap();
        assert_ne!(p, 0);
        std::net::TcpListener::bind(("127.0.0.1", p)).unwrap();
    }

    #[test]
    fn console_tail_keeps_the_last_lines() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("c.log");
        assert!(console_tail(&p, 3).contains("empty"));
        std::fs::write(&p, "a\nb\nc\nd\n").unwrap();
        assert_eq!(console_tail(&p, 2), "c\nd");
    }

    #[tokio::test]
    #[ignore = "needs QEMU's qemu-img (qemu-utils): `make test` runs it"]
    async fn overlay_is_backed_by_the_base() {
        assert!(
            crate::preflight::find_program("qemu-img").is_some(),
            "qemu-img is not installed: install qemu-utils (scripts/host-setup.sh)"
        );
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().join("base.qcow2");
        let st = std::process::Command::new("qemu-img")
            .args(["create", "-q", "-f", "qcow2"])
            .arg(&base)
            .arg("64M")
            .status()
            .unwrap();
        assert!(st.success());
        let ov = tmp.path().join("ov.qcow2");
        create_overlay(&base, "qcow2", &ov, None).await.unwrap();
        let info = std::process::Command::new("qemu-img")
            .args(["info", "--output=json"])
            .arg(&ov)
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
        assert_eq!(v["backing-filename"], base.to_str().unwrap());
        assert_eq!(v["backing-filename-format"], "qcow2");
        assert_eq!(v["virtual-size"], 64 << 20);
        let grown = tmp.path().join("grown.qcow2");
        create_overlay(&base, "qcow2", &grown, Some(4))
            .await
            .unwrap();
        let info = std::process::Command::new("qemu-img")
            .args(["info", "--output=json"])
            .arg(&grown)
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
        assert_eq!(v["virtual-size"], 4u64 << 30);
        let err = create_overlay(
            &tmp.path().join("none.qcow2"),
            "qcow2",
            &tmp.path().join("x.qcow2"),
            None,
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("qemu-img"));
    }
}
