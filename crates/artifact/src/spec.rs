//! The `artifact:` block of a tool in a lab file.
//!
//! ```yaml
//! artifact:
//!   url: https://github.com/restic/restic/releases/download/v0.19.1/restic_0.19.1_linux_amd64.bz2
//!   sha256: f415415624dcc452f2a02b8c33641791a8c6d6d3b65bbb3543fcf9a25151585c
//!   sha256_source: restic's SHA256SUMS for v0.19.1
//!   extract: bz2
//! ```
//! Exactly one of `url`, `file`, `apt` names the source.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactSpec {
    /// `https://` or `http://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A local path (`file://` prefix optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// A package the host's apt can download by name and version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apt: Option<AptPackage>,
    /// SHA-256 of the downloaded file, 64 lowercase hex digits.
    pub sha256: String,
    /// Where the digest was taken from (provenance, for reviewers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256_source: Option<String>,
    /// How to get the binary out of the file.
    #[serde(default)]
    pub extract: Extract,
    /// SHA-256 of the extracted binary, when pinned; otherwise it is computed
    /// at fetch time and recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary_sha256: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AptPackage {
    pub package: String,
    pub version: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Extract {
    /// The file is the binary.
    #[default]
    Raw,
    /// A bzip2-compressed binary.
    Bz2,
    /// A gzip-compressed binary.
    Gz,
    /// A member of a `.tar.gz`, `.tar.xz` or `.tar.zst` (path inside the archive).
    Tar(String),
    /// A member of a `.deb`'s `data.tar.*` (e.g. `usr/bin/restic`).
    DebMember(String),
    /// The whole `.deb`, installed in the guest with `dpkg -i`; the string is
    /// the path of the binary it installs (e.g. `/usr/bin/kopia`).
    DebInstall(String),
}

use crate::digest::is_sha256_hex;
use crate::error::ArtifactError;
use crate::source::FileName;
use std::path::{Component, Path, PathBuf};

/// The one source an artifact names, resolved from the three optional keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceRef<'a> {
    Url(&'a str),
    File(PathBuf),
    Apt(&'a AptPackage),
}

impl ArtifactSpec {
    /// Checks the block on its own (no I/O): one source, well-formed digests,
    /// an extraction that fits the source. The first problem found is returned,
    /// with the field it is about, so the lab loader can point at the line.
    pub fn validate(&self) -> Result<(), ArtifactError> {
        let spec_err = |field, problem: String| ArtifactError::Spec { field, problem };
        if !is_sha256_hex(&self.sha256) {
            return Err(spec_err(
                "sha256",
                format!(
                    "must be 64 lowercase hex digits, got {:?} ({} characters)",
                    self.sha256,
                    self.sha256.len()
                ),
            ));
        }
        if let Some(b) = &self.binary_sha256
            && !is_sha256_hex(b)
        {
            return Err(spec_err(
                "binary_sha256",
                format!("must be 64 lowercase hex digits, got {b:?}"),
            ));
        }
        let source = self.source()?;
        match &source {
            SourceRef::Url(url) => {
                let parsed = reqwest::Url::parse(url)
                    .map_err(|e| spec_err("url", format!("{url:?} is not a URL: {e}")))?;
                if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
                    return Err(spec_err(
                        "url",
                        format!("{url:?} must be an http:// or https:// URL with a host"),
                    ));
                }
            }
            SourceRef::File(path) => {
                if path.as_os_str().is_empty() {
                    return Err(spec_err("file", "is empty; give a path to the file".into()));
                }
            }
            SourceRef::Apt(apt) => apt.validate()?,
        }
        // The file name decides mirror look-ups and the cache layout.
        self.file_name()?;
        match &self.extract {
            Extract::Raw | Extract::Bz2 | Extract::Gz => {}
            Extract::Tar(member) | Extract::DebMember(member) => {
                if member.trim_start_matches("./").is_empty()
                    || member.starts_with('/')
                    || Path::new(member)
                        .components()
                        .any(|c| matches!(c, Component::ParentDir))
                {
                    return Err(spec_err(
                        "extract",
                        format!(
                            "member {member:?} must be a relative path inside the archive \
                             (e.g. usr/bin/restic), without `..`"
                        ),
                    ));
                }
            }
            Extract::DebInstall(binary) => {
                if !binary.starts_with('/') || binary.len() < 2 {
                    return Err(spec_err(
                        "extract",
                        format!(
                            "deb-install needs the absolute path of the binary the package \
                             installs (e.g. /usr/bin/kopia), got {binary:?}"
                        ),
                    ));
                }
            }
        }
        if matches!(source, SourceRef::Apt(_))
            && !matches!(self.extract, Extract::DebMember(_) | Extract::DebInstall(_))
        {
            return Err(spec_err(
                "extract",
                "an apt source is a .deb: use `deb-member: usr/bin/TOOL` or \
                 `deb-install: /usr/bin/TOOL`"
                    .into(),
            ));
        }
        Ok(())
    }

    /// The one source named by `url`, `file` or `apt`.
    pub fn source(&self) -> Result<SourceRef<'_>, ArtifactError> {
        let mut found = Vec::new();
        if let Some(u) = &self.url {
            found.push(SourceRef::Url(u));
        }
        if let Some(f) = &self.file {
            let path = f.strip_prefix("file://").unwrap_or(f);
            found.push(SourceRef::File(PathBuf::from(path)));
        }
        if let Some(a) = &self.apt {
            found.push(SourceRef::Apt(a));
        }
        match found.len() {
            1 => Ok(found.remove(0)),
            0 => Err(ArtifactError::Spec {
                field: "url",
                problem: "is missing: an artifact needs exactly one of `url`, `file`, `apt`".into(),
            }),
            _ => Err(ArtifactError::Spec {
                field: "url",
                problem: "and `file`/`apt` are both set: an artifact needs exactly one source"
                    .into(),
            }),
        }
    }

    /// The name the file has in a mirror folder and in the cache.
    pub fn file_name(&self) -> Result<FileName, ArtifactError> {
        let bad = |field, what: &str| ArtifactError::Spec {
            field,
            problem: format!("{what} does not end in a file name"),
        };
        match self.source()? {
            SourceRef::Url(url) => {
                let parsed = reqwest::Url::parse(url).map_err(|e| ArtifactError::Spec {
                    field: "url",
                    problem: format!("{url:?} is not a URL: {e}"),
                })?;
                let last = parsed
                    .path_segments()
                    .and_then(|mut s| s.next_back())
                    .unwrap_or("");
                FileName::exact(last).ok_or_else(|| bad("url", url))
            }
            SourceRef::File(path) => path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(FileName::exact)
                .ok_or_else(|| bad("file", &path.display().to_string())),
            SourceRef::Apt(apt) => Ok(FileName::apt_deb(&apt.package, &apt.version)),
        }
    }
}

impl AptPackage {
    /// Debian's rules for package names and versions, so a typo is caught
    /// before apt is run (and nothing odd reaches its command line).
    pub fn validate(&self) -> Result<(), ArtifactError> {
        let name_ok = self.package.len() >= 2
            && self.package.bytes().enumerate().all(|(i, b)| {
                b.is_ascii_lowercase()
                    || b.is_ascii_digit()
                    || (i > 0 && matches!(b, b'+' | b'-' | b'.'))
            });
        if !name_ok {
            return Err(ArtifactError::Spec {
                field: "apt",
                problem: format!(
                    "package {:?} is not a Debian package name (lowercase letters, digits, + - .)",
                    self.package
                ),
            });
        }
        let version_ok = !self.version.is_empty()
            && self.version.as_bytes()[0].is_ascii_digit()
            && self.version.bytes().all(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'.' | b'+' | b'-' | b'~' | b':')
            });
        if !version_ok {
            return Err(ArtifactError::Spec {
                field: "apt",
                problem: format!(
                    "version {:?} is not a Debian version (see `apt-cache policy {}`)",
                    self.version, self.package
                ),
            });
        }
        Ok(())
    }
}
