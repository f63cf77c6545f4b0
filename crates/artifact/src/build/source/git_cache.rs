//! labrun's own bare copy of a git repository
//! (`<cache>/git/<hash of the repository's location>.git`): one per
//! repository, reused. Builds fetch a commit into it and export the tree from
//! it; `labrun bisect` lists the commits between two names from it. Either
//! way `git.repo` may be a URL or a local path, and the user's repository is
//! never written to: its branches and tags are copied under
//! `refs/labrun/heads/` and `refs/labrun/tags/`.

use crate::spec::local_path;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every branch and tag of the repository, kept apart from anything the
/// bare copy has of its own.
pub const REFSPECS: [&str; 2] = [
    "+refs/heads/*:refs/labrun/heads/*",
    "+refs/tags/*:refs/labrun/tags/*",
];

/// Where a repository's copy lives and where it is fetched from.
#[derive(Debug, Clone)]
pub struct GitCache {
    dir: PathBuf,
    location: String,
}

impl GitCache {
    /// The copy of `repo` (as a lab writes it) below labrun's cache folder.
    pub fn new(cache_dir: &Path, repo: &str) -> GitCache {
        let location = repo_location(repo);
        let id = hex::encode(Sha256::digest(location.as_bytes()));
        GitCache {
            dir: cache_dir.join("git").join(format!("{}.git", &id[..24])),
            location,
        }
    }

    /// The bare repository's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What git fetches from: a local path made absolute, or the URL.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// True once the bare repository exists.
    pub fn exists(&self) -> bool {
        self.dir.join("HEAD").is_file()
    }

    /// The bare repository created if missing, then every branch and tag of
    /// the repository fetched into it. Blocking: for commands that wait on
    /// it anyway (bisect); builds run the same steps through their log.
    pub fn refresh(&self) -> Result<(), String> {
        if !self.exists() {
            std::fs::create_dir_all(&self.dir)
                .map_err(|e| format!("cannot create {}: {e}", self.dir.display()))?;
            let made = Command::new("git")
                .args(["init", "--bare", "--quiet"])
                .arg(&self.dir)
                .status()
                .map_err(|e| format!("cannot run git (is it installed?): {e}"))?;
            if !made.success() {
                return Err(format!("git init --bare {} failed", self.dir.display()));
            }
        }
        let mut args = vec!["fetch", "--quiet", "--no-tags", "--", &self.location];
        args.extend(REFSPECS);
        self.git(&args).map(drop).map_err(|e| {
            format!(
                "the repository {} cannot be reached: {e} (check `git.repo`: a URL git can fetch \
                 on this machine, or a local repository's path)",
                self.location
            )
        })
    }

    /// The full commit id that `name` means in the repository: a tag, then a
    /// branch, then a commit id (or any expression git reads, `v1~2`).
    /// `None` when it means none.
    pub fn resolve(&self, name: &str) -> Option<String> {
        if name.starts_with('-') {
            return None;
        }
        [
            format!("refs/labrun/tags/{name}"),
            format!("refs/labrun/heads/{name}"),
            name.to_string(),
        ]
        .iter()
        .find_map(|candidate| {
            self.git(&[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("{candidate}^{{commit}}"),
            ])
            .ok()
            .filter(|id| !id.is_empty())
        })
    }

    /// Runs git on the bare copy: never prompting for a password (nobody is
    /// there to answer), messages in English. Its trimmed output, or its
    /// error output when it fails.
    pub fn git(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new("git")
            .arg("--git-dir")
            .arg(&self.dir)
            .args(args)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("LC_ALL", "C")
            .output()
            .map_err(|e| format!("cannot run git (is it installed?): {e}"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    }
}

/// A local path made absolute (git runs in another folder); a URL or
/// `host:path` as written.
fn repo_location(repo: &str) -> String {
    let local = local_path(repo);
    if !repo.contains("://") && local.exists() {
        return std::path::absolute(&local)
            .unwrap_or(local)
            .display()
            .to_string();
    }
    repo.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(["-c", "commit.gpgsign=false"])
            .args(args)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn a_url_is_copied_and_names_resolve_without_touching_the_repository() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        for i in 0..3 {
            std::fs::write(repo.join("f"), format!("{i}")).unwrap();
            git(&repo, &["add", "f"]);
            git(&repo, &["commit", "-q", "-m", &format!("c{i}")]);
        }
        git(&repo, &["tag", "v1", "HEAD~1"]);
        let url = format!("file://{}", repo.display());
        let copy = GitCache::new(&dir.path().join("cache"), &url);
        assert!(!copy.exists());
        copy.refresh().unwrap();
        let head = copy.resolve("main").unwrap();
        assert_eq!(head.len(), 40);
        assert_eq!(copy.resolve("v1"), copy.resolve("main~1"));
        assert_eq!(copy.resolve(&head).as_deref(), Some(head.as_str()));
        assert_eq!(copy.resolve("v9"), None);
        assert_eq!(copy.resolve("--all"), None);
        // Fetched again: reused, and the user's repository has no labrun ref.
        copy.refresh().unwrap();
        let out = Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(["for-each-ref", "refs/labrun"])
            .output()
            .unwrap();
        assert!(out.stdout.is_empty());

        let gone = GitCache::new(dir.path(), "file:///nowhere/at/all");
        let err = gone.refresh().unwrap_err();
        assert!(err.contains("cannot be reached"), "{err}");
    }
}
