//! A binary built from a source tree: a source archive or a git commit,
//! pinned by the tree's git id, then built with Go or cargo.
//!
//! ```yaml
//! artifact:
//!   source:
//!     archive: {url: https://github.com/gilbertchen/duplicacy/archive/065ae50868574404c502fb8b9508a2475d218337.tar.gz,
//!               name: duplicacy-065ae50.tar.gz}   # its name in a --mirror folder and the cache
//!     # or: git: {repo: <URL or local path>, commit: <40 hex>}
//!     tree: 7b918db8b537055153778f6d9d2360c47ab47cab   # the source's git tree id: the pin
//!     build:
//!       go: {package: ./duplicacy, toolchain: go1.26.8, ldflags: -s -w}
//!       # or: cargo: {toolchain: 1.95.0, bin: rustic, features: [...]}
//!   sha256: <the built binary's SHA-256>
//! ```
//!
//! The source's identity is its tree id, which an archive and a checkout of
//! the same commit share: an archive's own `sha256` is optional (a forge's
//! archive bytes change when it recompresses them; the tree does not), and
//! checked when given. The tree is compared with the pin before anything
//! builds ([`fetch`]). Dependencies come from the module proxy or the
//! registry, checked by the source's own go.sum or Cargo.lock; the build
//! settings are the module and crate recipes' own ([`super::go`],
//! [`super::rust_crate`]). The cache key holds the tree, the build fields
//! and the toolchain, not the URL: the same tree from an archive, a mirror
//! or a git checkout is one cached build.

mod fetch;
pub mod git_cache;

use super::go::{GoFlags, go_build, go_flag_problems, go_toolchain};
use super::rust_crate::{cargo_env, cargo_flag_problems, rustc_toolchain};
use super::tree_id::is_object_id;
use super::{BuildCtx, Recipe};
use crate::error::ArtifactError;
use crate::source::FileName;
use crate::spec::rules::{file_problem, git_repo_problem, sha256_problem, url_problem};
use crate::spec::{SpecProblem, local_path};
use crate::url_credentials::without_credentials;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A `source:` recipe: where the tree comes from, its pinned id, how it builds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawSource", into = "RawSource")]
pub struct SourceBuild {
    pub origin: SourceOrigin,
    /// The git tree id of the source (40 hex digits). Required for an
    /// archive; for a git commit, which names its tree already, checked
    /// when given.
    pub tree: Option<String>,
    pub build: SourceToolchain,
}

/// Where the source tree comes from: exactly one, by construction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceOrigin {
    Archive(SourceArchive),
    Git(GitSource),
}

/// A source archive (tar, tar.gz/xz/zst, zip), fetched like any artifact
/// file; its one top-level folder (a forge's `project-commit/`) is the tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawArchive", into = "RawArchive")]
pub struct SourceArchive {
    pub location: ArchiveLocation,
    /// Its file name in a `--mirror` folder and in the cache; by default
    /// the URL's or path's last element.
    pub name: Option<String>,
    /// The archive file's own SHA-256, checked when given.
    pub sha256: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArchiveLocation {
    /// `url:` an `https://` or `http://` URL.
    Url(String),
    /// `file:` a local path (a `file://` prefix is allowed).
    File(String),
}

/// A commit of a git repository that git can reach: a URL or a local path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GitSource {
    pub repo: String,
    /// The full commit id (a branch or tag moves; an id does not).
    pub commit: String,
}

/// How the tree is built: exactly one toolchain, by construction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceToolchain {
    Go(SourceGo),
    Cargo(SourceCargo),
}

/// `go build` of a package of the tree's module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceGo {
    /// The main package (`./duplicacy`, `./cmd/restic`, or `.`).
    #[serde(default = "dot")]
    pub package: String,
    /// As `GOTOOLCHAIN` names it (`go1.26.8`).
    pub toolchain: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ldflags: Option<String>,
    /// The binary's name; by default the package's last element (required
    /// for `.`, whose name the tree does not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<String>,
}

fn dot() -> String {
    ".".into()
}

/// `cargo build --release --locked` of a binary of the tree's package or
/// workspace, against its own Cargo.lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceCargo {
    /// The rustc release, as `rustc --version` prints it (`1.95.0`).
    pub toolchain: String,
    /// The binary target to build (`--bin`).
    pub bin: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub features: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_default_features: bool,
}

impl SourceArchive {
    /// The file's name in a mirror folder and the cache.
    pub fn file_name(&self) -> Option<String> {
        if let Some(n) = &self.name {
            return Some(n.clone());
        }
        let last = match &self.location {
            ArchiveLocation::Url(url) => reqwest::Url::parse(url)
                .ok()?
                .path_segments()?
                .next_back()?
                .to_string(),
            ArchiveLocation::File(f) => local_path(f).file_name()?.to_str()?.to_string(),
        };
        FileName::exact(&last).map(|_| last)
    }

    fn shown(&self) -> String {
        match &self.location {
            ArchiveLocation::Url(url) => url.clone(),
            ArchiveLocation::File(f) => local_path(f).display().to_string(),
        }
    }
}

impl GitSource {
    /// The repository as shown and kept: without credentials in its URL.
    pub fn shown(&self) -> String {
        without_credentials(&self.repo).into_owned()
    }
}

impl SourceOrigin {
    fn key(&self) -> &'static str {
        match self {
            SourceOrigin::Archive(_) => "archive",
            SourceOrigin::Git(_) => "git",
        }
    }

    /// One line for people: `archive https://...` or `git REPO commit C`.
    fn shown(&self) -> String {
        match self {
            SourceOrigin::Archive(a) => format!("archive {}", a.shown()),
            SourceOrigin::Git(g) => format!("git {} commit {}", g.shown(), g.commit),
        }
    }
}

impl SourceBuild {
    /// Shapes only (no I/O), at field paths below `source`.
    pub fn problems(&self) -> Vec<SpecProblem> {
        let mut out = Vec::new();
        match &self.origin {
            SourceOrigin::Archive(a) => {
                let mut own = Vec::new();
                match &a.location {
                    ArchiveLocation::Url(u) => {
                        own.extend(url_problem(u).map(|m| SpecProblem::new("url", m)))
                    }
                    ArchiveLocation::File(f) => {
                        own.extend(file_problem(f).map(|m| SpecProblem::new("file", m)))
                    }
                }
                if let Some(n) = &a.name
                    && !is_archive_name(n)
                {
                    own.push(SpecProblem::new(
                        "name",
                        format!(
                            "{n:?} must be a plain file name such as duplicacy-065ae50.tar.gz \
                             (letters, digits, `.`, `-`, `_`, `+`)"
                        ),
                    ));
                }
                if let Some(m) = a.sha256.as_deref().and_then(sha256_problem) {
                    own.push(SpecProblem::new("sha256", m));
                }
                out.extend(own.into_iter().map(|p| p.under("archive")));
                if self.tree.is_none() {
                    out.push(SpecProblem::new(
                        "tree",
                        "an archive is pinned by its git tree id: give `tree: <40 hex digits>` \
                         (in the unpacked tree, `git init && git add -A -f && git write-tree` \
                         prints it; a forge's archive of commit C has the tree of \
                         `git rev-parse C^{tree}`)",
                    ));
                }
            }
            SourceOrigin::Git(g) => {
                if let Some(m) = git_repo_problem(&g.repo) {
                    out.push(SpecProblem::new("git.repo", m));
                }
                if !is_object_id(&g.commit) {
                    out.push(SpecProblem::new(
                        "git.commit",
                        format!(
                            "{:?} is not a commit id: expected the full 40 lowercase hex digits \
                             (`git rev-parse TAG^{{commit}}` prints it); a branch or tag can move",
                            g.commit
                        ),
                    ));
                }
            }
        }
        if let Some(t) = &self.tree
            && !is_object_id(t)
        {
            out.push(SpecProblem::new(
                "tree",
                format!("{t:?} is not a git tree id: expected 40 lowercase hex digits"),
            ));
        }
        let build = match &self.build {
            SourceToolchain::Go(g) => {
                let mut p = go_flag_problems(
                    &g.package,
                    &g.toolchain,
                    &g.tags,
                    g.ldflags.as_deref(),
                    g.binary.as_deref(),
                );
                if g.package == "." && g.binary.is_none() {
                    p.push(SpecProblem::new(
                        "binary",
                        "the package `.` does not say the binary's name: give `binary: NAME`",
                    ));
                }
                p.into_iter().map(|p| p.under("go")).collect::<Vec<_>>()
            }
            SourceToolchain::Cargo(c) => {
                cargo_flag_problems(&c.toolchain, ("bin", &c.bin), &c.features)
                    .into_iter()
                    .map(|p| p.under("cargo"))
                    .collect()
            }
        };
        out.extend(build.into_iter().map(|p| p.under("build")));
        out
    }

    /// The build in one line for evidence.
    pub fn provenance(&self) -> String {
        let tree = self.tree.as_deref().unwrap_or("of the commit");
        let from = self.origin.shown();
        match &self.build {
            SourceToolchain::Go(g) => {
                let mut line = format!(
                    "go build of source tree {tree} ({from}), package {}, toolchain {}, \
                     CGO_ENABLED=0 GOAMD64=v1 -trimpath -mod=readonly",
                    g.package, g.toolchain
                );
                if !g.tags.is_empty() {
                    line.push_str(&format!(", tags {}", g.tags.join(",")));
                }
                if let Some(l) = &g.ldflags {
                    line.push_str(&format!(", ldflags '{l}'"));
                }
                line
            }
            SourceToolchain::Cargo(c) => {
                let mut line = format!(
                    "cargo build --release --locked --bin {} of source tree {tree} ({from}), \
                     rustc {}, target-cpu x86-64",
                    c.bin, c.toolchain
                );
                if c.no_default_features {
                    line.push_str(", no default features");
                }
                if !c.features.is_empty() {
                    line.push_str(&format!(", features {}", c.features.join(",")));
                }
                line
            }
        }
    }

    pub fn binary_name(&self) -> &str {
        match &self.build {
            SourceToolchain::Go(g) => g.binary.as_deref().unwrap_or_else(|| {
                g.package
                    .trim_end_matches('/')
                    .rsplit('/')
                    .next()
                    .unwrap_or(&g.package)
            }),
            SourceToolchain::Cargo(c) => &c.bin,
        }
    }

    /// The cache key's fields for a known tree: the tree and the build,
    /// never where the tree came from.
    fn inputs_for(&self, tree: &str) -> serde_json::Value {
        serde_json::json!({"source": {"tree": tree, "build": self.build}})
    }
}

/// A mirror or cache file name: one plain word that is a file's name.
fn is_archive_name(name: &str) -> bool {
    super::is_plain_word(name, b"._-+") && FileName::exact(name).is_some()
}

impl Recipe for SourceBuild {
    fn describe(&self) -> String {
        let tree = self.tree.as_deref().unwrap_or("of the commit");
        let from = match &self.origin {
            SourceOrigin::Archive(a) => a.file_name().unwrap_or_else(|| a.shown()),
            SourceOrigin::Git(g) => {
                let short = g.commit.get(..12).unwrap_or(&g.commit);
                format!("{}@{short}", g.shown())
            }
        };
        match &self.build {
            SourceToolchain::Go(g) => format!(
                "go build {} of source tree {tree} ({from}) with {}",
                g.package, g.toolchain
            ),
            SourceToolchain::Cargo(c) => format!(
                "cargo build --bin {} of source tree {tree} ({from}) with rustc {}",
                c.bin, c.toolchain
            ),
        }
    }

    fn binary_name(&self) -> &str {
        SourceBuild::binary_name(self)
    }

    fn inputs(&self) -> serde_json::Value {
        self.inputs_for(self.tree.as_deref().unwrap_or_default())
    }

    async fn key_inputs(&self, ctx: &mut BuildCtx<'_>) -> Result<serde_json::Value, ArtifactError> {
        let tree = match (&self.tree, &self.origin) {
            (Some(tree), _) => tree.clone(),
            // A commit pinned alone: its tree is the key (the same tree from
            // an archive is the same build).
            (None, SourceOrigin::Git(git)) => fetch::git_commit_tree(ctx, git).await?,
            (None, SourceOrigin::Archive(_)) => {
                return Err(ctx.failed(
                    "read the lab",
                    "an archive source needs `tree:` (see `labrun check`)".into(),
                ));
            }
        };
        Ok(self.inputs_for(&tree))
    }

    fn origin(&self) -> Option<serde_json::Value> {
        Some(match &self.origin {
            SourceOrigin::Archive(a) => {
                let (key, at) = match &a.location {
                    ArchiveLocation::Url(u) => ("url", u),
                    ArchiveLocation::File(f) => ("file", f),
                };
                let mut record = serde_json::json!({
                    "kind": "archive",
                    key: at,
                    "name": a.file_name(),
                    "tree": self.tree,
                });
                if let Some(sha) = &a.sha256 {
                    record["sha256"] = sha.clone().into();
                }
                record
            }
            SourceOrigin::Git(g) => serde_json::json!({
                "kind": "git",
                "repo": g.shown(),
                "commit": g.commit,
                "tree": self.tree,
            }),
        })
    }

    async fn toolchain(&self, ctx: &BuildCtx<'_>) -> Result<String, ArtifactError> {
        match &self.build {
            SourceToolchain::Go(g) => go_toolchain(ctx, &g.toolchain).await,
            SourceToolchain::Cargo(c) => rustc_toolchain(ctx, &c.toolchain).await,
        }
    }

    async fn build(&self, ctx: &mut BuildCtx<'_>, out: &Path) -> Result<String, ArtifactError> {
        // Below `out`, so the cargo build's path remapping covers the tree.
        let root = fetch::verified_tree(ctx, self, &out.join("src")).await?;
        let target = out.join(self.binary_name());
        let info = match &self.build {
            SourceToolchain::Go(g) => {
                let flags = GoFlags {
                    package: &g.package,
                    toolchain: &g.toolchain,
                    tags: &g.tags,
                    ldflags: g.ldflags.as_deref(),
                };
                let where_ = format!("of the source tree ({})", self.origin.key());
                go_build(ctx, &flags, &where_, &root, &target, Some("-mod=readonly")).await?
            }
            SourceToolchain::Cargo(c) => {
                let target_dir = out.join("target");
                let mut cmd = ctx.command("cargo");
                cmd.args(["build", "--release", "--locked", "--bin", &c.bin])
                    .arg("--target-dir")
                    .arg(&target_dir);
                if c.no_default_features {
                    cmd.arg("--no-default-features");
                }
                if !c.features.is_empty() {
                    cmd.arg("--features").arg(c.features.join(","));
                }
                cargo_env(&mut cmd, ctx.extra_env, out);
                let step = format!("cargo build --bin {}", c.bin);
                ctx.run(&step, cmd, &root).await?;
                let built = target_dir.join("release").join(&c.bin);
                std::fs::rename(&built, &target).map_err(|e| {
                    ctx.failed(&step, format!("no binary at {}: {e}", built.display()))
                })?;
                format!(
                    "{}\ncargo build --release --locked --bin {}",
                    self.describe(),
                    c.bin
                )
            }
        };
        // The tree and the target folder are not needed again.
        let _ = std::fs::remove_dir_all(out.join("src"));
        let _ = std::fs::remove_dir_all(out.join("target"));
        Ok(info)
    }
}

/// The block as the lab file writes it: one key per origin beside `tree`
/// and `build`; exactly one origin is checked while it is read.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSource {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    archive: Option<SourceArchive>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    git: Option<GitSource>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tree: Option<String>,
    build: SourceToolchain,
}

impl TryFrom<RawSource> for SourceBuild {
    type Error = String;

    fn try_from(raw: RawSource) -> Result<SourceBuild, String> {
        let origin = match (raw.archive, raw.git) {
            (Some(a), None) => SourceOrigin::Archive(a),
            (None, Some(g)) => SourceOrigin::Git(g),
            (None, None) => {
                return Err(
                    "no origin: give exactly one of `archive: {url: ..., name: ...}` \
                            or `git: {repo: ..., commit: ...}`"
                        .into(),
                );
            }
            (Some(_), Some(_)) => {
                return Err("both `archive` and `git`: give exactly one origin".into());
            }
        };
        Ok(SourceBuild {
            origin,
            tree: raw.tree,
            build: raw.build,
        })
    }
}

impl From<SourceBuild> for RawSource {
    fn from(s: SourceBuild) -> RawSource {
        let (archive, git) = match s.origin {
            SourceOrigin::Archive(a) => (Some(a), None),
            SourceOrigin::Git(g) => (None, Some(g)),
        };
        RawSource {
            archive,
            git,
            tree: s.tree,
            build: s.build,
        }
    }
}

/// An `archive:` as written: exactly one of `url` and `file`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawArchive {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sha256: Option<String>,
}

impl TryFrom<RawArchive> for SourceArchive {
    type Error = String;

    fn try_from(raw: RawArchive) -> Result<SourceArchive, String> {
        let location = match (raw.url, raw.file) {
            (Some(u), None) => ArchiveLocation::Url(u),
            (None, Some(f)) => ArchiveLocation::File(f),
            _ => {
                return Err(
                    "an archive has exactly one of `url: https://...` and `file: PATH`".into(),
                );
            }
        };
        Ok(SourceArchive {
            location,
            name: raw.name,
            sha256: raw.sha256,
        })
    }
}

impl From<SourceArchive> for RawArchive {
    fn from(a: SourceArchive) -> RawArchive {
        let (url, file) = match a.location {
            ArchiveLocation::Url(u) => (Some(u), None),
            ArchiveLocation::File(f) => (None, Some(f)),
        };
        RawArchive {
            url,
            file,
            name: a.name,
            sha256: a.sha256,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn duplicacy() -> &'static str {
        r#"{"archive":{"url":"https://github.com/gilbertchen/duplicacy/archive/065ae50868574404c502fb8b9508a2475d218337.tar.gz","name":"duplicacy-065ae50.tar.gz"},"tree":"7b918db8b537055153778f6d9d2360c47ab47cab","build":{"go":{"package":"./duplicacy","toolchain":"go1.26.8","ldflags":"-s -w"}}}"#
    }

    #[test]
    fn a_block_round_trips_and_is_valid() {
        let s: SourceBuild = serde_json::from_str(duplicacy()).unwrap();
        assert_eq!(s.problems(), vec![]);
        assert_eq!(s.binary_name(), "duplicacy");
        assert_eq!(serde_json::to_string(&s).unwrap(), duplicacy());
        let git = r#"{"git":{"repo":"/srv/x.git","commit":"065ae50868574404c502fb8b9508a2475d218337"},"build":{"cargo":{"toolchain":"1.95.0","bin":"rustic"}}}"#;
        let s: SourceBuild = serde_json::from_str(git).unwrap();
        assert_eq!(s.problems(), vec![]);
        assert_eq!(serde_json::to_string(&s).unwrap(), git);
    }

    #[test]
    fn one_origin_one_toolchain_no_unknown_field() {
        let both = r#"{"archive":{"file":"/a.tar.gz"},"git":{"repo":"r","commit":"c"},"build":{"go":{"toolchain":"go1.26.8"}}}"#;
        let e = serde_json::from_str::<SourceBuild>(both).unwrap_err();
        assert!(e.to_string().contains("exactly one origin"), "{e}");
        let none = r#"{"tree":"x","build":{"go":{"toolchain":"go1.26.8"}}}"#;
        let e = serde_json::from_str::<SourceBuild>(none).unwrap_err();
        assert!(e.to_string().starts_with("no origin"), "{e}");
        let typo =
            r#"{"archive":{"file":"/a.tar.gz","sha":"x"},"build":{"go":{"toolchain":"go1.26.8"}}}"#;
        let e = serde_json::from_str::<SourceBuild>(typo).unwrap_err();
        assert!(e.to_string().contains("unknown field `sha`"), "{e}");
        let two = r#"{"archive":{"file":"/a.tar.gz"},"build":{"go":{"toolchain":"go1.26.8"},"cargo":{"toolchain":"1.95.0","bin":"x"}}}"#;
        assert!(serde_json::from_str::<SourceBuild>(two).is_err());
    }

    #[test]
    fn each_rule_names_its_field() {
        let block = r#"{"archive":{"url":"ftp://x/y.tar.gz","name":"a b","sha256":"xyz"},"build":{"go":{"package":".","toolchain":"latest"}}}"#;
        let s: SourceBuild = serde_json::from_str(block).unwrap();
        let fields: Vec<String> = s.problems().into_iter().map(|p| p.field).collect();
        assert_eq!(
            fields,
            [
                "archive.url",
                "archive.name",
                "archive.sha256",
                "tree",
                "build.go.toolchain",
                "build.go.binary"
            ]
        );
        let git = r#"{"git":{"repo":"--upload-pack=x","commit":"main"},"tree":"abc","build":{"cargo":{"toolchain":"stable","bin":".."}}}"#;
        let s: SourceBuild = serde_json::from_str(git).unwrap();
        let fields: Vec<String> = s.problems().into_iter().map(|p| p.field).collect();
        assert_eq!(
            fields,
            [
                "git.repo",
                "git.commit",
                "tree",
                "build.cargo.toolchain",
                "build.cargo.bin"
            ]
        );
    }

    fn git_block(repo: &str) -> SourceBuild {
        let block = serde_json::json!({
            "git": {"repo": repo, "commit": "065ae50868574404c502fb8b9508a2475d218337"},
            "build": {"cargo": {"toolchain": "1.95.0", "bin": "rustic"}},
        });
        serde_json::from_value(block).unwrap()
    }

    #[test]
    fn only_https_ssh_git_file_and_paths_are_fetched_from() {
        for bad in [
            "fd::0",
            "FD::1",
            "ext::sh -c touch% /tmp/pwned",
            "http://example.invalid/x.git",
            "ftp://example.invalid/x.git",
            "https::example.invalid/x.git",
        ] {
            let p = git_block(bad).problems();
            assert_eq!(p.len(), 1, "{bad}: {p:?}");
            assert_eq!(p[0].field, "git.repo", "{bad}: {p:?}");
            assert!(p[0].message.contains("https"), "{bad}: {p:?}");
        }
        for good in [
            "https://example.invalid/x.git",
            "ssh://git@example.invalid/x.git",
            "git+ssh://example.invalid/x.git",
            "git://example.invalid/x.git",
            "file:///srv/x.git",
            "git@example.invalid:x.git",
            "/srv/x.git",
            "../x",
            "x",
        ] {
            assert_eq!(git_block(good).problems(), vec![], "{good}");
        }
    }

    #[test]
    fn credentials_in_a_git_url_are_never_shown_or_kept() {
        let s = git_block("https://user:TOKEN@example.invalid/x.git");
        assert_eq!(s.problems(), vec![]);
        let origin = Recipe::origin(&s).unwrap().to_string();
        for shown in [s.provenance(), Recipe::describe(&s), origin] {
            assert!(!shown.contains("TOKEN"), "{shown}");
            assert!(!shown.contains("user"), "{shown}");
            assert!(
                shown.contains("https://<redacted>@example.invalid/x.git"),
                "{shown}"
            );
        }
        // A refused repository's message does not repeat its credentials.
        let refused = git_block("ext::https://user:TOKEN@example.invalid/x.git").problems();
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(!refused[0].message.contains("TOKEN"), "{refused:?}");
    }
}
