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
