//! Where a domain's disks are made and how `up` reaches them: in the lab's
//! state folder on this host, or in labrun's folder on a remote hypervisor
//! host over SSH. The domain XML names them as the hypervisor sees them.

use crate::error::VmError;
use crate::host;
use crate::remote::{HostShell, ImageFile};
use crate::state::LabDir;
use std::path::{Path, PathBuf};

pub(crate) enum Disks<'a> {
    Here,
    There {
        shell: &'a HostShell,
        /// The lab's folder on the host.
        dir: String,
    },
}

impl Disks<'_> {
    fn on_host(&self, name: &str, local: PathBuf) -> PathBuf {
        match self {
            Disks::Here => local,
            Disks::There { dir, .. } => PathBuf::from(format!("{dir}/{name}")),
        }
    }

    pub fn overlay(&self, dir: &LabDir) -> PathBuf {
        self.on_host("overlay.qcow2", dir.overlay())
    }
    pub fn seed(&self, dir: &LabDir) -> PathBuf {
        self.on_host("seed.img", dir.seed())
    }
    pub fn console_log(&self, dir: &LabDir) -> PathBuf {
        self.on_host("console.log", dir.console_log())
    }

    /// Makes the overlay, backed by `base` as the hypervisor sees it.
    pub async fn create_overlay(
        &self,
        dir: &LabDir,
        base: &Path,
        format: &str,
        size_gib: Option<u32>,
    ) -> Result<(), VmError> {
        match self {
            Disks::Here => host::create_overlay(base, format, &dir.overlay(), size_gib).await,
            Disks::There { shell, dir: there } => {
                shell.make_lab_dir(there).await?;
                shell
                    .create_overlay(
                        &base.to_string_lossy(),
                        format,
                        &self.overlay(dir).to_string_lossy(),
                        size_gib,
                    )
                    .await
            }
        }
    }

    /// The seed was written into the local state folder; a remote
    /// hypervisor gets a copy.
    pub async fn place_seed(&self, dir: &LabDir) -> Result<(), VmError> {
        match self {
            Disks::Here => Ok(()),
            Disks::There { shell, .. } => {
                shell
                    .upload(&dir.seed(), &self.seed(dir).to_string_lossy())
                    .await
            }
        }
    }

    pub async fn console_tail(&self, dir: &LabDir, lines: usize) -> String {
        match self {
            Disks::Here => host::console_tail(&dir.console_log(), lines),
            Disks::There { shell, .. } => {
                shell
                    .tail(&self.console_log(dir).to_string_lossy(), lines)
                    .await
            }
        }
    }
}

/// The files of a base image, as a host gets them.
pub(crate) fn image_files(paths: &[PathBuf]) -> Vec<ImageFile> {
    paths
        .iter()
        .map(|p| ImageFile {
            local: p.clone(),
            name: p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        })
        .collect()
}
