//! `labrun pin`: take a tool's digest from the upstream's own checksum list
//! (or apt's signed index) and write it into the lab file's text.

use crate::apt;
use crate::error::ArtifactError;
use crate::fetcher::Fetcher;
use crate::lab_edit::{PinEdit, apply_pin, read_tool};
use crate::spec::{AptPackage, SpecProblem};
use std::path::Path;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinRequest {
    pub tool: String,
    pub version: String,
    /// The artifact URL with `{version}`; derived from the current URL when
    /// absent (the current version replaced by `{version}`).
    pub url_template: Option<String>,
    /// The checksum list's URL (`{version}` allowed); derived when absent.
    pub checksums: Option<String>,
    /// A digest checked by other means, for projects that publish no list.
    pub manual: Option<ManualPin>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManualPin {
    pub sha256: String,
    /// Where it was checked, written as `sha256_source`.
    pub source: String,
}

/// The edit, ready to be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinOutcome {
    pub sha256: String,
    pub sha256_source: String,
    pub url: Option<String>,
    pub old_sha256: Option<String>,
    pub new_text: String,
}

impl Fetcher {
    /// Works out the pin for `req` against the lab text `lab` (read from
    /// `lab_path`, named in errors); writes nothing.
    pub async fn plan_pin(
        &self,
        lab_path: &Path,
        lab: &str,
        req: &PinRequest,
    ) -> Result<PinOutcome, ArtifactError> {
        let edit_err = |problem: String| ArtifactError::LabEdit {
            path: lab_path.to_path_buf(),
            problem,
        };
        let view = read_tool(lab, &req.tool).map_err(edit_err)?;
        let mut edit = PinEdit {
            tool: req.tool.clone(),
            version: Some(req.version.clone()),
            url: None,
            apt_version: None,
            extract_member: None,
            sha256: String::new(),
            sha256_source: String::new(),
        };
        if let Some(package) = &view.apt_package {
            // The host's apt index is signed; its SHA256 is the upstream list.
            let pkg = AptPackage {
                package: package.clone(),
                version: req.version.clone(),
                suite: None,
            };
            if let Some(p) = pkg.problems().into_iter().next() {
                return Err(p.under("apt").into());
            }
            edit.apt_version = Some(req.version.clone());
            // The tool's own `version:` may be the upstream one: only follow
            // it when it was the apt version.
            if view.version != view.apt_version {
                edit.version = None;
            }
            match &req.manual {
                Some(m) => (edit.sha256, edit.sha256_source) = (m.sha256.clone(), m.source.clone()),
                None => {
                    edit.sha256 = apt::index_sha256(&pkg).await?;
                    edit.sha256_source = format!(
                        "apt-cache show {}={} (the host's signed apt index)",
                        pkg.package, pkg.version
                    );
                }
            }
        } else {
            let template = match &req.url_template {
                Some(t) => t.clone(),
                None => derive_template(&view.url, &view.version).map_err(edit_err)?,
            };
            if !template.contains("{version}") {
                return Err(edit_err(format!(
                    "the URL template {template:?} has no `{{version}}` placeholder"
                )));
            }
            let url = template.replace("{version}", &req.version);
            match &req.manual {
                Some(m) => (edit.sha256, edit.sha256_source) = (m.sha256.clone(), m.source.clone()),
                None => {
                    let list = req
                        .checksums
                        .as_ref()
                        .map(|c| c.replace("{version}", &req.version));
                    let published = self.published_sha256(&url, list.as_deref()).await?;
                    edit.sha256 = published.sha256;
                    edit.sha256_source = format!("upstream checksum list {}", published.list_url);
                }
            }
            edit.url = Some(url);
            // `kopia-0.22.0-linux-x64/kopia` follows the version too.
            if let (Some(old), Some(member)) = (&view.version, &view.extract_member)
                && !old.is_empty()
                && member.contains(old.as_str())
            {
                edit.extract_member = Some(member.replace(old.as_str(), &req.version));
            }
        }
        if let Some(problem) = crate::spec::rules::sha256_problem(&edit.sha256) {
            return Err(SpecProblem::new("sha256", problem).into());
        }
        let new_text = apply_pin(lab, &edit).map_err(edit_err)?;
        Ok(PinOutcome {
            sha256: edit.sha256,
            sha256_source: edit.sha256_source,
            url: edit.url,
            old_sha256: view.sha256,
            new_text,
        })
    }
}

/// `.../v0.18.0/restic_0.18.0_linux_amd64.bz2` with version `0.18.0` ->
/// `.../v{version}/restic_{version}_linux_amd64.bz2`.
fn derive_template(url: &Option<String>, version: &Option<String>) -> Result<String, String> {
    let url = url
        .as_ref()
        .ok_or("the tool's artifact has no `url:`; give --url-template")?;
    let version = version
        .as_ref()
        .filter(|v| !v.is_empty() && url.contains(v.as_str()))
        .ok_or_else(|| {
            format!(
                "cannot tell where the version is in {url}; give --url-template with {{version}}"
            )
        })?;
    Ok(url.replace(version.as_str(), "{version}"))
}

/// Replaces `path` with `text` atomically (a temporary file beside it,
/// renamed), keeping its permissions.
pub fn write_lab(path: &Path, text: &str) -> Result<(), ArtifactError> {
    let io = |e: std::io::Error| ArtifactError::LabEdit {
        path: path.to_path_buf(),
        problem: format!("cannot write it: {e}"),
    };
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut temp = tempfile::Builder::new()
        .prefix(".labrun-pin-")
        .tempfile_in(dir)
        .map_err(io)?;
    std::io::Write::write_all(&mut temp, text.as_bytes()).map_err(io)?;
    if let Ok(meta) = std::fs::metadata(path) {
        std::fs::set_permissions(temp.path(), meta.permissions()).map_err(io)?;
    }
    temp.as_file().sync_all().map_err(io)?;
    temp.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}
