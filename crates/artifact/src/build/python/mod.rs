//! A Python distribution from PyPI (or a local sdist) built into wheels for
//! the guest's own Python and C libraries:
//!
//! ```yaml
//! artifact:
//!   python:
//!     name: attic
//!     version: "0.16"
//!     sdist_sha256: 6650cd28...        # the sdist's SHA-256
//!     suite: bookworm                  # the guest's Debian suite: its python3 builds the wheels
//!     python: ">=3.4,<3.12"            # the Pythons the release supports (`check` refuses others)
//!     entry_point: attic               # the tool's `{bin}`: venv/bin/attic in the guest
//!     patches: [{path: labs/patches/attic-0.16-openssl3.patch, sha256: ...}]
//!     remove_files: [attic/chunker.c]  # C an old Cython generated: regenerated
//!     build_requires: [{name: cython, version: 0.29.37, sha256: ...}]   # pure wheels
//!     requires: [{name: msgpack-python, version: 0.5.6, sha256: ...}]   # sdists
//!     build_packages: [libssl-dev, libacl1-dev]
//!   sha256: <the wheel bundle's SHA-256>
//! ```
//!
//! Every sdist is fetched on the host (`pip download --no-binary :all:
//! --no-deps`) and checked against its pin; the build requirements are
//! pure-Python wheels (they run during the build only, nothing of theirs
//! reaches the guest). The wheels are built in a root of the guest's suite
//! ([`root`]) without network, so the build proves it needs nothing but the
//! pinned inputs. The "binary" of the build is one bundle ([`bundle`]): the
//! wheels and a manifest naming each with its SHA-256, which the guest
//! checks before it installs them into a venv of their own.

pub mod bundle;
mod dists;
pub mod root;
mod rules;
mod wheels;

pub use rules::{PythonRange, suite_python};

use super::{BuildCtx, Recipe};
use crate::error::ArtifactError;
use crate::spec::SpecProblem;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The file the build makes. One name for every package: each build has
/// its own folder (keyed by its inputs), and the guest keeps it under the
/// tool's name.
pub const BUNDLE_NAME: &str = "wheels.tar";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PythonBuild {
    /// The distribution's name on PyPI (`attic`, `borgbackup`).
    pub name: String,
    /// Its exact version, as PyPI names it (`0.16`, `2.0.0b20`).
    pub version: String,
    /// The sdist's SHA-256.
    pub sdist_sha256: String,
    /// A local sdist instead of PyPI's (its digest is checked the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The guest's Debian suite: its python3 and C libraries build the wheels.
    pub suite: String,
    /// The Python versions the release supports (`>=3.9,<3.12`); `check`
    /// refuses a suite whose python3 is outside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
    /// The console script that is the tool's `{bin}`.
    pub entry_point: String,
    /// Patches applied to the unpacked sdist (`patch -p1`), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<PinnedPatch>,
    /// Files removed from the unpacked sdist before the build, by path
    /// inside it: C files an old Cython generated, so the pinned Cython
    /// makes them anew for the suite's Python.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remove_files: Vec<String>,
    /// What the build runs (Cython, setuptools-scm): pure-Python wheels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub build_requires: Vec<PinnedDist>,
    /// The runtime dependencies, every one pinned (sdists, built like the tool).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<PinnedDist>,
    /// Debian packages the build needs beyond python3-dev and build-essential
    /// (C headers: libssl-dev, libacl1-dev...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub build_packages: Vec<String>,
}

/// A patch file and its SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinnedPatch {
    /// As written: relative to the folder labrun runs in, like `file:`.
    pub path: String,
    pub sha256: String,
}

/// A distribution by name, exact version and the SHA-256 of its file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinnedDist {
    pub name: String,
    pub version: String,
    pub sha256: String,
}

impl PythonBuild {
    /// Shapes only (no I/O), at field paths below `python`.
    pub fn problems(&self) -> Vec<SpecProblem> {
        rules::problems(self)
    }

    /// The build in one line for evidence.
    pub fn provenance(&self) -> String {
        let mut line = format!(
            "wheels of PyPI {}=={} (sdist sha256 {}) for Debian {}'s python3, offline, \
             entry point {}",
            self.name, self.version, self.sdist_sha256, self.suite, self.entry_point
        );
        for p in &self.patches {
            line.push_str(&format!(", patch {} ({})", p.path, p.sha256));
        }
        for d in &self.requires {
            line.push_str(&format!(", requires {}=={}", d.name, d.version));
        }
        line
    }

    /// Whether the suite's python3 is one this release supports: `None` when
    /// it is (or the lab gives no range), else why not.
    pub fn suite_problem(&self) -> Option<String> {
        rules::suite_problem(self)
    }
}

impl Recipe for PythonBuild {
    fn describe(&self) -> String {
        format!(
            "wheels of {}=={} for Debian {} (entry point {})",
            self.name, self.version, self.suite, self.entry_point
        )
    }

    fn binary_name(&self) -> &str {
        BUNDLE_NAME
    }

    fn inputs(&self) -> serde_json::Value {
        serde_json::json!({"python": self})
    }

    async fn toolchain(&self, ctx: &BuildCtx<'_>) -> Result<String, ArtifactError> {
        let root = root::SuiteRoot::new(ctx.cache_dir, &self.suite, &self.build_packages);
        root.ensure(ctx.name).await?;
        root.describe(ctx.name).await
    }

    async fn key_inputs(
        &self,
        _ctx: &mut BuildCtx<'_>,
    ) -> Result<serde_json::Value, ArtifactError> {
        // The patches' and sdists' digests are in the recipe; a patch file
        // changed under its pin is refused when the build reads it.
        Ok(self.inputs())
    }

    async fn build(&self, ctx: &mut BuildCtx<'_>, out: &Path) -> Result<String, ArtifactError> {
        let fetched = dists::fetch_all(self, ctx).await?;
        let root = root::SuiteRoot::new(ctx.cache_dir, &self.suite, &self.build_packages);
        let built = wheels::build(self, ctx, &root, &fetched, out).await?;
        let manifest = bundle::Manifest::new(self, &built);
        let path = out.join(BUNDLE_NAME);
        bundle::write(&path, &manifest, &built.dir)
            .map_err(|e| ctx.failed("write the wheel bundle", e.to_string()))?;
        Ok(manifest.to_text())
    }
}
