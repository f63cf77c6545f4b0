//! A crate from crates.io built with `cargo install --locked`:
//!
//! ```yaml
//! artifact:
//!   crate:
//!     name: rustic-rs
//!     version: 0.11.4
//!     binary: rustic
//!     toolchain: 1.95.0       # the rustc that builds it (`rustc --version`)
//!   sha256: <the built binary's SHA-256>
//! ```
//!
//! `--locked` builds with the crate's own Cargo.lock, whose checksums cargo
//! verifies for every dependency. The registry is the one the host's cargo is
//! configured for. Paths that differ between machines (the cargo home, the
//! build folder) are remapped, so the same inputs give the same bytes; the
//! target is the baseline x86-64 CPU.

use super::shapes::{binary_name_problem, semver_problem};
use super::{BuildCtx, Recipe, is_plain_word};
use crate::error::ArtifactError;
use crate::spec::SpecProblem;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrateBuild {
    pub name: String,
    /// An exact version (`cargo install NAME@=VERSION`).
    pub version: String,
    /// The binary of the crate to install.
    pub binary: String,
    /// The rustc release that builds it, as `rustc --version` prints it.
    pub toolchain: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub features: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_default_features: bool,
}

impl CrateBuild {
    /// Shapes only (no I/O): what reaches cargo's command line is a plain
    /// word, versions are exact. Fields are named below `crate`.
    pub fn problems(&self) -> Vec<SpecProblem> {
        let mut out = Vec::new();
        let mut bad = |field: String, message: String| out.push(SpecProblem::new(field, message));
        if !is_plain_word(&self.name, b"-_") {
            bad(
                "name".into(),
                format!("{:?} is not a crate name", self.name),
            );
        }
        if semver_problem(&self.version).is_some() {
            bad(
                "version".into(),
                format!("{:?} must be an exact version such as 0.11.4", self.version),
            );
        }
        out.extend(cargo_flag_problems(
            &self.toolchain,
            ("binary", &self.binary),
            &self.features,
        ));
        out
    }

    /// The build in one line for evidence.
    pub fn provenance(&self) -> String {
        let mut line = format!(
            "cargo install --locked {}@={} --bin {}, rustc {}, target-cpu x86-64",
            self.name, self.version, self.binary, self.toolchain
        );
        if self.no_default_features {
            line.push_str(", no default features");
        }
        if !self.features.is_empty() {
            line.push_str(&format!(", features {}", self.features.join(",")));
        }
        line
    }
}

/// The cargo home the host's cargo uses: its registry sources live there,
/// so it is the prefix to remap.
fn cargo_home(extra: &[(std::ffi::OsString, std::ffi::OsString)]) -> PathBuf {
    if let Some((_, v)) = extra.iter().rev().find(|(k, _)| k == "CARGO_HOME") {
        return PathBuf::from(v);
    }
    if let Some(v) = std::env::var_os("CARGO_HOME") {
        return PathBuf::from(v);
    }
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root"))
        .join(".cargo")
}

impl Recipe for CrateBuild {
    fn describe(&self) -> String {
        format!(
            "cargo install --locked {}@{} (bin {}) with rustc {}",
            self.name, self.version, self.binary, self.toolchain
        )
    }

    fn binary_name(&self) -> &str {
        &self.binary
    }

    fn inputs(&self) -> serde_json::Value {
        serde_json::json!({"crate": self})
    }

    async fn toolchain(&self, ctx: &BuildCtx<'_>) -> Result<String, ArtifactError> {
        rustc_toolchain(ctx, &self.toolchain).await
    }

    async fn build(&self, ctx: &mut BuildCtx<'_>, out: &Path) -> Result<String, ArtifactError> {
        let target = out.join("target");
        let mut cmd = ctx.command("cargo");
        cmd.args(["install", "--locked", "--force", "--root"])
            .arg(out.join("root"))
            .arg("--target-dir")
            .arg(&target)
            .arg("--bin")
            .arg(&self.binary);
        if self.no_default_features {
            cmd.arg("--no-default-features");
        }
        if !self.features.is_empty() {
            cmd.arg("--features").arg(self.features.join(","));
        }
        cmd.arg(format!("{}@={}", self.name, self.version));
        cargo_env(&mut cmd, ctx.extra_env, out);
        let step = format!("cargo install {}@{}", self.name, self.version);
        ctx.run(&step, cmd, out).await?;
        let built = out.join("root/bin").join(&self.binary);
        std::fs::rename(&built, out.join(&self.binary))
            .map_err(|e| ctx.failed(&step, format!("no binary at {}: {e}", built.display())))?;
        // The target folder is big (gigabytes for a large crate) and not needed again.
        let _ = std::fs::remove_dir_all(&target);
        Ok(format!(
            "{}\ncargo install {}@={} --locked --bin {}",
            self.describe(),
            self.name,
            self.version,
            self.binary
        ))
    }
}

/// The rules of the fields both cargo recipes have (a crate's `crate:` and
/// a source's `build.cargo:`); `binary` is the field's name and value.
pub(crate) fn cargo_flag_problems(
    toolchain: &str,
    binary: (&str, &str),
    features: &[String],
) -> Vec<SpecProblem> {
    let mut out = Vec::new();
    if semver_problem(toolchain).is_some() {
        out.push(SpecProblem::new(
            "toolchain",
            format!("{toolchain:?} must be the exact rustc release that builds it, such as 1.95.0"),
        ));
    }
    if let Some(why) = binary_name_problem(binary.1) {
        out.push(SpecProblem::new(binary.0, why));
    }
    for (i, f) in features.iter().enumerate() {
        if !is_plain_word(f, b"-_/") {
            out.push(SpecProblem::new(
                format!("features[{i}]"),
                format!("{f:?} is not a feature name"),
            ));
        }
    }
    out
}

/// The rustc a build runs with, checked against the pin; its `-vV` text
/// joins the cache key. Shared by both cargo recipes.
pub(crate) async fn rustc_toolchain(
    ctx: &BuildCtx<'_>,
    toolchain: &str,
) -> Result<String, ArtifactError> {
    let mut cmd = ctx.command("rustc");
    cmd.arg("-vV");
    for (k, v) in ctx.extra_env {
        cmd.env(k, v);
    }
    let fail = |found: String| ArtifactError::Toolchain {
        name: ctx.name.to_string(),
        wanted: format!("rustc {toolchain}"),
        found,
        hint: "install that Rust release (rustup toolchain install VERSION, then \
               RUSTUP_TOOLCHAIN=VERSION), or pin the one the host has (`rustc --version`)"
            .into(),
    };
    let out = cmd
        .output()
        .await
        .map_err(|e| fail(format!("cannot run `rustc`: {e}")))?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let first = text.lines().next().unwrap_or("").to_string();
    // "rustc 1.95.0 (59807616e 2026-04-14)"
    if !out.status.success() || first.split_whitespace().nth(1) != Some(toolchain) {
        return Err(fail(first));
    }
    Ok(text)
}

/// The settings of every cargo build: the baseline x86-64 CPU, and the
/// paths that differ between machines (the cargo home, the build folder
/// `build_dir`) remapped so the same inputs give the same bytes; the host's
/// own RUSTFLAGS never reach it. Shared by both cargo recipes.
pub(crate) fn cargo_env(
    cmd: &mut tokio::process::Command,
    extra_env: &[(std::ffi::OsString, std::ffi::OsString)],
    build_dir: &Path,
) {
    let home = cargo_home(extra_env);
    let rustflags = format!(
        "-C target-cpu=x86-64 --remap-path-prefix={}=/cargo-home --remap-path-prefix={}=/build",
        home.display(),
        build_dir.display()
    );
    cmd.env("RUSTFLAGS", rustflags)
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env("CARGO_TERM_COLOR", "never");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_checked() {
        let ok = CrateBuild {
            name: "rustic-rs".into(),
            version: "0.11.4".into(),
            binary: "rustic".into(),
            toolchain: "1.95.0".into(),
            features: vec![],
            no_default_features: false,
        };
        assert_eq!(ok.problems(), vec![]);
        let only = |c: &CrateBuild| {
            let p = c.problems();
            assert_eq!(p.len(), 1, "{p:?}");
            (p[0].field.clone(), p[0].message.clone())
        };
        let mut c = ok.clone();
        c.version = "^0.11".into();
        let (field, message) = only(&c);
        assert_eq!(field, "version");
        assert!(message.contains("exact version"), "{message}");
        let mut c = ok.clone();
        c.toolchain = "stable".into();
        let (field, message) = only(&c);
        assert_eq!(field, "toolchain");
        assert!(message.contains("rustc release"), "{message}");
        let mut c = ok;
        c.name = "--force".into();
        assert_eq!(only(&c).0, "name");
    }
}
