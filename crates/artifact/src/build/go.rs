//! A Go module built at a pinned version:
//!
//! ```yaml
//! artifact:
//!   go:
//!     module: github.com/kopia/kopia
//!     version: v0.23.1            # a tag, or a pseudo-version naming a commit
//!     sum: h1:0+V5Au8fD+190vQbklG0DaWD6I4clmbwlmJTqtI0y0Q=   # go.sum's hash of the module
//!     package: .
//!     toolchain: go1.26.8         # GOTOOLCHAIN: the Go that builds it
//!     ldflags: -s -w -X github.com/kopia/kopia/repo.BuildVersion=0.23.1
//!   sha256: <the built binary's SHA-256>
//! ```
//!
//! The build is hermetic: `CGO_ENABLED=0`, `-trimpath`, the baseline x86-64
//! (`GOAMD64=v1`: the TCG guest CPU lacks newer instructions), no VCS stamp,
//! module and build caches of labrun's own, the host's `GOFLAGS` replaced
//! and no workspace. The module comes from the proxy the host's Go is set up
//! for (`GOPROXY`, `GOSUMDB` are the host's); its hash must equal `sum`, and
//! its dependencies are checked against its own go.sum by `go build`.

use super::shapes::{binary_name_problem, semver_problem};
use super::{BuildCtx, Recipe, is_plain_word};
use crate::error::ArtifactError;
use crate::spec::SpecProblem;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// What a user can do when the module proxy does not serve a version (said
/// the same at pin and at build time): another version, or the same one
/// from its source, which reaches any commit.
pub const PROXY_REFUSED: &str = "the module proxy the host's Go uses (`go env GOPROXY`) does \
     not serve this version: pin one it serves, or build it from its source (`source:` with \
     `git:` or `archive:`, docs/guide/labs.md)";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoBuild {
    /// The module path, e.g. `github.com/restic/restic`.
    pub module: String,
    /// A semantic version tag or a pseudo-version.
    pub version: String,
    /// The module's hash as go.sum writes it (`h1:...`).
    pub sum: String,
    /// The main package inside the module (`.` or `./cmd/restic`).
    #[serde(default = "dot")]
    pub package: String,
    /// The Go toolchain, as `GOTOOLCHAIN` names it (`go1.26.8`). Where it is
    /// not the installed Go, the go command fetches it through the proxy.
    pub toolchain: String,
    /// Build tags, as the project's release build sets them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// `-ldflags`, as the project's release build sets them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ldflags: Option<String>,
    /// The binary's name; by default the package's last path element (the
    /// module's for `.`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<String>,
}

fn dot() -> String {
    ".".into()
}

/// The go command's rule for a module path (golang.org/x/mod's
/// `CheckPath`), so `check` refuses what `go mod download` would, and no
/// `.` or `..` element walks out of the module cache: elements of letters,
/// digits and `-._~` joined by single `/`, none starting or ending with
/// `.`; the first a lowercase host name with a dot; and at least one `/`
/// after it (labrun builds a program of a module, not a bare host).
fn module_path_problem(path: &str) -> Option<&'static str> {
    let mut elements = path.split('/');
    let host = elements.next().unwrap_or("");
    if !path.contains('/') {
        return Some("expected a host name, then `/` and the path on it");
    }
    if host.is_empty()
        || !host.contains('.')
        || host.starts_with(['-', '.'])
        || !host
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
    {
        return Some(
            "the first element must be a host name with a dot, in lowercase letters, digits, \
             `.` and `-`",
        );
    }
    for element in path.split('/') {
        if element.is_empty() {
            return Some("an empty element (a leading, trailing or doubled `/`)");
        }
        if element.starts_with('.') || element.ends_with('.') {
            return Some("an element starts or ends with `.` (`.` and `..` are not allowed)");
        }
        if !is_plain_word(element, b"-._~") {
            return Some("elements hold only letters, digits, `-`, `.`, `_` and `~`");
        }
    }
    None
}

impl GoBuild {
    pub fn binary_name(&self) -> &str {
        if let Some(b) = &self.binary {
            return b;
        }
        let from = if self.package == "." {
            self.module.as_str()
        } else {
            self.package.as_str()
        };
        let last = from
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or(from);
        // A major-version suffix (`.../v3`) is not the program's name.
        if last.len() > 1 && last.starts_with('v') && last[1..].bytes().all(|b| b.is_ascii_digit())
        {
            let rest = from
                .trim_end_matches('/')
                .trim_end_matches(last)
                .trim_end_matches('/');
            return rest.rsplit('/').next().unwrap_or(last);
        }
        last
    }

    /// Shapes only (no I/O): what reaches the go command's line is a plain
    /// word, the sum is go.sum's form. Fields are named below `go`.
    pub fn problems(&self) -> Vec<SpecProblem> {
        let mut out = Vec::new();
        let mut bad = |field: String, message: String| out.push(SpecProblem::new(field, message));
        if let Some(why) = module_path_problem(&self.module) {
            bad(
                "module".into(),
                format!(
                    "{:?} is not a module path: {why} (e.g. github.com/restic/restic)",
                    self.module
                ),
            );
        }
        let version_problem = match self.version.strip_prefix('v') {
            None => Some("it starts with `v`"),
            Some(semver) => semver_problem(semver),
        };
        if let Some(why) = version_problem {
            bad(
                "version".into(),
                format!(
                    "{:?} is not a module version: expected a semantic version tag such as \
                     v0.19.1, or a pseudo-version such as v0.0.0-20241219135422-065ae5086857 \
                     ({why}); a branch name is not a pin",
                    self.version
                ),
            );
        }
        if !self.sum.starts_with("h1:") || self.sum.len() != 47 {
            bad(
                "sum".into(),
                format!(
                    "{:?} is not a module hash as go.sum writes it (h1: and 44 base64 \
                     characters); `go mod download -json {}@{}` prints it as \"Sum\"",
                    self.sum, self.module, self.version
                ),
            );
        }
        out.extend(go_flag_problems(
            &self.package,
            &self.toolchain,
            &self.tags,
            self.ldflags.as_deref(),
            self.binary.as_deref(),
        ));
        out
    }

    /// The build in one line for evidence.
    pub fn provenance(&self) -> String {
        let mut line = format!(
            "go build of module {}@{} (sum {}), package {}, toolchain {}, \
             CGO_ENABLED=0 GOAMD64=v1 -trimpath",
            self.module, self.version, self.sum, self.package, self.toolchain
        );
        if !self.tags.is_empty() {
            line.push_str(&format!(", tags {}", self.tags.join(",")));
        }
        if let Some(l) = &self.ldflags {
            line.push_str(&format!(", ldflags '{l}'"));
        }
        line
    }
}

/// The part of `go mod download -json` labrun reads.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Downloaded {
    #[serde(default)]
    dir: String,
    #[serde(default)]
    sum: String,
    #[serde(default)]
    error: String,
}

/// The environment every go command of a build runs with.
pub(crate) fn go_env(cmd: &mut tokio::process::Command, cache_dir: &Path, toolchain: &str) {
    let go = cache_dir.join("go");
    cmd.env("GOTOOLCHAIN", toolchain)
        .env("GOMODCACHE", go.join("mod"))
        .env("GOCACHE", go.join("build-cache"))
        .env("GOPATH", go.join("path"))
        // The host's GOFLAGS (-mod=vendor, -buildvcs=...) would change the
        // build; -modcacherw lets labrun's cache be removed like any folder.
        .env("GOFLAGS", "-modcacherw")
        .env("GOWORK", "off")
        .env("CGO_ENABLED", "0")
        .env("GOOS", "linux")
        .env("GOARCH", "amd64")
        .env("GOAMD64", "v1")
        .env("LC_ALL", "C");
}

impl Recipe for GoBuild {
    fn describe(&self) -> String {
        format!(
            "go build {}@{} ({}) with {}",
            self.module, self.version, self.package, self.toolchain
        )
    }

    fn binary_name(&self) -> &str {
        GoBuild::binary_name(self)
    }

    fn inputs(&self) -> serde_json::Value {
        serde_json::json!({"go": self})
    }

    async fn toolchain(&self, ctx: &BuildCtx<'_>) -> Result<String, ArtifactError> {
        go_toolchain(ctx, &self.toolchain).await
    }

    async fn build(&self, ctx: &mut BuildCtx<'_>, out: &Path) -> Result<String, ArtifactError> {
        let at = format!("{}@{}", self.module, self.version);
        let mut dl = ctx.command("go");
        dl.args(["mod", "download", "-json", &at]);
        go_env(&mut dl, ctx.cache_dir, &self.toolchain);
        // `go mod download` prints its JSON (with "Error") and exits 1 when the
        // proxy refuses: read the JSON either way.
        let step = format!("go mod download {at}");
        let json = match ctx.run(&step, dl, out).await {
            Ok(stdout) => stdout,
            Err(ArtifactError::Build { detail, .. }) => {
                return Err(ctx.failed(&step, format!("{detail}; {PROXY_REFUSED}")));
            }
            Err(e) => return Err(e),
        };
        let got: Downloaded = serde_json::from_str(&json)
            .map_err(|e| ctx.failed(&step, format!("unreadable answer: {e}")))?;
        if !got.error.is_empty() {
            return Err(ctx.failed(&step, format!("{}; {PROXY_REFUSED}", got.error)));
        }
        if got.sum != self.sum {
            return Err(ArtifactError::ModuleSumMismatch {
                name: ctx.name.to_string(),
                module: at,
                expected: self.sum.clone(),
                actual: got.sum,
            });
        }
        let flags = GoFlags {
            package: &self.package,
            toolchain: &self.toolchain,
            tags: &self.tags,
            ldflags: self.ldflags.as_deref(),
        };
        go_build(
            ctx,
            &flags,
            &format!("in {at}"),
            Path::new(&got.dir),
            &out.join(self.binary_name()),
            None,
        )
        .await
    }
}

/// The rules of the fields both Go recipes have (a module's `go:` and a
/// source's `build.go:`), at field paths below the recipe.
pub(crate) fn go_flag_problems(
    package: &str,
    toolchain: &str,
    tags: &[String],
    ldflags: Option<&str>,
    binary: Option<&str>,
) -> Vec<SpecProblem> {
    let mut out = Vec::new();
    let mut bad = |field: String, message: String| out.push(SpecProblem::new(field, message));
    let package_ok = package == "."
        || (package.starts_with("./")
            && is_plain_word(&package[2..], b"./-_")
            && !package.contains(".."));
    if !package_ok {
        bad(
            "package".into(),
            format!("{package:?} must be `.` or a path inside the module such as ./cmd/restic"),
        );
    }
    let toolchain_ok = toolchain
        .strip_prefix("go")
        .is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit() || b == b'.'));
    if !toolchain_ok {
        bad(
            "toolchain".into(),
            format!(
                "{toolchain:?} must name an exact Go release such as go1.26.8 (the pin \
                 includes the compiler)"
            ),
        );
    }
    for (i, t) in tags.iter().enumerate() {
        if !is_plain_word(t, b"_.") {
            bad(format!("tags[{i}]"), format!("{t:?} is not a build tag"));
        }
    }
    if let Some(why) = binary.and_then(binary_name_problem) {
        bad("binary".into(), why);
    }
    if ldflags.is_some_and(|l| l.contains(['\n', '\0'])) {
        bad("ldflags".into(), "must be one line".into());
    }
    out
}

/// The Go toolchain a build runs with, asked with the build's own
/// environment and checked against the pin; its version line joins the
/// cache key. Shared by both Go recipes.
pub(crate) async fn go_toolchain(
    ctx: &BuildCtx<'_>,
    toolchain: &str,
) -> Result<String, ArtifactError> {
    let mut cmd = ctx.command("go");
    cmd.arg("version");
    go_env(&mut cmd, ctx.cache_dir, toolchain);
    for (k, v) in ctx.extra_env {
        cmd.env(k, v);
    }
    let fail = |found: String| ArtifactError::Toolchain {
        name: ctx.name.to_string(),
        wanted: toolchain.to_string(),
        found,
        hint: "install Go (Debian: golang-go; any Go from 1.21 on fetches the pinned \
               toolchain itself through the module proxy), or pin the toolchain the \
               host has (`go version`)"
            .into(),
    };
    let out = cmd
        .output()
        .await
        .map_err(|e| fail(format!("cannot run `go`: {e}")))?;
    let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(fail(format!(
            "`go version` with GOTOOLCHAIN={toolchain} failed: {err}"
        )));
    }
    // "go version go1.26.8 linux/amd64"
    if line.split_whitespace().nth(2) != Some(toolchain) {
        return Err(fail(line));
    }
    Ok(line)
}

/// What a `go build` takes from a recipe.
pub(crate) struct GoFlags<'a> {
    pub package: &'a str,
    pub toolchain: &'a str,
    pub tags: &'a [String],
    pub ldflags: Option<&'a str>,
}

/// `go build` of `flags.package` in the module at `dir` into `target`,
/// hermetic (see the module's comment), then `go version -m` of the
/// binary, which is returned as its build info. `mod_flag` is the source
/// build's `-mod=readonly` (dependencies exactly as the source's go.mod and
/// go.sum name them, even where it has a `vendor/` folder); a module from
/// the proxy builds as it always has. Shared by both Go recipes.
pub(crate) async fn go_build(
    ctx: &mut BuildCtx<'_>,
    flags: &GoFlags<'_>,
    where_: &str,
    dir: &Path,
    target: &Path,
    mod_flag: Option<&str>,
) -> Result<String, ArtifactError> {
    let mut build = ctx.command("go");
    build.args(["build", "-trimpath", "-buildvcs=false"]);
    build.args(mod_flag);
    if !flags.tags.is_empty() {
        build.arg("-tags").arg(flags.tags.join(","));
    }
    if let Some(l) = flags.ldflags {
        build.arg("-ldflags").arg(l);
    }
    build.arg("-o").arg(target).arg(flags.package);
    go_env(&mut build, ctx.cache_dir, flags.toolchain);
    ctx.run(&format!("go build {} {where_}", flags.package), build, dir)
        .await?;
    let mut info = ctx.command("go");
    info.arg("version").arg("-m").arg(target);
    go_env(&mut info, ctx.cache_dir, flags.toolchain);
    let out = target.parent().unwrap_or(dir);
    ctx.run("go version -m", info, out).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kopia() -> GoBuild {
        GoBuild {
            module: "github.com/kopia/kopia".into(),
            version: "v0.23.1".into(),
            sum: "h1:0+V5Au8fD+190vQbklG0DaWD6I4clmbwlmJTqtI0y0Q=".into(),
            package: ".".into(),
            toolchain: "go1.26.8".into(),
            tags: vec![],
            ldflags: None,
            binary: None,
        }
    }

    #[test]
    fn binary_names() {
        assert_eq!(kopia().binary_name(), "kopia");
        let mut r = kopia();
        r.module = "github.com/restic/restic".into();
        r.package = "./cmd/restic".into();
        assert_eq!(r.binary_name(), "restic");
        r.module = "example.com/tool/v3".into();
        r.package = ".".into();
        assert_eq!(r.binary_name(), "tool");
        r.binary = Some("x".into());
        assert_eq!(r.binary_name(), "x");
    }

    #[test]
    fn shapes_are_checked() {
        assert_eq!(kopia().problems(), vec![]);
        type Mutation = fn(&mut GoBuild);
        let cases: Vec<(Mutation, &str, &str)> = vec![
            (|g| g.module = "kopia".into(), "module", "module path"),
            (|g| g.version = "0.23.1".into(), "version", "module version"),
            (|g| g.sum = "abc".into(), "sum", "go.sum"),
            (
                |g| g.package = "../x".into(),
                "package",
                "inside the module",
            ),
            (
                |g| g.toolchain = "local".into(),
                "toolchain",
                "exact Go release",
            ),
            (
                |g| g.tags = vec!["ok".into(), "a b".into()],
                "tags[1]",
                "build tag",
            ),
        ];
        for (mutate, field, words) in cases {
            let mut g = kopia();
            mutate(&mut g);
            let problems = g.problems();
            assert_eq!(problems.len(), 1, "{problems:?}");
            assert_eq!(problems[0].field, field);
            assert!(problems[0].message.contains(words), "{problems:?}");
        }
    }
}
