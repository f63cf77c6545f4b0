//! A pinned cloud image as a boot disk. The artifact code has fetched it and
//! checked its SHA-256; here `qemu-img info` says what it is, and anything
//! labrun would not boot as published is refused before a domain exists.

use crate::config::CloudImage;
use crate::error::VmError;
use serde::Deserialize;
use std::path::Path;

/// Disk formats QEMU reads that cloud images are published in.
const FORMATS: &[&str] = &["qcow2", "raw"];

/// What `qemu-img info --output=json` says about the file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ImageInfo {
    pub format: String,
    #[serde(rename = "virtual-size")]
    pub virtual_size: u64,
    #[serde(rename = "backing-filename", default)]
    pub backing_filename: Option<String>,
}

/// The format of the cloud image, after checking that it can be booted as
/// published onto a disk of `disk_gib`.
pub async fn inspect(image: &CloudImage) -> Result<String, VmError> {
    let info = qemu_img_info(&image.path).await?;
    check(&image.path, &info, image.disk_gib)?;
    Ok(info.format)
}

async fn qemu_img_info(path: &Path) -> Result<ImageInfo, VmError> {
    let bad = |reason: String| VmError::CloudImage {
        path: path.into(),
        reason,
    };
    if !path.is_file() {
        return Err(bad(
            "the file is missing: `labrun up` fetches it; `labrun fetch` shows where from".into(),
        ));
    }
    let out = tokio::process::Command::new("qemu-img")
        // -U: read even while a running domain holds the file's lock.
        .args(["info", "-U", "--output=json"])
        .arg(path)
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| VmError::Command {
            command: "qemu-img info".into(),
            reason: e.to_string(),
        })?;
    if !out.status.success() {
        return Err(bad(format!(
            "qemu-img cannot read it: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    serde_json::from_slice(&out.stdout)
        .map_err(|e| bad(format!("unexpected `qemu-img info` output: {e}")))
}

/// Pure checks on what `qemu-img info` reported.
pub fn check(path: &Path, info: &ImageInfo, disk_gib: u32) -> Result<(), VmError> {
    let bad = |reason: String| {
        Err(VmError::CloudImage {
            path: path.into(),
            reason,
        })
    };
    if !FORMATS.contains(&info.format.as_str()) {
        return bad(format!(
            "its format is {}, expected one of {} (a compressed download such as .tar.xz must name its disk with `extract:`)",
            info.format,
            FORMATS.join(", ")
        ));
    }
    if let Some(b) = &info.backing_filename {
        // A pinned digest covers this file only, not what it points at.
        return bad(format!(
            "it is an overlay on {b}; a pinned image must be self-contained"
        ));
    }
    let disk = u64::from(disk_gib) << 30;
    if info.virtual_size > disk {
        return bad(format!(
            "its disk is {:.1} GiB, larger than the lab's `vm.disk` of {disk_gib} GiB: raise `disk:`",
            info.virtual_size as f64 / f64::from(1u32 << 30)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(format: &str, gib: u64, backing: Option<&str>) -> ImageInfo {
        ImageInfo {
            format: format.into(),
            virtual_size: gib << 30,
            backing_filename: backing.map(Into::into),
        }
    }

    #[test]
    fn only_self_contained_qcow2_or_raw_that_fits_is_booted() {
        let p = Path::new("/c/debian-12-genericcloud-amd64.qcow2");
        check(p, &info("qcow2", 2, None), 40).unwrap();
        check(p, &info("raw", 40, None), 40).unwrap();
        let e = check(p, &info("vmdk", 2, None), 40)
            .unwrap_err()
            .to_string();
        assert!(e.contains("vmdk") && e.contains("qcow2, raw"), "{e}");
        let e = check(p, &info("qcow2", 2, Some("/etc/shadow")), 40)
            .unwrap_err()
            .to_string();
        assert!(e.contains("self-contained"), "{e}");
        let e = check(p, &info("qcow2", 50, None), 40)
            .unwrap_err()
            .to_string();
        assert!(e.contains("raise `disk:`"), "{e}");
    }

    #[tokio::test]
    async fn inspect_reads_the_real_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("cloud.qcow2");
        let st = std::process::Command::new("qemu-img")
            .args(["create", "-q", "-f", "qcow2"])
            .arg(&path)
            .arg("2G")
            .status()
            .unwrap();
        assert!(st.success());
        let img = CloudImage {
            path: path.clone(),
            sha256: "ab".repeat(32),
            disk_gib: 4,
        };
        assert_eq!(inspect(&img).await.unwrap(), "qcow2");
        let missing = CloudImage {
            path: tmp.path().join("gone.qcow2"),
            ..img
        };
        let e = inspect(&missing).await.unwrap_err().to_string();
        assert!(e.contains("missing"), "{e}");
    }
}
