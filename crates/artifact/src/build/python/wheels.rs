//! Building the wheels inside the suite's root, without network.
//!
//! Every source is unpacked (and the tool's patched) on the host into
//! `<root>/labrun-build/src/`, then, in the root under `unshare --net`: a
//! venv that sees Debian's setuptools and wheel, the build requirements
//! installed into it from their pinned wheels, and `pip wheel --no-index
//! --no-deps --no-build-isolation` of each source folder. The paths are the
//! same on every build (`/labrun-build/src/NAME-VERSION`) and
//! `SOURCE_DATE_EPOCH` fixes the wheels' time stamps, so the same inputs
//! make the same wheels.

use super::PythonBuild;
use super::dists::Fetched;
use super::root::{SuiteRoot, last_lines};
use crate::build::BuildCtx;
use crate::digest::sha256_file;
use crate::error::ArtifactError;
use std::path::{Path, PathBuf};
use tokio::process::Command;

/// The build's folder inside the root, as the build sees it.
const IN_ROOT: &str = "/labrun-build";

/// 1980-01-01, the earliest time a zip entry can carry: the wheels' files
/// get it rather than the time of the build.
const SOURCE_DATE_EPOCH: &str = "315532800";

/// Built wheels: their folder and each file with its SHA-256, by name.
pub struct Built {
    pub dir: PathBuf,
    pub wheels: Vec<(String, String)>,
}

pub(super) async fn build(
    b: &PythonBuild,
    ctx: &mut BuildCtx<'_>,
    root: &SuiteRoot,
    fetched: &Fetched,
    out: &Path,
) -> Result<Built, ArtifactError> {
    let root_dir = root.path(ctx.name)?;
    // One build at a time in a root: the build folder's path is fixed (so
    // the wheels are the same), and another labrun process may share the
    // cache. Held until this function returns; the lock file stays.
    let lock_path = root_dir.with_extension("lock");
    let lock = std::fs::File::create(&lock_path)
        .and_then(|f| f.lock().map(|()| f))
        .map_err(|e| {
            ctx.failed(
                "lock the build root",
                format!("{}: {e}", lock_path.display()),
            )
        })?;
    let work = root_dir.join(IN_ROOT.trim_start_matches('/'));
    let io = |step: &'static str| move |e: std::io::Error| (step, e.to_string());
    let prepared = (|| {
        if work.exists() {
            // What a killed build left: nothing in it is kept.
            std::fs::remove_dir_all(&work).map_err(io("clear the build folder"))?;
        }
        for sub in ["dists", "src", "wheels", "home"] {
            std::fs::create_dir_all(work.join(sub)).map_err(io("make the build folder"))?;
        }
        for wheel in &fetched.build_requires {
            let name = wheel.file_name().unwrap_or_default();
            std::fs::copy(wheel, work.join("dists").join(name))
                .map_err(io("copy the build requirements"))?;
        }
        Ok(())
    })();
    if let Err((step, detail)) = prepared {
        return Err(ctx.failed(step, detail));
    }
    let mut sources = vec![unpack(ctx, &fetched.sdist, &work).await?];
    let tool_src = work.join("src").join(&sources[0]);
    patch(b, ctx, &tool_src, &fetched.patches).await?;
    for f in &b.remove_files {
        std::fs::remove_file(tool_src.join(f)).map_err(|e| {
            ctx.failed(
                &format!("remove {f}"),
                format!("{e}: `remove_files` names paths inside the sdist's folder"),
            )
        })?;
    }
    for sdist in &fetched.requires {
        sources.push(unpack(ctx, sdist, &work).await?);
    }

    let venv = format!("{IN_ROOT}/venv");
    let pip = format!("{venv}/bin/pip");
    in_root(
        ctx,
        &root_dir,
        "make the build venv",
        &["python3", "-m", "venv", "--system-site-packages", &venv],
    )
    .await?;
    if !fetched.build_requires.is_empty() {
        let mut args = vec![pip.as_str(), "install", "--no-index", "--no-deps"];
        let files: Vec<String> = fetched
            .build_requires
            .iter()
            .map(|w| {
                format!(
                    "{IN_ROOT}/dists/{}",
                    w.file_name().unwrap_or_default().to_string_lossy()
                )
            })
            .collect();
        args.extend(files.iter().map(String::as_str));
        in_root(ctx, &root_dir, "install the build requirements", &args).await?;
    }
    for source in &sources {
        let dir = format!("{IN_ROOT}/src/{source}");
        let step = format!("pip wheel {source}");
        in_root(
            ctx,
            &root_dir,
            &step,
            &[
                &pip,
                "wheel",
                "--no-index",
                "--no-deps",
                "--no-build-isolation",
                "--find-links",
                &format!("{IN_ROOT}/dists"),
                "--wheel-dir",
                &format!("{IN_ROOT}/wheels"),
                &dir,
            ],
        )
        .await?;
    }

    let collected = collect(&work.join("wheels"), &out.join("wheels"));
    let _ = std::fs::remove_dir_all(&work);
    drop(lock);
    collected.map_err(|e| ctx.failed("collect the wheels", e.to_string()))
}

/// Moves the wheels out of the root into a fresh folder, with their digests.
fn collect(from: &Path, out: &Path) -> std::io::Result<Built> {
    std::fs::create_dir_all(out)?;
    let mut wheels = Vec::new();
    for entry in std::fs::read_dir(from)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if !name.ends_with(".whl") {
            continue;
        }
        std::fs::rename(&path, out.join(&name))?;
        wheels.push((name.clone(), sha256_file(&out.join(&name))?));
    }
    wheels.sort();
    Ok(Built {
        dir: out.to_path_buf(),
        wheels,
    })
}

/// Unpacks an sdist into `<work>/src/` and returns its top folder's name.
async fn unpack(
    ctx: &mut BuildCtx<'_>,
    sdist: &Path,
    work: &Path,
) -> Result<String, ArtifactError> {
    let file = sdist
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let step = format!("unpack {file}");
    if !(file.ends_with(".tar.gz") || file.ends_with(".tar.bz2") || file.ends_with(".tgz")) {
        return Err(ctx.failed(
            &step,
            "labrun unpacks sdists that are tarballs (.tar.gz, .tar.bz2); this one is not".into(),
        ));
    }
    let staging = work.join("unpack");
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).map_err(|e| ctx.failed(&step, e.to_string()))?;
    let mut cmd = ctx.command("tar");
    cmd.args(["-x", "--no-same-owner", "--no-same-permissions", "-f"])
        .arg(sdist)
        .arg("-C")
        .arg(&staging);
    ctx.run(&step, cmd, work).await?;
    let tops: Vec<PathBuf> = std::fs::read_dir(&staging)
        .map_err(|e| ctx.failed(&step, e.to_string()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    let [top] = tops.as_slice() else {
        return Err(ctx.failed(
            &step,
            "an sdist holds one top folder; this one does not".into(),
        ));
    };
    let name = top
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    std::fs::rename(top, work.join("src").join(&name))
        .map_err(|e| ctx.failed(&step, e.to_string()))?;
    let _ = std::fs::remove_dir(&staging);
    Ok(name)
}

/// Applies the patches in order; one that does not apply names its file
/// and the hunks that failed.
async fn patch(
    b: &PythonBuild,
    ctx: &mut BuildCtx<'_>,
    src: &Path,
    patches: &[PathBuf],
) -> Result<(), ArtifactError> {
    for (written, path) in b.patches.iter().zip(patches) {
        let step = format!("apply {}", written.path);
        let mut cmd = ctx.command("patch");
        cmd.args([
            "-p1",
            "--batch",
            "--forward",
            "--no-backup-if-mismatch",
            "-r",
            "-",
            "-i",
        ])
        .arg(std::fs::canonicalize(path).unwrap_or_else(|_| path.clone()))
        .env("LC_ALL", "C");
        cmd.current_dir(src);
        let output = cmd
            .output()
            .await
            .map_err(|e| ctx.failed(&step, e.to_string()))?;
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        ctx.log_line(&format!("$ patch -p1 < {}\n{text}", written.path));
        if !output.status.success() {
            return Err(ctx.failed(
                &step,
                format!(
                    "the patch does not apply to {}=={}: {}",
                    b.name,
                    b.version,
                    failed_hunks(&text)
                ),
            ));
        }
    }
    Ok(())
}

/// `patch`'s report of failed hunks, as `file: hunk #N at line L`.
pub(super) fn failed_hunks(output: &str) -> String {
    let mut file = "";
    let mut failed = Vec::new();
    for line in output.lines() {
        if let Some(f) = line.strip_prefix("patching file ") {
            file = f.trim().trim_matches('\'');
        } else if let Some(rest) = line.strip_prefix("Hunk #")
            && rest.contains("FAILED")
        {
            let number = rest.split_whitespace().next().unwrap_or("?");
            let at = rest
                .split(" at ")
                .nth(1)
                .unwrap_or("")
                .trim_end_matches('.');
            failed.push(format!("{file}: hunk #{number} (at line {at}) FAILED"));
        } else if line.contains("can't find file") || line.contains("No file to patch") {
            failed.push(format!(
                "a file it patches is not in the sdist ({})",
                line.trim()
            ));
        } else if line.contains("Reversed (or previously applied) patch") {
            failed.push(format!("{file}: already applied (or reversed)"));
        }
    }
    if failed.is_empty() {
        return format!("patch said: {}", last_lines(output, 3));
    }
    failed.join("; ")
}

/// Runs one command in the root without network, its output to the log;
/// a failure shows the last lines and the log's path.
async fn in_root(
    ctx: &mut BuildCtx<'_>,
    root: &Path,
    step: &str,
    args: &[&str],
) -> Result<(), ArtifactError> {
    let mut cmd = Command::new("unshare");
    cmd.stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .args(["--net", "--", "chroot"])
        .arg(root)
        .args(["/usr/bin/env", "-i"])
        .args([
            "PATH=/usr/local/bin:/usr/bin:/bin",
            "LC_ALL=C.UTF-8",
            &format!("HOME={IN_ROOT}/home"),
            &format!("SOURCE_DATE_EPOCH={SOURCE_DATE_EPOCH}"),
            "PYTHONHASHSEED=0",
            "PYTHONDONTWRITEBYTECODE=1",
            "PIP_NO_CACHE_DIR=1",
            "PIP_DISABLE_PIP_VERSION_CHECK=1",
            "PIP_NO_INPUT=1",
        ])
        .args(args)
        .current_dir(root);
    ctx.progress.step(
        ctx.name,
        &format!("{step} (log: {})", ctx.log_path.display()),
    );
    ctx.log_line(&format!(
        "$ [offline in {}] {}",
        root.display(),
        args.join(" ")
    ));
    let output = cmd.output().await.map_err(|e| {
        ctx.failed(
            step,
            format!("cannot run `unshare --net chroot` (labrun must run as root): {e}"),
        )
    })?;
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    ctx.log_line(&text);
    if !output.status.success() {
        return Err(ctx.failed(
            step,
            format!(
                "{}; its last lines:\n    {}",
                output.status,
                last_lines(&text, 12)
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_hunk_is_named() {
        let out = "patching file attic/crypto.pyx\nHunk #1 succeeded at 17.\n\
                   Hunk #2 FAILED at 84.\n1 out of 3 hunks FAILED\n";
        assert_eq!(
            failed_hunks(out),
            "attic/crypto.pyx: hunk #2 (at line 84) FAILED"
        );
        let missing =
            "can't find file to patch at input line 3\nNo file to patch.  Skipping patch.\n";
        assert!(
            failed_hunks(missing).contains("not in the sdist"),
            "{}",
            failed_hunks(missing)
        );
    }
}
