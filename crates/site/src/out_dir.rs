//! Where the site goes. A site is built whole in a folder beside OUT and
//! then put in OUT's place, so a reader never sees half of one. OUT may be
//! new, empty, or a site labrun wrote earlier (it holds [`MARKER`]); any
//! other folder or file is refused untouched, and a link is never
//! followed.

use crate::error::SiteError;
use std::path::{Path, PathBuf};

/// The file that marks a folder as a site labrun wrote: only such a folder
/// is ever replaced.
pub const MARKER: &str = ".labrun-site";

const MARKER_TEXT: &str = "This folder is a site written by `labrun site`; the next `labrun site` of it replaces it whole.\n";

/// OUT, checked.
pub struct Target {
    out: PathBuf,
    parent: PathBuf,
}

impl Target {
    /// Refuses an OUT that labrun must not replace, before any work.
    pub fn check(out: &Path) -> Result<Target, SiteError> {
        let write_err = |source| SiteError::Write {
            path: out.to_path_buf(),
            source,
        };
        match std::fs::symlink_metadata(out) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(write_err(e)),
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(SiteError::LinkOut {
                    path: out.to_path_buf(),
                });
            }
            Ok(meta) if meta.is_dir() => {
                if !is_site(out) && !is_empty(out).map_err(write_err)? {
                    return Err(SiteError::ForeignOut {
                        path: out.to_path_buf(),
                    });
                }
            }
            Ok(_) => {
                return Err(SiteError::ForeignOut {
                    path: out.to_path_buf(),
                });
            }
        }
        let parent = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Ok(Target {
            out: out.to_path_buf(),
            parent,
        })
    }

    /// A fresh folder beside OUT (same file system, so the swap is a
    /// rename) to build the site in; dropped unused, it is removed.
    pub fn staging(&self) -> Result<tempfile::TempDir, SiteError> {
        std::fs::create_dir_all(&self.parent).map_err(|source| SiteError::Write {
            path: self.parent.clone(),
            source,
        })?;
        let staging = tempfile::Builder::new()
            .prefix(".labrun-site-new-")
            .tempdir_in(&self.parent)
            .map_err(|source| SiteError::Write {
                path: self.parent.clone(),
                source,
            })?;
        std::fs::write(staging.path().join(MARKER), MARKER_TEXT).map_err(|source| {
            SiteError::Write {
                path: staging.path().join(MARKER),
                source,
            }
        })?;
        Ok(staging)
    }

    /// Puts the built site in OUT's place; the earlier site (checked again:
    /// it may have changed since [`Target::check`]) is removed after.
    pub fn replace_with(self, staging: tempfile::TempDir) -> Result<PathBuf, SiteError> {
        let write_err = |source| SiteError::Write {
            path: self.out.clone(),
            source,
        };
        let old = Target::check(&self.out)?;
        let retired = if old.out.exists() {
            let retired = tempfile::Builder::new()
                .prefix(".labrun-site-old-")
                .tempdir_in(&self.parent)
                .map_err(write_err)?;
            // The old site moves into a folder that is removed when dropped.
            let inside = retired.path().join("site");
            std::fs::rename(&self.out, &inside).map_err(write_err)?;
            Some(retired)
        } else {
            None
        };
        let built = staging.keep();
        std::fs::rename(&built, &self.out).map_err(write_err)?;
        drop(retired);
        Ok(self.out)
    }
}

fn is_site(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join(MARKER)).is_ok_and(|m| m.is_file())
}

fn is_empty(dir: &Path) -> std::io::Result<bool> {
    Ok(std::fs::read_dir(dir)?.next().is_none())
}
