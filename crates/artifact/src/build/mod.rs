//! Building a tool's binary from pinned source code on the host, for tools
//! whose release pages cannot be reached but whose source can: a Go module
//! through the Go module proxy ([`go`]), a crate from crates.io
//! ([`rust_crate`]), or a source tree from a git repository or a source
//! archive, pinned by its git tree id ([`source`], [`tree_id`]).
//!
//! A build is cached by its inputs (the recipe's fields and the toolchain's
//! own version line), in `<cache>/builds/<input key>/`, so a second `up`
//! builds nothing. The binary's digest is then checked against the lab's
//! `sha256` on every use, like a download: a build with other inputs than
//! the pinned one (a changed version, flags or toolchain) is refused.
//!
//! ```text
//! builds/<key>/<binary>       the built binary
//! builds/<key>/build.log      every command run and its output
//! builds/<key>/build.json     inputs, toolchain, the binary's own build info
//! ```

pub mod go;
pub mod python;
pub mod rust_crate;
mod shapes;
pub mod source;
pub mod tree_id;

pub use go::GoBuild;
pub use python::PythonBuild;
pub use rust_crate::CrateBuild;
pub use source::SourceBuild;

use crate::spec::SpecProblem;

use crate::digest::sha256_file;
use crate::error::ArtifactError;
use crate::fetcher::Fetcher;
use crate::progress::Progress;
use crate::source::Source;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use tokio::process::Command;

/// Bumped when the way labrun builds changes, so old cache entries are not
/// taken for new ones.
const BUILD_SCHEME: &str = "labrun-build-v1";

/// What a recipe must say about itself.
pub(crate) trait Recipe: Sync {
    /// One line for people: `go build github.com/x/y@v1 (./cmd/y)`.
    fn describe(&self) -> String;
    /// The file name of the binary it makes.
    fn binary_name(&self) -> &str;
    /// The recipe's fields as they enter the cache key.
    fn inputs(&self) -> serde_json::Value;
    /// The cache key's inputs, found before anything is built: a recipe
    /// whose key needs a look at its source (a git commit's tree, when the
    /// lab pins the commit only) takes it here.
    async fn key_inputs(
        &self,
        _ctx: &mut BuildCtx<'_>,
    ) -> Result<serde_json::Value, ArtifactError> {
        Ok(self.inputs())
    }
    /// Where the source came from, for `build.json` (when that is not in
    /// the inputs: a source build is keyed by its tree, not its URL).
    fn origin(&self) -> Option<serde_json::Value> {
        None
    }
    /// Asks the toolchain for its version and checks it against the pin;
    /// returns the version line, which joins the cache key.
    async fn toolchain(&self, ctx: &BuildCtx<'_>) -> Result<String, ArtifactError>;
    /// Builds the binary into `out` (a fresh folder), logging to `ctx.log`.
    /// Returns what the binary says of its own build (e.g. `go version -m`).
    async fn build(&self, ctx: &mut BuildCtx<'_>, out: &Path) -> Result<String, ArtifactError>;
}

/// A binary built on the host from pinned source: one variant per recipe,
/// each behind its own lab-file key (`go:`, `crate:`, `source:`). A new
/// recipe is a variant here, its own file, and its key in `spec/mod.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuildRecipe {
    Go(GoBuild),
    Crate(CrateBuild),
    Source(SourceBuild),
    /// Boxed: its many pinned lists would make every artifact as large.
    Python(Box<PythonBuild>),
}

impl BuildRecipe {
    /// The lab-file key of the recipe.
    pub fn key(&self) -> &'static str {
        match self {
            BuildRecipe::Go(_) => "go",
            BuildRecipe::Crate(_) => "crate",
            BuildRecipe::Source(_) => "source",
            BuildRecipe::Python(_) => "python",
        }
    }

    /// The recipe's rules, at field paths below the block (`go.module`).
    pub fn problems(&self) -> Vec<SpecProblem> {
        let own = match self {
            BuildRecipe::Go(g) => g.problems(),
            BuildRecipe::Crate(c) => c.problems(),
            BuildRecipe::Source(s) => s.problems(),
            BuildRecipe::Python(p) => p.problems(),
        };
        own.into_iter().map(|p| p.under(self.key())).collect()
    }

    /// The build in one line for evidence: inputs, toolchain and flags.
    pub fn provenance(&self) -> String {
        match self {
            BuildRecipe::Go(g) => g.provenance(),
            BuildRecipe::Crate(c) => c.provenance(),
            BuildRecipe::Source(s) => s.provenance(),
            BuildRecipe::Python(p) => p.provenance(),
        }
    }

    /// One line for people (see [`Recipe::describe`]).
    pub fn describe(&self) -> String {
        Recipe::describe(self)
    }

    /// The file name of the binary it makes.
    pub fn binary_name(&self) -> &str {
        Recipe::binary_name(self)
    }
}

impl Recipe for BuildRecipe {
    fn describe(&self) -> String {
        match self {
            BuildRecipe::Go(g) => g.describe(),
            BuildRecipe::Crate(c) => c.describe(),
            BuildRecipe::Source(s) => s.describe(),
            BuildRecipe::Python(p) => p.describe(),
        }
    }

    fn binary_name(&self) -> &str {
        match self {
            BuildRecipe::Go(g) => Recipe::binary_name(g),
            BuildRecipe::Crate(c) => Recipe::binary_name(c),
            BuildRecipe::Source(s) => Recipe::binary_name(s),
            BuildRecipe::Python(p) => Recipe::binary_name(p.as_ref()),
        }
    }

    fn inputs(&self) -> serde_json::Value {
        match self {
            BuildRecipe::Go(g) => g.inputs(),
            BuildRecipe::Crate(c) => c.inputs(),
            BuildRecipe::Source(s) => s.inputs(),
            BuildRecipe::Python(p) => p.inputs(),
        }
    }

    async fn toolchain(&self, ctx: &BuildCtx<'_>) -> Result<String, ArtifactError> {
        match self {
            BuildRecipe::Go(g) => g.toolchain(ctx).await,
            BuildRecipe::Crate(c) => c.toolchain(ctx).await,
            BuildRecipe::Source(s) => s.toolchain(ctx).await,
            BuildRecipe::Python(p) => p.toolchain(ctx).await,
        }
    }

    async fn key_inputs(&self, ctx: &mut BuildCtx<'_>) -> Result<serde_json::Value, ArtifactError> {
        match self {
            BuildRecipe::Go(g) => g.key_inputs(ctx).await,
            BuildRecipe::Crate(c) => c.key_inputs(ctx).await,
            BuildRecipe::Source(s) => s.key_inputs(ctx).await,
            BuildRecipe::Python(p) => p.key_inputs(ctx).await,
        }
    }

    fn origin(&self) -> Option<serde_json::Value> {
        match self {
            BuildRecipe::Source(s) => Recipe::origin(s),
            BuildRecipe::Go(_) | BuildRecipe::Crate(_) | BuildRecipe::Python(_) => None,
        }
    }

    async fn build(&self, ctx: &mut BuildCtx<'_>, out: &Path) -> Result<String, ArtifactError> {
        match self {
            BuildRecipe::Go(g) => g.build(ctx, out).await,
            BuildRecipe::Crate(c) => c.build(ctx, out).await,
            BuildRecipe::Source(s) => s.build(ctx, out).await,
            BuildRecipe::Python(p) => p.build(ctx, out).await,
        }
    }
}

/// What a running build has at hand.
pub(crate) struct BuildCtx<'a> {
    pub name: &'a str,
    /// labrun's cache folder; toolchain caches go below it.
    pub cache_dir: &'a Path,
    /// Extra environment for every command (after labrun's own settings).
    pub extra_env: &'a [(OsString, OsString)],
    pub log: Option<File>,
    pub log_path: PathBuf,
    pub progress: &'a mut dyn Progress,
    /// The fetcher that asked for the build: a source archive is fetched
    /// through it like any artifact (its mirror folder, cache, network policy).
    pub fetcher: &'a Fetcher,
}

impl BuildCtx<'_> {
    /// A command without standard input, killed if the build is dropped.
    /// The caller's extra environment is applied by [`BuildCtx::run`] (and by
    /// the recipes' `toolchain`) after the recipe's own settings, so it wins.
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.stdin(std::process::Stdio::null()).kill_on_drop(true);
        cmd
    }

    /// Runs one step, its output appended to the log. A failure names the
    /// step and points at the log; stdout is returned for the steps that
    /// answer with data.
    pub async fn run(
        &mut self,
        step: &str,
        mut cmd: Command,
        cwd: &Path,
    ) -> Result<String, ArtifactError> {
        for (k, v) in self.extra_env {
            cmd.env(k, v);
        }
        cmd.current_dir(cwd);
        // The log and the messages never hold credentials of a URL argument
        // (a `git.repo` of `https://user:TOKEN@host/...`) or of git's output.
        let hide = |text: String| crate::url_credentials::without_credentials(&text).into_owned();
        let shown = hide(format!("{:?}", cmd.as_std()));
        self.progress.step(
            self.name,
            &format!("{step} (log: {})", self.log_path.display()),
        );
        self.log_line(&format!("$ {shown}\n  in {}", cwd.display()));
        let output = cmd
            .output()
            .await
            .map_err(|e| self.failed(step, e.to_string()))?;
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = hide(String::from_utf8_lossy(&output.stderr).into_owned());
        self.log_line(&hide(stdout.clone()));
        self.log_line(&stderr);
        if !output.status.success() {
            let last = stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .to_string();
            return Err(self.failed(step, format!("{} ({})", last.trim(), output.status)));
        }
        Ok(stdout)
    }

    pub fn failed(&self, step: &str, detail: String) -> ArtifactError {
        ArtifactError::Build {
            name: self.name.to_string(),
            step: step.to_string(),
            detail,
            log: self.log_path.clone(),
        }
    }

    fn log_line(&mut self, text: &str) {
        if let Some(f) = &mut self.log
            && !text.is_empty()
        {
            let _ = writeln!(f, "{}", text.trim_end());
        }
    }
}

/// Records of a build, written beside it.
#[derive(Serialize)]
struct BuildRecord<'a> {
    scheme: &'a str,
    recipe: String,
    inputs: serde_json::Value,
    toolchain: &'a str,
    binary_sha256: &'a str,
    build_info: &'a str,
    /// Where the source came from (a source build: kind, URL or path,
    /// commit, tree id).
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<serde_json::Value>,
}

/// The built binary for the recipe, from the cache or built now, checked
/// against `expected`.
pub(crate) async fn build_checked(
    recipe: &impl Recipe,
    name: &str,
    expected: &str,
    cache_dir: &Path,
    extra_env: &[(OsString, OsString)],
    progress: &mut dyn Progress,
    fetcher: &Fetcher,
) -> Result<(PathBuf, Source), ArtifactError> {
    let builds = cache_dir.join("builds");
    let io = |what, path: &Path| {
        let path = path.to_path_buf();
        move |e| ArtifactError::Io {
            name: name.to_string(),
            what,
            path,
            source: e,
        }
    };
    std::fs::create_dir_all(&builds).map_err(io("cannot create", &builds))?;
    let mut ctx = BuildCtx {
        name,
        cache_dir,
        extra_env,
        log: None,
        log_path: builds.join(format!("{name}.toolchain.log")),
        progress,
        fetcher,
    };
    let toolchain = recipe.toolchain(&ctx).await?;
    let inputs = recipe.key_inputs(&mut ctx).await?;
    let key = input_key(&inputs, &toolchain);
    let dir = builds.join(&key);
    let binary = dir.join(recipe.binary_name());
    let cached = binary.is_file();
    if !cached {
        std::fs::create_dir_all(&dir).map_err(io("cannot create", &dir))?;
        let log_path = dir.join("build.log");
        ctx.log = Some(File::create(&log_path).map_err(io("cannot write", &log_path))?);
        ctx.log_path = log_path;
        ctx.log_line(&format!("{}\ntoolchain: {toolchain}", recipe.describe()));
        let out = tempfile::Builder::new()
            .prefix(".out-")
            .tempdir_in(&dir)
            .map_err(io("cannot make a temporary folder in", &dir))?;
        let build_info = recipe.build(&mut ctx, out.path()).await?;
        let made = out.path().join(recipe.binary_name());
        if !made.is_file() {
            return Err(ctx.failed(
                "collect the binary",
                format!("the build made no {}", made.display()),
            ));
        }
        let digest = sha256_file(&made).map_err(io("cannot read", &made))?;
        let record = BuildRecord {
            scheme: BUILD_SCHEME,
            recipe: recipe.describe(),
            inputs,
            toolchain: &toolchain,
            binary_sha256: &digest,
            build_info: &build_info,
            source: recipe.origin(),
        };
        let json_path = dir.join("build.json");
        let json = serde_json::to_vec_pretty(&record).unwrap_or_default();
        std::fs::write(&json_path, json).map_err(io("cannot write", &json_path))?;
        // Renamed last: a binary under its real name is a finished build.
        std::fs::rename(&made, &binary).map_err(io("cannot move the binary into", &dir))?;
    }
    let actual = sha256_file(&binary).map_err(io("cannot read", &binary))?;
    if actual != expected {
        return Err(ArtifactError::BuiltDigestMismatch {
            name: name.to_string(),
            recipe: recipe.describe(),
            expected: expected.to_string(),
            actual,
            dir,
        });
    }
    Ok((
        binary,
        Source::Build {
            recipe: recipe.describe(),
            toolchain,
            cached,
            dir,
        },
    ))
}

/// The `build.json` of a cached build whose binary has this digest, for the
/// evidence of a run (what built the binary that ran).
pub fn find_record(cache_dir: &Path, binary_sha256: &str) -> Option<serde_json::Value> {
    let entries = std::fs::read_dir(cache_dir.join("builds")).ok()?;
    entries.filter_map(Result::ok).find_map(|e| {
        let text = std::fs::read_to_string(e.path().join("build.json")).ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        (v.get("binary_sha256")?.as_str()? == binary_sha256).then_some(v)
    })
}

/// SHA-256 over the scheme, the recipe's inputs and the toolchain line.
fn input_key(inputs: &serde_json::Value, toolchain: &str) -> String {
    let mut h = Sha256::new();
    for part in [BUILD_SCHEME, &inputs.to_string(), toolchain] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    hex::encode(h.finalize())
}

/// A field of a recipe that is one word of safe characters (no option or
/// shell syntax reaches a command line through it).
pub(crate) fn is_plain_word(s: &str, extra: &[u8]) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || extra.contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_changes_with_inputs_and_toolchain() {
        let a = serde_json::json!({"module": "m", "version": "v1"});
        let b = serde_json::json!({"module": "m", "version": "v2"});
        assert_ne!(input_key(&a, "go1.26.8"), input_key(&b, "go1.26.8"));
        assert_ne!(input_key(&a, "go1.26.8"), input_key(&a, "go1.27.3"));
        assert_eq!(input_key(&a, "go1.26.8"), input_key(&a, "go1.26.8"));
    }

    #[test]
    fn plain_words() {
        assert!(is_plain_word("github.com/kopia/kopia", b"./-_~"));
        assert!(!is_plain_word("-ldflags", b"./-_~"));
        assert!(!is_plain_word("a b", b"./-_~"));
        assert!(!is_plain_word("", b"./-_~"));
    }
}
