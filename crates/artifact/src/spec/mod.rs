//! The `artifact:` block of a tool in a lab file.
//!
//! ```yaml
//! artifact:
//!   url: https://github.com/restic/restic/releases/download/v0.19.1/restic_0.19.1_linux_amd64.bz2
//!   sha256: f415415624dcc452f2a02b8c33641791a8c6d6d3b65bbb3543fcf9a25151585c
//!   sha256_source: restic's SHA256SUMS for v0.19.1
//!   extract: bz2
//! ```
//! Exactly one of `url`, `file`, `apt`, `go`, `crate`, `source` names the
//! source ([`ArtifactSource`]). The last three are built from pinned source
//! code on the host ([`crate::build`]); their `sha256` is the digest of the
//! binary the build produces. Every rule of the block is in [`rules`].

mod apt;
pub mod rules;

pub use crate::build::{BuildRecipe, CrateBuild, GoBuild, PythonBuild, SourceBuild};
pub use apt::AptPackage;
pub use rules::SpecProblem;

use crate::source::FileName;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// An `artifact:` block. Read from and written as the lab file's form
/// ([`RawSpec`]): one key per source kind beside `sha256`, `extract`, ...;
/// a block with no source or with two is refused while it is read, at the
/// block's line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawSpec", into = "RawSpec")]
pub struct ArtifactSpec {
    /// Where the bytes come from.
    pub source: ArtifactSource,
    /// SHA-256 of the downloaded file (of the built binary for a build), 64 lowercase hex digits.
    pub sha256: String,
    /// Where the digest was taken from (provenance, for reviewers).
    pub sha256_source: Option<String>,
    /// How to get the binary out of the file.
    pub extract: Extract,
    /// SHA-256 of the extracted binary, when pinned; otherwise it is computed
    /// at fetch time and recorded.
    pub binary_sha256: Option<String>,
}

/// Where an artifact's bytes come from: exactly one source, by construction.
///
/// A new source kind touches these files (the compiler points at each
/// match that needs its arm):
/// - a build from source (`git`, a source `archive`): `build/<kind>.rs`
///   (new: the recipe, its rules, its provenance), `build/mod.rs` (the
///   [`BuildRecipe`] variant and its arms) and this file (the lab-file key
///   in [`RawSpec`] and its two conversions): 3 files;
/// - a file fetched another way: `spec/<kind>.rs` (new: its fields, rules
///   and provenance), this file (the variant, the key in [`RawSpec`], the
///   conversions and the arms below), `fetcher.rs` (how it is fetched) and
///   `resolve.rs` (how `labrun check` finds it offline): 4 files.
///
/// Outside this crate a kind is still named where what it needs is not yet
/// a method of its own (issue 48): a Python package's guest packages and
/// suite (`src/lab_vm.rs`, labrun-lab's `python_suite.rs` and `plan.rs`),
/// a Go module's `sum` in a series (`series.rs`), what `pin --series`
/// asks of each source (`src/commands/pin_series.rs`) and the git source
/// `bisect` walks (`src/commands/bisect.rs`, `src/bisect/lab_probe.rs`).
/// A new kind is matched there too until those become methods here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArtifactSource {
    /// `url:` an `https://` or `http://` URL of the file.
    Url(String),
    /// `file:` a local path, as written (a `file://` prefix is allowed;
    /// [`local_path`] strips it).
    File(String),
    /// `apt:` a package the host's apt downloads by name and version.
    Apt(AptPackage),
    /// `go:`, `crate:` or `source:` a binary built on the host from pinned source.
    Build(BuildRecipe),
}

/// The lab-file keys of the sources, in the order messages list them.
pub const SOURCE_KEYS: &[&str] = &["url", "file", "apt", "go", "crate", "source", "python"];

impl ArtifactSource {
    /// The lab-file key that names this source (`url`, `apt`, `go`, ...),
    /// the start of the field path of its problems.
    pub fn key(&self) -> &'static str {
        match self {
            ArtifactSource::Url(_) => "url",
            ArtifactSource::File(_) => "file",
            ArtifactSource::Apt(_) => "apt",
            ArtifactSource::Build(recipe) => recipe.key(),
        }
    }

    /// True for sources that are built on the host rather than fetched.
    pub fn is_build(&self) -> bool {
        matches!(self, ArtifactSource::Build(_))
    }

    /// The source's own rules, at field paths below the block (`url`,
    /// `apt.package`, `go.module`, ...).
    pub fn problems(&self) -> Vec<SpecProblem> {
        let at_key = |message: Option<String>| {
            message
                .map(|m| SpecProblem::new(self.key(), m))
                .into_iter()
                .collect()
        };
        match self {
            ArtifactSource::Url(url) => at_key(rules::url_problem(url)),
            ArtifactSource::File(file) => at_key(rules::file_problem(file)),
            ArtifactSource::Apt(apt) => {
                apt.problems().into_iter().map(|p| p.under("apt")).collect()
            }
            ArtifactSource::Build(recipe) => recipe.problems(),
        }
    }

    /// Where the binary comes from, in one line for people and evidence:
    /// the URL, the file, the apt package and suite, or the build with its
    /// toolchain and flags.
    pub fn provenance(&self) -> String {
        match self {
            ArtifactSource::Url(url) => format!("download {}", crate::without_credentials(url)),
            ArtifactSource::File(file) => format!("file {}", local_path(file).display()),
            ArtifactSource::Apt(apt) => apt.provenance(),
            ArtifactSource::Build(recipe) => recipe.provenance(),
        }
    }

    /// The name the file has in a mirror folder and in the cache; `None`
    /// when the source does not end in one (a rule reports that).
    pub fn file_name(&self) -> Option<FileName> {
        match self {
            ArtifactSource::Url(url) => {
                let parsed = reqwest::Url::parse(url).ok()?;
                let last = parsed.path_segments()?.next_back()?;
                FileName::exact(last)
            }
            ArtifactSource::File(file) => local_path(file)
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(FileName::exact),
            ArtifactSource::Apt(apt) => Some(FileName::apt_deb(&apt.package, &apt.version)),
            ArtifactSource::Build(recipe) => FileName::exact(recipe.binary_name()),
        }
    }
}

/// A `file:` source's path: the text as written, without a `file://` prefix.
pub fn local_path(written: &str) -> PathBuf {
    PathBuf::from(written.strip_prefix("file://").unwrap_or(written))
}

impl ArtifactSpec {
    /// A block with this source and digest, and nothing else set.
    pub fn new(source: ArtifactSource, sha256: impl Into<String>) -> ArtifactSpec {
        ArtifactSpec {
            source,
            sha256: sha256.into(),
            sha256_source: None,
            extract: Extract::Raw,
            binary_sha256: None,
        }
    }

    /// Where the binary comes from, in one line (see [`ArtifactSource::provenance`]).
    pub fn provenance(&self) -> String {
        self.source.provenance()
    }

    /// The name the file has in a mirror folder and in the cache.
    pub fn file_name(&self) -> Result<FileName, crate::ArtifactError> {
        self.source
            .file_name()
            .ok_or_else(|| crate::ArtifactError::Spec {
                field: self.source.key().to_string(),
                problem: "does not end in a file name".into(),
            })
    }
}

/// The block as the lab file writes it: one optional key per source kind.
/// Only this form meets serde, so the file's syntax (and
/// `deny_unknown_fields`, and the field list a typo is told about) is the
/// one the lab format has always had.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    apt: Option<AptPackage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    go: Option<GoBuild>,
    #[serde(default, rename = "crate", skip_serializing_if = "Option::is_none")]
    cargo: Option<CrateBuild>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    source: Option<SourceBuild>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    python: Option<PythonBuild>,
    sha256: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sha256_source: Option<String>,
    #[serde(default)]
    extract: Extract,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    binary_sha256: Option<String>,
}

impl TryFrom<RawSpec> for ArtifactSpec {
    type Error = String;

    fn try_from(raw: RawSpec) -> Result<ArtifactSpec, String> {
        let given: Vec<ArtifactSource> = [
            raw.url.map(ArtifactSource::Url),
            raw.file.map(ArtifactSource::File),
            raw.apt.map(ArtifactSource::Apt),
            raw.go.map(|g| ArtifactSource::Build(BuildRecipe::Go(g))),
            raw.cargo
                .map(|c| ArtifactSource::Build(BuildRecipe::Crate(c))),
            raw.source
                .map(|s| ArtifactSource::Build(BuildRecipe::Source(s))),
            raw.python
                .map(|p| ArtifactSource::Build(BuildRecipe::Python(Box::new(p)))),
        ]
        .into_iter()
        .flatten()
        .collect();
        let one_of = SOURCE_KEYS
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let source = match <[ArtifactSource; 1]>::try_from(given) {
            Ok([source]) => source,
            Err(given) if given.is_empty() => {
                return Err(
                    "no source: give exactly one of `url: https://...`, `file: PATH`, \
                     `apt: {package: NAME, version: VERSION}`, `go: {module: ..., version: ...}`, \
                     `crate: {name: ..., version: ...}`, `source: {archive: ..., tree: ..., \
                     build: ...}` or `python: {name: ..., version: ..., ...}`"
                        .into(),
                );
            }
            Err(given) => {
                let keys: Vec<&str> = given.iter().map(ArtifactSource::key).collect();
                return Err(format!(
                    "more than one source ({}): give exactly one of {one_of}",
                    keys.join(", ")
                ));
            }
        };
        Ok(ArtifactSpec {
            source,
            sha256: raw.sha256,
            sha256_source: raw.sha256_source,
            extract: raw.extract,
            binary_sha256: raw.binary_sha256,
        })
    }
}

impl From<ArtifactSpec> for RawSpec {
    fn from(spec: ArtifactSpec) -> RawSpec {
        let mut raw = RawSpec {
            url: None,
            file: None,
            apt: None,
            go: None,
            cargo: None,
            source: None,
            python: None,
            sha256: spec.sha256,
            sha256_source: spec.sha256_source,
            extract: spec.extract,
            binary_sha256: spec.binary_sha256,
        };
        match spec.source {
            ArtifactSource::Url(url) => raw.url = Some(url),
            ArtifactSource::File(file) => raw.file = Some(file),
            ArtifactSource::Apt(apt) => raw.apt = Some(apt),
            ArtifactSource::Build(BuildRecipe::Go(go)) => raw.go = Some(go),
            ArtifactSource::Build(BuildRecipe::Crate(c)) => raw.cargo = Some(c),
            ArtifactSource::Build(BuildRecipe::Source(s)) => raw.source = Some(s),
            ArtifactSource::Build(BuildRecipe::Python(p)) => raw.python = Some(*p),
        }
        raw
    }
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

impl Extract {
    /// `extract: raw`, `extract: {tar: kopia}`... as the user wrote it.
    pub fn as_written(&self) -> String {
        match self {
            Extract::Raw => "`extract: raw` (the default)".into(),
            Extract::Bz2 => "`extract: bz2`".into(),
            Extract::Gz => "`extract: gz`".into(),
            Extract::Tar(m) => format!("`extract: {{tar: {m}}}`"),
            Extract::DebMember(m) => format!("`extract: {{deb-member: {m}}}`"),
            Extract::DebInstall(b) => format!("`extract: {{deb-install: {b}}}`"),
        }
    }

    /// True for the two ways out of a `.deb`.
    pub fn is_deb(&self) -> bool {
        matches!(self, Extract::DebMember(_) | Extract::DebInstall(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A download's provenance (printed by `fetch`, kept in the evidence)
    /// never carries the credentials its URL was written with.
    #[test]
    fn a_download_s_provenance_hides_the_url_s_credentials() {
        let source = ArtifactSource::Url("https://user:TOKEN@example.invalid/t.bz2".into());
        let shown = source.provenance();
        assert!(!shown.contains("TOKEN"), "{shown}");
        assert_eq!(shown, "download https://<redacted>@example.invalid/t.bz2");
    }

    /// A block reads into the sum type and writes back as the same keys
    /// (what `labrun pin` and the evidence rely on), for every kind.
    #[test]
    fn every_kind_round_trips_through_the_lab_form() {
        let sha = "ab".repeat(32);
        let blocks = [
            format!(
                r#"{{"url":"https://example.invalid/t.bz2","sha256":"{sha}","extract":"bz2"}}"#
            ),
            format!(
                r#"{{"file":"file:///srv/t","sha256":"{sha}","extract":"raw","binary_sha256":"{sha}"}}"#
            ),
            format!(
                r#"{{"apt":{{"package":"borgbackup","version":"1.4.5-1","suite":"sid"}},"sha256":"{sha}","sha256_source":"apt","extract":{{"deb-install":"/usr/bin/borg"}}}}"#
            ),
            format!(
                r#"{{"go":{{"module":"github.com/kopia/kopia","version":"v0.23.1","sum":"h1:x","package":".","toolchain":"go1.26.8","tags":["a"]}},"sha256":"{sha}","extract":"raw"}}"#
            ),
            format!(
                r#"{{"crate":{{"name":"rustic-rs","version":"0.11.4","binary":"rustic","toolchain":"1.95.0","no_default_features":true}},"sha256":"{sha}","extract":"raw"}}"#
            ),
            format!(
                r#"{{"source":{{"git":{{"repo":"/srv/hello.git","commit":"{commit}"}},"tree":"{tree}","build":{{"go":{{"package":"./cmd/hello","toolchain":"go1.26.8"}}}}}},"sha256":"{sha}","extract":"raw"}}"#,
                commit = "c".repeat(40),
                tree = "d".repeat(40)
            ),
            format!(
                r#"{{"python":{{"name":"attic","version":"0.16","sdist_sha256":"{sha}","suite":"bookworm","python":">=3.4,<3.12","entry_point":"attic","patches":[{{"path":"labs/patches/a.patch","sha256":"{sha}"}}],"remove_files":["attic/chunker.c"],"build_requires":[{{"name":"cython","version":"0.29.37","sha256":"{sha}"}}],"requires":[{{"name":"msgpack-python","version":"0.5.6","sha256":"{sha}"}}],"build_packages":["libssl-dev"]}},"sha256":"{sha}","extract":"raw"}}"#
            ),
        ];
        let kinds = ["url", "file", "apt", "go", "crate", "source", "python"];
        for (block, kind) in blocks.iter().zip(kinds) {
            let spec: ArtifactSpec = serde_json::from_str(block).unwrap();
            assert_eq!(spec.source.key(), kind);
            assert_eq!(&serde_json::to_string(&spec).unwrap(), block);
        }
    }

    #[test]
    fn a_block_names_exactly_one_source() {
        let none = serde_json::from_str::<ArtifactSpec>(r#"{"sha256":"x"}"#).unwrap_err();
        assert!(none.to_string().starts_with("no source"), "{none}");
        let two = serde_json::from_str::<ArtifactSpec>(
            r#"{"url":"https://a/b","file":"/b","sha256":"x"}"#,
        )
        .unwrap_err();
        assert!(
            two.to_string()
                .starts_with("more than one source (url, file)"),
            "{two}"
        );
        let typo = serde_json::from_str::<ArtifactSpec>(r#"{"ur":"x","sha256":"x"}"#).unwrap_err();
        assert!(typo.to_string().contains("unknown field `ur`"), "{typo}");
    }
}
