//! Getting every file a wheel build reads, on the host, each checked
//! against its pin before anything is built: the sdists and build wheels
//! through the host pip's own finder and session ([`PIP_FETCH`]: its index,
//! proxy and certificates are the host's, and no code of the package runs
//! on the host), the patches from the lab's folder. Downloads are kept in
//! `<cache>/python/dists/<sha256>/` so a second build fetches nothing.

use super::{PinnedDist, PythonBuild};
use crate::build::BuildCtx;
use crate::digest::sha256_file;
use crate::error::ArtifactError;
use crate::spec::local_path;
use std::path::{Path, PathBuf};

/// The script that finds and saves one file through the host's pip.
const PIP_FETCH: &str = include_str!("pip_fetch.py");

/// The checked files of one build.
pub(super) struct Fetched {
    /// The tool's sdist.
    pub sdist: PathBuf,
    /// The runtime dependencies' sdists, in the lab's order.
    pub requires: Vec<PathBuf>,
    /// The build requirements' wheels.
    pub build_requires: Vec<PathBuf>,
    /// The patches, in order.
    pub patches: Vec<PathBuf>,
}

/// What pip is asked for.
#[derive(Clone, Copy)]
enum Kind {
    /// Source only: it is built for the guest's Python.
    Sdist,
    /// A pure-Python wheel: it runs in the build root only.
    PureWheel,
}

pub(super) async fn fetch_all(
    b: &PythonBuild,
    ctx: &mut BuildCtx<'_>,
) -> Result<Fetched, ArtifactError> {
    let main = PinnedDist {
        name: b.name.clone(),
        version: b.version.clone(),
        sha256: b.sdist_sha256.clone(),
    };
    let sdist = match &b.file {
        Some(file) => checked_local(ctx, &local_path(file), &b.sdist_sha256, "sdist")?,
        None => fetch(ctx, &main, Kind::Sdist).await?,
    };
    let mut requires = Vec::new();
    for d in &b.requires {
        requires.push(fetch(ctx, d, Kind::Sdist).await?);
    }
    let mut build_requires = Vec::new();
    for d in &b.build_requires {
        build_requires.push(fetch(ctx, d, Kind::PureWheel).await?);
    }
    let mut patches = Vec::new();
    for p in &b.patches {
        patches.push(checked_local(
            ctx,
            &local_path(&p.path),
            &p.sha256,
            "patch",
        )?);
    }
    Ok(Fetched {
        sdist,
        requires,
        build_requires,
        patches,
    })
}

/// A local file whose digest must be the pin.
fn checked_local(
    ctx: &BuildCtx<'_>,
    path: &Path,
    pin: &str,
    what: &str,
) -> Result<PathBuf, ArtifactError> {
    let step = format!("read the {what} {}", path.display());
    let actual = sha256_file(path).map_err(|e| {
        ctx.failed(
            &step,
            format!("{e}: give the path from the folder labrun runs in"),
        )
    })?;
    if actual != pin {
        return Err(ctx.failed(
            &step,
            format!(
                "its SHA-256 is {actual}, the lab pins {pin}: nothing was built. If the {what} \
                 was changed on purpose, pin the new digest"
            ),
        ));
    }
    Ok(path.to_path_buf())
}

/// The cached file of a pinned distribution, downloaded now when missing.
async fn fetch(
    ctx: &mut BuildCtx<'_>,
    d: &PinnedDist,
    kind: Kind,
) -> Result<PathBuf, ArtifactError> {
    let keep = ctx.cache_dir.join("python/dists").join(&d.sha256);
    if let Some(file) = only_file(&keep) {
        return Ok(file);
    }
    let spec = format!("{}=={}", d.name, d.version);
    let step = format!("download {spec} through the host's pip");
    let io = |e: std::io::Error| ctx.failed(&step, e.to_string());
    std::fs::create_dir_all(ctx.cache_dir.join("python/dists")).map_err(io)?;
    let tmp = tempfile::Builder::new()
        .prefix(".download-")
        .tempdir_in(ctx.cache_dir.join("python/dists"))
        .map_err(io)?;
    let mut cmd = ctx.command("python3");
    let kind_word = match kind {
        Kind::Sdist => "sdist",
        Kind::PureWheel => "pure-wheel",
    };
    cmd.args(["-c", PIP_FETCH, &d.name, &d.version, kind_word])
        .arg(tmp.path());
    if let Err(e) = ctx.run(&step, cmd, tmp.path()).await {
        return Err(not_served(ctx, d, kind, e));
    }
    let file = only_file(tmp.path())
        .ok_or_else(|| ctx.failed(&step, "pip saved no single file: see the log".into()))?;
    let actual = sha256_file(&file).map_err(|e| ctx.failed(&step, e.to_string()))?;
    if actual != d.sha256 {
        return Err(ArtifactError::Build {
            name: ctx.name.to_string(),
            step,
            detail: format!(
                "{} has SHA-256 {actual}, but the lab pins {}: nothing was built. A published \
                 file never changes: check the name, version and digest (PyPI's page of the \
                 release lists each file's SHA-256)",
                file.file_name().unwrap_or_default().to_string_lossy(),
                d.sha256
            ),
            log: ctx.log_path.clone(),
        });
    }
    let name = file.file_name().unwrap_or_default().to_owned();
    std::fs::create_dir_all(&keep).map_err(|e| ctx.failed("keep the download", e.to_string()))?;
    std::fs::rename(&file, keep.join(&name))
        .map_err(|e| ctx.failed("keep the download", e.to_string()))?;
    Ok(keep.join(name))
}

/// pip's refusal, said as what to do.
fn not_served(ctx: &BuildCtx<'_>, d: &PinnedDist, kind: Kind, e: ArtifactError) -> ArtifactError {
    let ArtifactError::Build {
        step, detail, log, ..
    } = e
    else {
        return e;
    };
    let what = match kind {
        Kind::Sdist => "no sdist",
        Kind::PureWheel => "no pure-Python wheel (py3-none-any)",
    };
    ArtifactError::Build {
        name: ctx.name.to_string(),
        step,
        detail: format!(
            "the package index the host's pip uses serves {what} of {}=={} ({detail}): \
             check the name and version on PyPI; nothing was built",
            d.name, d.version
        ),
        log,
    }
}

/// The one regular file in a folder.
fn only_file(dir: &Path) -> Option<PathBuf> {
    let mut files = std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file());
    let first = files.next()?;
    files.next().is_none().then_some(first)
}
