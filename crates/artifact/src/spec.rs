//! The `artifact:` block of a tool in a lab file.
//!
//! ```yaml
//! artifact:
//!   url: https://github.com/restic/restic/releases/download/v0.19.1/restic_0.19.1_linux_amd64.bz2
//!   sha256: f415415624dcc452f2a02b8c33641791a8c6d6d3b65bbb3543fcf9a25151585c
//!   sha256_source: restic's SHA256SUMS for v0.19.1
//!   extract: bz2
//! ```
//! Exactly one of `url`, `file`, `apt`, `go`, `crate` names the source. The
//! last two are built from pinned source code on the host ([`crate::build`]);
//! their `sha256` is the digest of the binary the build produces.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    /// A Go module built at a pinned version with a pinned toolchain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub go: Option<GoBuild>,
    /// A crates.io crate built with `cargo install --locked`.
    #[serde(default, rename = "crate", skip_serializing_if = "Option::is_none")]
    pub cargo: Option<CrateBuild>,
    /// SHA-256 of the downloaded file (of the built binary for `go`/`crate`), 64 lowercase hex digits.
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
    /// The Debian suite to take it from (`trixie`, `sid`, ...) when it is not
    /// the host's own: the host's archive is asked for that suite through a
    /// sources list and package lists of labrun's own ([`crate::apt`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite: Option<String>,
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

pub use crate::build::{CrateBuild, GoBuild};
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
    Go(&'a GoBuild),
    Crate(&'a CrateBuild),
}

impl SourceRef<'_> {
    /// True for sources that are built on the host rather than fetched.
    pub fn is_build(&self) -> bool {
        matches!(self, SourceRef::Go(_) | SourceRef::Crate(_))
    }
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
            SourceRef::Go(go) => go.validate()?,
            SourceRef::Crate(c) => c.validate()?,
        }
        if source.is_build() {
            if self.extract != Extract::Raw {
                return Err(spec_err(
                    "extract",
                    "a built binary is used as it is: leave `extract` out".into(),
                ));
            }
            if self.binary_sha256.is_some() {
                return Err(spec_err(
                    "binary_sha256",
                    "is not used for a build: `sha256` is already the built binary's digest".into(),
                ));
            }
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
        if let Some(g) = &self.go {
            found.push(SourceRef::Go(g));
        }
        if let Some(c) = &self.cargo {
            found.push(SourceRef::Crate(c));
        }
        match found.len() {
            1 => Ok(found.remove(0)),
            0 => Err(ArtifactError::Spec {
                field: "url",
                problem:
                    "is missing: an artifact needs exactly one of `url`, `file`, `apt`, `go`, \
                          `crate`"
                        .into(),
            }),
            _ => Err(ArtifactError::Spec {
                field: "url",
                problem: "and `file`/`apt`/`go`/`crate` are both set: an artifact needs exactly \
                          one source"
                    .into(),
            }),
        }
    }

    /// Where the binary comes from, in one line for people and evidence:
    /// the URL, the file, the apt package and suite, or the build with its
    /// toolchain and flags.
    pub fn provenance(&self) -> String {
        match self.source() {
            Ok(SourceRef::Url(u)) => format!("download {u}"),
            Ok(SourceRef::File(f)) => format!("file {}", f.display()),
            Ok(SourceRef::Apt(a)) => format!(
                "apt package {}={} from Debian {}",
                a.package,
                a.version,
                a.suite
                    .as_deref()
                    .map(|s| format!("suite {s} (the host's archive)"))
                    .unwrap_or_else(|| "as the host's apt sources serve it".into())
            ),
            Ok(SourceRef::Go(g)) => {
                let mut line = format!(
                    "go build of module {}@{} (sum {}), package {}, toolchain {}, \
                     CGO_ENABLED=0 GOAMD64=v1 -trimpath",
                    g.module, g.version, g.sum, g.package, g.toolchain
                );
                if !g.tags.is_empty() {
                    line.push_str(&format!(", tags {}", g.tags.join(",")));
                }
                if let Some(l) = &g.ldflags {
                    line.push_str(&format!(", ldflags '{l}'"));
                }
                line
            }
            Ok(SourceRef::Crate(c)) => {
                let mut line = format!(
                    "cargo install --locked {}@={} --bin {}, rustc {}, target-cpu x86-64",
                    c.name, c.version, c.binary, c.toolchain
                );
                if c.no_default_features {
                    line.push_str(", no default features");
                }
                if !c.features.is_empty() {
                    line.push_str(&format!(", features {}", c.features.join(",")));
                }
                line
            }
            Err(_) => "(no single source)".into(),
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
            SourceRef::Go(go) => {
                FileName::exact(go.binary_name()).ok_or_else(|| bad("go", &go.module))
            }
            SourceRef::Crate(c) => FileName::exact(&c.binary).ok_or_else(|| bad("crate", &c.name)),
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
        if let Some(suite) = &self.suite
            && !is_suite_name(suite)
        {
            return Err(ArtifactError::Spec {
                field: "apt",
                problem: format!(
                    "suite {suite:?} is not a Debian suite name (e.g. bookworm, trixie, sid)"
                ),
            });
        }
        Ok(())
    }
}

/// A Debian suite or codename: lowercase letters, digits and `-`.
pub fn is_suite_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 40
        && s.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}
