//! Getting a source tree into a build folder, verified by its git tree id
//! before anything builds.
//!
//! - An archive is found like any artifact file: the `--mirror` folder (by
//!   its `name`), labrun's cache (when its `sha256` is pinned), then its
//!   `file:` or `url:`; its SHA-256 is checked when pinned. It is unpacked
//!   with the dataset's unpacker (tar, tar.gz/xz/zst, zip; never writing
//!   outside the folder; bounded), and a single top-level folder is the tree.
//! - A git commit is fetched into a bare repository of labrun's own
//!   (`<cache>/git/<hash of the repo>.git`, reused), its tree read with
//!   `git rev-parse C^{tree}`, and exported with `git archive`, then
//!   unpacked the same way.
//!
//! Either way the unpacked tree's id is computed natively ([`tree_id`]) and
//! compared with the pin: the files built are the files pinned, whatever
//! packed them (a `.gitattributes` `export-subst` or `export-ignore` that
//! changed an export would show here).

use super::super::BuildCtx;
use super::super::tree_id::tree_id;
use super::git_cache::{GIT_ENV, GitCache, REFSPECS};
use super::{ArchiveLocation, GitSource, SourceArchive, SourceBuild, SourceOrigin};
use crate::digest::sha256_file;
use crate::error::ArtifactError;
use crate::source::FileName;
use crate::spec::local_path;
use labrun_dataset::{UnpackLimits, unpack_file};
use labrun_evidence::ArchiveFormat;
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Far above any source tree's size (duplicacy's is 30 MB, the Linux
/// sources' about 1.5 GB), far below a disk-filling archive bomb.
const LIMITS: UnpackLimits = UnpackLimits {
    max_bytes: 8 << 30,
    max_entries: 2_000_000,
};

/// The verified tree of `build`'s source, unpacked below `dest` (which must
/// not exist); returns the tree's root folder.
pub(super) async fn verified_tree(
    ctx: &mut BuildCtx<'_>,
    build: &SourceBuild,
    dest: &Path,
) -> Result<PathBuf, ArtifactError> {
    let (archive, expected, origin) = match &build.origin {
        SourceOrigin::Archive(a) => {
            let path = archive_file(ctx, a).await?;
            let origin = format!("archive {}", path.display());
            let expected = build.tree.clone().unwrap_or_default();
            (path, expected, origin)
        }
        SourceOrigin::Git(git) => {
            let tree = git_commit_tree(ctx, git).await?;
            if let Some(pinned) = &build.tree
                && *pinned != tree
            {
                return Err(ArtifactError::SourceTreeMismatch {
                    name: ctx.name.to_string(),
                    origin: format!("git {} commit {}", git.shown(), git.commit),
                    expected: pinned.clone(),
                    actual: tree,
                });
            }
            let export = dest.with_extension("export.tar");
            let mut cmd = git_command(ctx, GitCache::new(ctx.cache_dir, &git.repo).dir());
            cmd.args(["archive", "--format=tar", "--prefix=tree/", "-o"])
                .arg(&export)
                .arg(&git.commit);
            let cwd = ctx.cache_dir.to_path_buf();
            ctx.run(&format!("git archive {}", git.commit), cmd, &cwd)
                .await?;
            let origin = format!("git archive of {} commit {}", git.shown(), git.commit);
            (export, tree, origin)
        }
    };
    let step = format!("unpack the source ({origin})");
    let (archive_c, dest_c) = (archive.clone(), dest.to_path_buf());
    let unpacked = tokio::task::spawn_blocking(move || unpack_and_hash(&archive_c, &dest_c)).await;
    let (root, actual) = match unpacked {
        Ok(Ok(done)) => done,
        Ok(Err(detail)) => return Err(ctx.failed(&step, detail)),
        Err(join) => return Err(ctx.failed(&step, join.to_string())),
    };
    if actual != expected {
        return Err(ArtifactError::SourceTreeMismatch {
            name: ctx.name.to_string(),
            origin,
            expected,
            actual,
        });
    }
    ctx.progress.step(
        ctx.name,
        &format!("source tree {actual} verified ({origin})"),
    );
    Ok(root)
}

/// Unpacks `archive` into `dest`, takes its one top-level folder as the
/// tree (the whole of `dest` when there is not exactly one), and returns
/// the tree's root and id.
fn unpack_and_hash(archive: &Path, dest: &Path) -> Result<(PathBuf, String), String> {
    let mut head = Vec::with_capacity(512);
    std::fs::File::open(archive)
        .and_then(|f| f.take(512).read_to_end(&mut head))
        .map_err(|e| format!("cannot read {}: {e}", archive.display()))?;
    let format = match ArchiveFormat::sniff(&head) {
        Some(ArchiveFormat::Deb) | None => {
            return Err(format!(
                "{} is not a source archive: expected tar (plain, gz, xz or zst) or zip",
                archive.display()
            ));
        }
        Some(f) => f,
    };
    unpack_file(archive, format, dest, LIMITS, &mut |_, _| {}).map_err(|e| e.to_string())?;
    let top: Vec<_> = std::fs::read_dir(dest)
        .and_then(|d| d.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("cannot list {}: {e}", dest.display()))?;
    let root = match top.as_slice() {
        [one] if one.file_type().is_ok_and(|t| t.is_dir()) => one.path(),
        _ => dest.to_path_buf(),
    };
    let id = tree_id(&root).map_err(|e| format!("cannot compute the tree id: {e}"))?;
    Ok((root, id))
}

/// The archive file on this machine: the mirror's copy by name, the cache's
/// (when the digest is pinned), the local file, or a download.
async fn archive_file(
    ctx: &mut BuildCtx<'_>,
    archive: &SourceArchive,
) -> Result<PathBuf, ArtifactError> {
    let name = archive.file_name().ok_or_else(|| ArtifactError::Spec {
        field: "source.archive.name".into(),
        problem: "the URL or path does not end in a file name: give `name:`".into(),
    })?;
    let cache = ctx.fetcher.cache().clone();
    let found = if let Some(m) = ctx.fetcher.mirror().map(|m| m.join(&name))
        && m.is_file()
    {
        Some(m)
    } else if let Some(sha) = &archive.sha256
        && let Some(FileName::Exact(exact)) = FileName::exact(&name)
    {
        Some(cache.dir_for(sha).join(exact)).filter(|p| p.is_file())
    } else {
        None
    };
    let path = match (found, &archive.location) {
        (Some(path), _) => path,
        (None, ArchiveLocation::File(f)) => local_path(f),
        (None, ArchiveLocation::Url(url)) => {
            // Downloaded into a folder of its own until its digest is known,
            // then kept in the cache under that digest.
            let staging = archive.sha256.clone().unwrap_or_else(|| {
                format!("source-{}", hex::encode(Sha256::digest(url.as_bytes())))
            });
            let got = ctx
                .fetcher
                .http()
                .download(ctx.name, url, &name, &cache, &staging, ctx.progress)
                .await
                .inspect_err(|_| cache.tidy(&staging))?;
            // Checked before it is kept: a refused download leaves nothing.
            if let Some(expected) = &archive.sha256
                && got.sha256 != *expected
            {
                drop(got.temp);
                cache.tidy(&staging);
                return Err(ArtifactError::DigestMismatch {
                    name: ctx.name.to_string(),
                    origin: format!("source archive {url}"),
                    expected: expected.clone(),
                    actual: got.sha256,
                });
            }
            let io = |e| ArtifactError::Io {
                name: ctx.name.to_string(),
                what: "cannot keep the downloaded archive in",
                path: cache.dir_for(&got.sha256),
                source: e,
            };
            std::fs::create_dir_all(cache.dir_for(&got.sha256)).map_err(io)?;
            let kept = cache.commit(got.temp, &got.sha256, &name).map_err(io)?;
            cache.tidy(&staging);
            kept
        }
    };
    if let Some(expected) = &archive.sha256 {
        let actual = sha256_file(&path).map_err(|e| ArtifactError::SourceFile {
            name: ctx.name.to_string(),
            path: path.clone(),
            source: e,
        })?;
        if actual != *expected {
            return Err(ArtifactError::DigestMismatch {
                name: ctx.name.to_string(),
                origin: format!("source archive {}", path.display()),
                expected: expected.clone(),
                actual,
            });
        }
    }
    Ok(path)
}

/// A git command on labrun's bare repository, in git's environment for
/// labrun ([`GIT_ENV`]: no prompt, known transports only); standard input
/// is closed ([`BuildCtx::command`]).
fn git_command(ctx: &BuildCtx<'_>, git_dir: &Path) -> tokio::process::Command {
    let mut cmd = ctx.command("git");
    cmd.arg("--git-dir").arg(git_dir).envs(GIT_ENV);
    cmd
}

/// The tree id of `git.commit`, fetched from `git.repo` into labrun's bare
/// repository first if it does not have it yet.
pub(super) async fn git_commit_tree(
    ctx: &mut BuildCtx<'_>,
    git: &GitSource,
) -> Result<String, ArtifactError> {
    let copy = GitCache::new(ctx.cache_dir, &git.repo);
    let dir = copy.dir().to_path_buf();
    let cwd = ctx.cache_dir.to_path_buf();
    let repo = copy.location();
    if !copy.exists() {
        std::fs::create_dir_all(&dir).map_err(|e| ArtifactError::Io {
            name: ctx.name.to_string(),
            what: "cannot create",
            path: dir.clone(),
            source: e,
        })?;
        let mut init = ctx.command("git");
        init.envs(GIT_ENV)
            .args(["init", "--bare", "--quiet"])
            .arg(&dir);
        ctx.run("git init --bare", init, &cwd).await?;
    }
    let commit_ref = format!("{}^{{commit}}", git.commit);
    if !has_object(ctx, &dir, &commit_ref).await {
        // Every branch and tag first (any server serves those); then the
        // commit by id, which servers that allow it (GitHub, git >= 2.5 with
        // uploadpack.allowReachableSHA1InWant) serve when no ref reaches it.
        let mut fetch = git_command(ctx, &dir);
        fetch
            .args(["fetch", "--quiet", "--no-tags", "--"])
            .arg(repo)
            .args(REFSPECS);
        if let Err(e) = ctx
            .run(&format!("git fetch {}", git.shown()), fetch, &cwd)
            .await
        {
            let ArtifactError::Build { detail, .. } = e else {
                return Err(e);
            };
            return Err(ctx.failed(
                &format!("git fetch {}", git.shown()),
                format!(
                    "the repository cannot be reached: {detail} (check `git.repo`: a URL git \
                     can fetch on this machine, or a local repository's path)"
                ),
            ));
        }
        if !has_object(ctx, &dir, &commit_ref).await {
            let mut by_id = git_command(ctx, &dir);
            by_id
                .args(["fetch", "--quiet", "--no-tags", "--"])
                .arg(repo)
                .arg(&git.commit);
            let _ = ctx
                .run(
                    &format!("git fetch {} {}", git.shown(), git.commit),
                    by_id,
                    &cwd,
                )
                .await;
        }
        if !has_object(ctx, &dir, &commit_ref).await {
            return Err(ctx.failed(
                "find the commit",
                format!(
                    "the repository {} has no commit {} (none of its branches and tags \
                     reaches it, and it does not serve it by id): check `git.commit`",
                    git.shown(),
                    git.commit
                ),
            ));
        }
    }
    let mut parse = git_command(ctx, &dir);
    parse
        .args(["rev-parse", "--verify", "--quiet"])
        .arg(format!("{}^{{tree}}", git.commit));
    let out = ctx.run("git rev-parse COMMIT^{tree}", parse, &cwd).await?;
    Ok(out.trim().to_string())
}

/// True when the bare repository has `object` (`C^{commit}`).
async fn has_object(ctx: &BuildCtx<'_>, dir: &Path, object: &str) -> bool {
    let mut cmd = git_command(ctx, dir);
    cmd.args(["cat-file", "-e", object])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    cmd.status().await.is_ok_and(|s| s.success())
}
