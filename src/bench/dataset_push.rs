//! The git-history dataset's repository, when it lives on the host: pushed
//! into the run's folder in the guest (the guest fetches nothing), and the
//! plan pointed at the copy. A path the host does not have is taken to be
//! on the machine under test already (e.g. a large bundle copied there once).

use crate::bench::layout::RemoteRun;
use crate::bench::remote::run_ok;
use anyhow::{Context as _, bail};
use labrun_evidence::{DatasetPlan, HistorySource, Plan};
use labrun_ssh::Session;
use std::path::{Path, PathBuf};

/// Where the pushed copy lives in the guest.
pub fn remote_bundle(remote: &RemoteRun) -> String {
    format!("{}/repository.bundle", remote.dir())
}

/// Pushes the repository named by `plan` if the host has it, and rewrites
/// the plan to the guest's copy. Returns what was pushed, if anything.
pub async fn push_repository(
    session: &Session,
    remote: &RemoteRun,
    plan: &mut Plan,
    lab_path: &Path,
    scratch: &Path,
) -> anyhow::Result<Option<PathBuf>> {
    let DatasetPlan::GitHistory {
        source: HistorySource::Repository { path, .. },
    } = &mut plan.dataset
    else {
        return Ok(None);
    };
    let local = crate::bench::machine::lab_relative(lab_path, Path::new(path.as_str()));
    if !local.exists() {
        return Ok(None);
    }
    // A repository folder travels as one bundle of all its refs: one file,
    // and the guest's git reads it like a repository.
    let bundle = if local.is_dir() {
        let out = scratch.join("repository.bundle");
        let status = std::process::Command::new("git")
            .arg("-C")
            .arg(&local)
            .args(["bundle", "create"])
            .arg(&out)
            .arg("--all")
            .stdout(std::process::Stdio::null())
            .status()
            .context("running git on the host to bundle the repository (is git installed?)")?;
        if !status.success() {
            bail!(
                "`git bundle create` failed for {}: is it a git repository?",
                local.display()
            );
        }
        out
    } else {
        local.clone()
    };
    run_ok(
        session,
        &format!("mkdir -p {}", crate::bench::layout::sh_quote(&remote.dir())),
    )
    .await?;
    let target = remote_bundle(remote);
    let pushed = session.upload(&bundle, &target, 0o644).await;
    if bundle != local {
        let _ = std::fs::remove_file(&bundle);
    }
    pushed.with_context(|| format!("pushing {} into the guest", local.display()))?;
    *path = target;
    Ok(Some(local))
}
