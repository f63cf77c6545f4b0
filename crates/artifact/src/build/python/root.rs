//! A root file system of the guest's Debian suite where wheels are built:
//! the guest's own python3, C compiler and libraries, so an extension built
//! here loads there. Made once by mmdebstrap from the host's Debian archive
//! and kept in `<cache>/python/roots/<suite>-<key>/`, keyed by the suite,
//! the package list and the sources; the versions it holds (`dpkg-query`)
//! join the wheels' cache key, so a root rebuilt on a newer archive makes
//! new wheels rather than taking old ones for them.

use crate::apt_sources::sources_for_suite;
use crate::error::ArtifactError;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use tokio::process::Command;

/// What every root holds beside the lab's `build_packages`.
const BASE_PACKAGES: &[&str] = &[
    "build-essential",
    "python3-dev",
    "python3-venv",
    "python3-pip",
    "python3-setuptools",
    "python3-wheel",
];

pub struct SuiteRoot {
    suite: String,
    packages: Vec<String>,
    roots: PathBuf,
}

impl SuiteRoot {
    pub fn new(cache_dir: &Path, suite: &str, extra: &[String]) -> SuiteRoot {
        let mut packages: Vec<String> = BASE_PACKAGES.iter().map(|s| s.to_string()).collect();
        packages.extend(extra.iter().cloned());
        packages.sort();
        packages.dedup();
        SuiteRoot {
            suite: suite.to_string(),
            packages,
            roots: cache_dir.join("python/roots"),
        }
    }

    fn mirror_lines(&self, name: &str) -> Result<Vec<String>, ArtifactError> {
        let sources = sources_for_suite(Path::new("/etc/apt"), &self.suite).map_err(|e| {
            ArtifactError::Toolchain {
                name: name.to_string(),
                wanted: format!("a Debian {} root for the wheel build", self.suite),
                found: e.to_string(),
                hint: "the root is built from the host's Debian archive".into(),
            }
        })?;
        Ok(sources.iter().map(|s| s.mmdebstrap_line()).collect())
    }

    /// The root's folder: the suite, then a digest of what it is made of.
    fn dir(&self, mirrors: &[String]) -> PathBuf {
        let mut h = Sha256::new();
        for part in std::iter::once(&self.suite)
            .chain(&self.packages)
            .chain(mirrors)
        {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        let key = hex::encode(h.finalize());
        self.roots.join(format!("{}-{}", self.suite, &key[..16]))
    }

    /// The root's folder, made now when it is not there yet.
    pub async fn ensure(&self, name: &str) -> Result<PathBuf, ArtifactError> {
        let mirrors = self.mirror_lines(name)?;
        let dir = self.dir(&mirrors);
        if dir.join("usr/bin/python3").exists() {
            return Ok(dir);
        }
        let fail = |found: String| ArtifactError::Toolchain {
            name: name.to_string(),
            wanted: format!(
                "a Debian {} root with {}",
                self.suite,
                self.packages.join(", ")
            ),
            found,
            hint: "mmdebstrap builds it (as root, from the host's apt sources): check that \
                   `apt-get update` works and that every build_packages name is in the suite"
                .into(),
        };
        std::fs::create_dir_all(&self.roots).map_err(|e| fail(e.to_string()))?;
        let tmp = tempfile::Builder::new()
            .prefix(".root-")
            .tempdir_in(&self.roots)
            .map_err(|e| fail(e.to_string()))?;
        let log = dir.with_extension("log");
        let mut cmd = Command::new("mmdebstrap");
        cmd.stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .arg("--variant=apt")
            .arg(format!("--include={}", self.packages.join(",")))
            .arg("--aptopt=APT::Install-Recommends \"false\"")
            .args([
                "--dpkgopt=path-exclude=/usr/share/man/*",
                "--dpkgopt=path-exclude=/usr/share/doc/*",
                "--dpkgopt=path-exclude=/usr/share/locale/*",
            ]);
        // sid's Release file carries a Valid-Until date the archive's
        // snapshot has passed (as for the guest image); signatures are
        // still checked.
        if matches!(self.suite.as_str(), "sid" | "unstable" | "experimental") {
            cmd.arg("--aptopt=Acquire::Check-Valid-Until \"false\"");
        }
        let root = tmp.path().join("root");
        cmd.arg(&self.suite).arg(&root).args(&mirrors);
        let output = cmd
            .output()
            .await
            .map_err(|e| fail(format!("cannot run mmdebstrap: {e}")))?;
        let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stderr));
        let _ = std::fs::write(&log, &text);
        if !output.status.success() {
            return Err(fail(format!(
                "mmdebstrap failed ({}): {}\n  its output is in {}",
                output.status,
                last_lines(&text, 5),
                log.display()
            )));
        }
        match std::fs::rename(&root, &dir) {
            Ok(()) => Ok(dir),
            // Another labrun (or test) built the same root meanwhile and
            // moved it in first: the same inputs, so theirs is kept and
            // this one goes with its temporary folder.
            Err(_) if dir.join("usr/bin/python3").exists() => Ok(dir),
            Err(e) => Err(fail(e.to_string())),
        }
    }

    /// The root in a few lines: suite, python3, gcc, and a digest of every
    /// package version it holds (for the cache key and the evidence). A
    /// root whose python3 is not the one labrun knows for the suite stops
    /// here, since `check` judged the lab by that table.
    pub async fn describe(&self, name: &str) -> Result<String, ArtifactError> {
        let mirrors = self.mirror_lines(name)?;
        let dir = self.dir(&mirrors);
        let ask = |program: &str, args: &[&str]| {
            let mut cmd = Command::new("chroot");
            cmd.stdin(std::process::Stdio::null())
                .arg(&dir)
                .args(["/usr/bin/env", "-i", "PATH=/usr/bin:/bin", "LC_ALL=C"])
                .arg(program)
                .args(args);
            cmd
        };
        let fail = |found: String| ArtifactError::Toolchain {
            name: name.to_string(),
            wanted: format!("the Debian {} root in {}", self.suite, dir.display()),
            found,
            hint: "remove that folder and run again: labrun builds it anew".into(),
        };
        let run = |mut cmd: Command| async move {
            let out = cmd.output().await.map_err(|e| e.to_string())?;
            if !out.status.success() {
                return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
            }
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        };
        let python = run(ask("python3", &["--version"])).await.map_err(fail)?;
        let gcc = run(ask("gcc", &["-dumpfullversion"])).await.map_err(fail)?;
        let packages = run(ask(
            "dpkg-query",
            &["-W", "-f", "${Package} ${Version} ${Architecture}\\n"],
        ))
        .await
        .map_err(fail)?;
        let have = python
            .strip_prefix("Python ")
            .and_then(|v| {
                let mut it = v.split('.');
                Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
            })
            .ok_or_else(|| fail(format!("python3 --version said {python:?}")))?;
        if super::suite_python(&self.suite) != Some(have) {
            return Err(fail(format!(
                "its python3 is {python}, not the one labrun's table of suites \
                 (build/python/rules.rs) gives for {}: update that row",
                self.suite
            )));
        }
        let digest = hex::encode(Sha256::digest(packages.as_bytes()));
        Ok(format!(
            "debian {} root: {python}, gcc {gcc}, {} packages (dpkg-query sha256 {digest})",
            self.suite,
            packages.lines().count()
        ))
    }

    /// The folder (for a build that has already called [`SuiteRoot::ensure`]).
    pub fn path(&self, name: &str) -> Result<PathBuf, ArtifactError> {
        Ok(self.dir(&self.mirror_lines(name)?))
    }
}

/// The last `n` non-empty lines of a text, joined for a message.
pub(super) fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n    ")
}
