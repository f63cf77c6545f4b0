//! `apt-get download PACKAGE=VERSION`, with the host's own apt configuration
//! (its sources and its signed indexes), into a temporary folder inside the
//! cache so the verified .deb is then renamed, not copied.
//!
//! A package of another suite than the host's (`suite: sid`) is downloaded
//! with a sources list and package lists of labrun's own, in
//! `<cache>/apt/<suite>/`: the host's archive asked for that suite, the host's
//! keyring checking its signatures, and the host's own configuration untouched.

use crate::cache::find_in;
use crate::error::ArtifactError;
use crate::source::FileName;
use crate::spec::AptPackage;
use crate::stale::LockedTempDir;
use std::path::{Path, PathBuf};

/// apt downloads into `<cache>/artifacts/.apt-*`, swept when stale.
pub(crate) const TEMP_PREFIX: &str = ".apt-";

/// The downloaded .deb, in a temporary folder that is removed when dropped.
pub(crate) struct AptDownload {
    pub _dir: LockedTempDir,
    pub path: PathBuf,
    pub file_name: String,
}

pub(crate) async fn download(
    name: &str,
    apt: &AptPackage,
    parent: &Path,
) -> Result<AptDownload, ArtifactError> {
    let fail = |detail: String| ArtifactError::Apt {
        name: name.to_string(),
        package: apt.package.clone(),
        version: apt.version.clone(),
        detail,
    };
    let io_err = |what, source| ArtifactError::Io {
        name: name.to_string(),
        what,
        path: parent.to_path_buf(),
        source,
    };
    tokio::fs::create_dir_all(parent)
        .await
        .map_err(|e| io_err("cannot create the cache folder", e))?;
    let (dir, _) = crate::stale::temp_dir_in(parent, TEMP_PREFIX)
        .map_err(|e| io_err("cannot make a temporary folder in", e))?;
    let suite_opts = match &apt.suite {
        Some(suite) => suite_lists(parent, suite).await.map_err(&fail)?,
        None => Vec::new(),
    };
    // The spec was validated, so the package and version hold no option or
    // shell syntax; `--` ends apt's options all the same.
    let output = tokio::process::Command::new("apt-get")
        .args(&suite_opts)
        .args(["download", "-q", "--"])
        .arg(format!("{}={}", apt.package, apt.version))
        .current_dir(dir.path())
        .env("LC_ALL", "C")
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| fail(format!("cannot run apt-get: {e} (is this a Debian host?)")))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        // apt's own `E:` lines say what went wrong; its warnings only distract.
        let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("E:")).collect();
        let detail = if errors.is_empty() {
            stderr.trim().to_string()
        } else {
            errors.join("; ")
        };
        return Err(fail(format!("{} ({})", detail, output.status)));
    }
    let wanted = FileName::apt_deb(&apt.package, &apt.version);
    let mut found = find_in(dir.path(), &wanted);
    if found.len() != 1 {
        return Err(fail(format!(
            "expected one file named {wanted} in its folder, found {}",
            found.len()
        )));
    }
    let path = found.remove(0);
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(AptDownload {
        _dir: dir,
        path,
        file_name,
    })
}

/// Where labrun keeps the package lists of `suite`, beside the artifacts.
fn suite_dir(artifacts: &Path, suite: &str) -> PathBuf {
    artifacts
        .parent()
        .unwrap_or(artifacts)
        .join("apt")
        .join(suite)
}

/// apt's options that make it read labrun's sources list and lists for
/// `suite` instead of the host's.
pub fn suite_options(dir: &Path, suite: &str) -> Vec<String> {
    let mut opts = vec![
        format!(
            "-oDir::Etc::SourceList={}",
            dir.join("sources.list").display()
        ),
        "-oDir::Etc::SourceParts=/nonexistent".to_string(),
        format!("-oDir::State::Lists={}", dir.join("lists").display()),
        "-oDir::Cache::pkgcache=".to_string(),
        "-oDir::Cache::srcpkgcache=".to_string(),
    ];
    // sid's Release file has a Valid-Until that the archive snapshot these
    // hosts reach has passed; its signature is still checked.
    if matches!(suite, "sid" | "unstable" | "experimental") {
        opts.push("-oAcquire::Check-Valid-Until=false".to_string());
    }
    opts
}

/// Writes labrun's sources list for `suite` and runs `apt-get update` on it
/// (its lists only); returns the options for the apt commands that follow.
async fn suite_lists(artifacts: &Path, suite: &str) -> Result<Vec<String>, String> {
    let dir = suite_dir(artifacts, suite);
    let sources = crate::apt_sources::sources_for_suite(Path::new("/etc/apt"), suite)
        .map_err(|e| e.to_string())?;
    let text: String = sources.iter().map(|s| s.mmdebstrap_line() + "\n").collect();
    std::fs::create_dir_all(dir.join("lists/partial"))
        .and_then(|()| std::fs::write(dir.join("sources.list"), text))
        .map_err(|e| format!("cannot write {}: {e}", dir.display()))?;
    let opts = suite_options(&dir, suite);
    let output = tokio::process::Command::new("apt-get")
        .args(&opts)
        .args(["update", "-q"])
        .env("LC_ALL", "C")
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| format!("cannot run apt-get: {e} (is this a Debian host?)"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("E:")).collect();
        return Err(format!(
            "`apt-get update` of suite {suite} (lists in {}) failed: {}",
            dir.display(),
            errors.join("; ")
        ));
    }
    Ok(opts)
}

/// The SHA-256 of `PACKAGE=VERSION` as the host's signed apt index lists it
/// (`apt-cache show`), the upstream checksum for an apt source; for another
/// suite (`suite: sid`), that suite's signed index, in labrun's own lists
/// beside `artifacts` (the cache's artifacts folder), as a download reads it.
pub async fn index_sha256(apt: &AptPackage, artifacts: &Path) -> Result<String, ArtifactError> {
    let fail = |problem: String| ArtifactError::Checksums {
        url: format!("apt-cache show {}={}", apt.package, apt.version),
        problem,
    };
    let suite_opts = match &apt.suite {
        Some(suite) => suite_lists(artifacts, suite).await.map_err(&fail)?,
        None => Vec::new(),
    };
    let output = tokio::process::Command::new("apt-cache")
        .args(&suite_opts)
        .args(["show", "--"])
        .arg(format!("{}={}", apt.package, apt.version))
        .env("LC_ALL", "C")
        .output()
        .await
        .map_err(|e| fail(format!("cannot run apt-cache: {e}")))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(fail(
            String::from_utf8_lossy(&output.stderr).trim().to_string(),
        ));
    }
    // Several stanzas when several architectures are configured; the native
    // one comes first, as `apt-get download` picks it.
    let digests: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("SHA256: "))
        .map(str::trim)
        .collect();
    digests
        .first()
        .filter(|d| crate::digest::is_sha256_hex(d))
        .map(|d| d.to_string())
        .ok_or_else(|| {
            fail(format!(
                "apt's index has no such package version; `apt-cache policy {}` lists the \
                 versions offered (run `apt-get update` if the lists are old)",
                apt.package
            ))
        })
}
