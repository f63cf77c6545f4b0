//! Making a real tree reachable on the machine under test before the agent
//! starts: a host folder pushed into a store of trees addressed by their
//! manifest's digest (a second run on the same machine pushes nothing),
//! an archive fetched through the artifact cache, checked and copied in.
//! The plan is then pointed at the guest's copies.
//!
//! A folder on a `target:` machine is read where it is: nothing is pushed.

use crate::bench::layout::{RemoteRun, sh_quote};
use crate::real_tree::survey::survey;
use anyhow::{Context as _, bail};
use labrun_evidence::TreeSource;
use labrun_ssh::Session;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What the host knows of a tree it made reachable (`raw/dataset-push.json`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Pushed {
    /// Where the tree (or the archive) is on the machine under test.
    pub remote_path: String,
    /// Bytes sent (0 when the machine had it already).
    pub sent_bytes: u64,
    pub secs: f64,
}

/// Where the host's pushed trees live on a machine: by manifest digest.
pub fn tree_store(remote: &RemoteRun, digest: &str) -> String {
    format!("{}/trees/{digest}", remote.base)
}

/// Pushes the host folder `local` into the machine's tree store unless it
/// is there already; returns the source the plan names.
pub async fn push_folder(
    session: &Session,
    remote: &RemoteRun,
    local: &Path,
    note: &mut dyn FnMut(&str),
) -> anyhow::Result<(TreeSource, Pushed)> {
    let started = Instant::now();
    let dir = local.to_path_buf();
    let survey = tokio::task::spawn_blocking(move || survey(&dir)).await?;
    let survey = survey.map_err(anyhow::Error::msg)?;
    note(&format!(
        "dataset: {} files, {} in {} folders: hashing it on the host",
        survey.files,
        labrun_vocab::human_bytes(survey.bytes),
        survey.dirs
    ));
    // Hashed into a file as the folder is read, never held whole: a
    // user's folder may hold millions of files (issue 31).
    let scratch = tempfile::NamedTempFile::new()?;
    let (dir, manifest_path) = (local.to_path_buf(), scratch.path().to_path_buf());
    let written =
        tokio::task::spawn_blocking(move || labrun_dataset::scan_to_file(&dir, &manifest_path))
            .await?
            .with_context(|| format!("hashing the dataset folder {}", local.display()))?;
    let digest = written.sha256;
    let store = tree_store(remote, &digest);
    let tree = format!("{store}/tree");
    let source = TreeSource::Folder {
        path: tree.clone(),
        manifest_sha256: Some(digest.clone()),
    };
    let there = session
        .exec(&format!("test -d {}", sh_quote(&tree)))
        .await?
        .success();
    if there {
        note(&format!(
            "dataset: the machine has this tree already (manifest {}): nothing to push",
            &digest[..12]
        ));
        return Ok((
            source,
            Pushed {
                remote_path: tree,
                sent_bytes: 0,
                secs: started.elapsed().as_secs_f64(),
            },
        ));
    }
    refuse_if_too_big(session, remote, survey.bytes).await?;
    note(&format!(
        "dataset: pushing {} into the machine",
        labrun_vocab::human_bytes(survey.bytes)
    ));
    let partial = format!("{store}/tree.partial");
    let manifest_file = format!("{store}/manifest.jsonl");
    crate::bench::remote::run_ok(
        session,
        &format!(
            "rm -rf {p} && mkdir -p {s}",
            p = sh_quote(&partial),
            s = sh_quote(&store)
        ),
    )
    .await?;
    session
        .upload(scratch.path(), &manifest_file, 0o644)
        .await
        .context("copying the tree's manifest into the machine")?;
    let push_started = Instant::now();
    session
        .upload_dir(local, &partial)
        .await
        .with_context(|| format!("pushing {} into the machine", local.display()))?;
    let push_secs = push_started.elapsed().as_secs_f64();
    // The guest's own hash of what arrived: a folder written to while it
    // was pushed is refused here, not an hour into the run.
    let check = session
        .exec(&format!(
            "{agent} verify --manifest {m} --dir {p}",
            agent = sh_quote(&remote.agent()),
            m = sh_quote(&manifest_file),
            p = sh_quote(&partial)
        ))
        .await?;
    if !check.success() {
        let _ = session.exec(&format!("rm -rf {}", sh_quote(&store))).await;
        bail!(
            "the folder {} changed while it was pushed (the machine's copy does not match the host's manifest: {}): stop what writes to it, or point `dataset.path` at a copy, and run again",
            local.display(),
            String::from_utf8_lossy(&check.stdout).trim()
        );
    }
    crate::bench::remote::run_ok(
        session,
        &format!("mv {} {}", sh_quote(&partial), sh_quote(&tree)),
    )
    .await?;
    note(&format!(
        "dataset: pushed {} in {push_secs:.1} s ({}/s)",
        labrun_vocab::human_bytes(survey.bytes),
        labrun_vocab::human_bytes((survey.bytes as f64 / push_secs.max(0.001)) as u64)
    ));
    Ok((
        source,
        Pushed {
            remote_path: tree,
            sent_bytes: survey.bytes,
            secs: started.elapsed().as_secs_f64(),
        },
    ))
}

/// The agent's rule ([`labrun_dataset::space`]), asked before a byte is
/// copied: a run of this tree needs about four times its size free.
async fn refuse_if_too_big(
    session: &Session,
    remote: &RemoteRun,
    bytes: u64,
) -> anyhow::Result<()> {
    let out = session
        .exec(&format!(
            "mkdir -p {b} && df -PB1 {b} | awk 'NR==2 {{print $4}}'",
            b = sh_quote(&remote.base)
        ))
        .await?;
    let Some(free) = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse::<u64>()
        .ok()
    else {
        // Unknown: the agent's own check still stops the run in time.
        return Ok(());
    };
    let needed = labrun_dataset::space::needed_bytes(bytes);
    if free < needed {
        bail!(
            "the tree ({}) needs about {} free on the machine (the tree, a copy per tool cycle, the repository and a restore), and {} has {}: give the VM a bigger disk (`vm.disk`), or use `sample:` to take part of the tree",
            labrun_vocab::human_bytes(bytes),
            labrun_vocab::human_bytes(needed),
            remote.base,
            labrun_vocab::human_bytes(free)
        );
    }
    Ok(())
}

/// Copies a checked archive file into the machine (once per digest) and
/// returns the source the plan names.
pub async fn push_archive(
    session: &Session,
    remote: &RemoteRun,
    local: &Path,
    format: labrun_evidence::ArchiveFormat,
    max_bytes: u64,
    note: &mut dyn FnMut(&str),
) -> anyhow::Result<(TreeSource, Pushed)> {
    let started = Instant::now();
    let file = local.to_path_buf();
    let sha256 =
        tokio::task::spawn_blocking(move || labrun_evidence::digest::sha256_file(&file)).await??;
    let size = std::fs::metadata(local)?.len();
    let path = format!("{}/archives/{sha256}", remote.base);
    let source = TreeSource::Archive {
        path: path.clone(),
        format,
        sha256: sha256.clone(),
        max_bytes,
    };
    let there = session
        .exec(&format!(
            "test \"$(stat -c %s {p} 2>/dev/null)\" = {size}",
            p = sh_quote(&path)
        ))
        .await?
        .success();
    if !there {
        refuse_if_too_big(session, remote, max_bytes.min(size.saturating_mul(20))).await?;
        note(&format!(
            "dataset: copying the {format} archive ({}) into the machine",
            labrun_vocab::human_bytes(size)
        ));
        crate::bench::remote::run_ok(
            session,
            &format!("mkdir -p {}/archives", sh_quote(&remote.base)),
        )
        .await?;
        session
            .upload(local, &path, 0o644)
            .await
            .with_context(|| format!("copying {} into the machine", local.display()))?;
    } else {
        note("dataset: the machine has this archive already: nothing to copy");
    }
    Ok((
        source,
        Pushed {
            remote_path: path,
            sent_bytes: if there { 0 } else { size },
            secs: started.elapsed().as_secs_f64(),
        },
    ))
}

/// A folder a lab names, from the host's point of view.
pub fn host_folder(lab_file: &Path, written: &str) -> PathBuf {
    crate::bench::machine::lab_relative(lab_file, Path::new(written))
}
