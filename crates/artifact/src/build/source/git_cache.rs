//! labrun's own bare copy of a git repository
//! (`<cache>/git/<hash of the repository's location>.git`): one per
//! repository, reused. Builds fetch a commit into it and export the tree from
//! it; `labrun bisect` lists the commits between two names from it. Either
//! way `git.repo` may be a URL or a local path, and the user's repository is
//! never written to: its branches and tags are copied under
//! `refs/labrun/heads/` and `refs/labrun/tags/`.

use crate::spec::local_path;
use crate::url_credentials::without_credentials;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Every branch and tag of the repository, kept apart from anything the
/// bare copy has of its own.
pub const REFSPECS: [&str; 2] = [
    "+refs/heads/*:refs/labrun/heads/*",
    "+refs/tags/*:refs/labrun/tags/*",
];

/// The environment of every git command labrun runs, with standard input
/// closed beside it: never prompting for a password (nobody is there to
/// answer), messages in English, and only the transports a lab may name
/// ([`GIT_TRANSPORTS`](crate::spec::rules::GIT_TRANSPORTS)): a remote helper
/// such as `fd::0` would speak git's protocol on labrun's standard input.
/// `GIT_ALLOW_PROTOCOL` is git's own allow list; `GIT_PROTOCOL_FROM_USER=0`
/// also keeps the transports that git allows "from the user" from a URL.
pub const GIT_ENV: [(&str, &str); 4] = [
    ("GIT_TERMINAL_PROMPT", "0"),
    ("LC_ALL", "C"),
    ("GIT_PROTOCOL_FROM_USER", "0"),
    ("GIT_ALLOW_PROTOCOL", "https:ssh:git:file"),
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

    /// The location as shown in messages: without credentials.
    pub fn shown(&self) -> String {
        without_credentials(&self.location).into_owned()
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
                .envs(GIT_ENV)
                .stdin(Stdio::null())
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
                "the repository {} cannot be reached: {} (check `git.repo`: a URL git can fetch \
                 on this machine, or a local repository's path)",
                self.shown(),
                without_credentials(&e)
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

    /// Runs git on the bare copy, in [`GIT_ENV`] with standard input
    /// closed. Its trimmed output, or its error output when it fails.
    pub fn git(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new("git")
            .arg("--git-dir")
            .arg(&self.dir)
            .args(args)
            .envs(GIT_ENV)
            .stdin(Stdio::null())
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

    /// `refresh` in a thread, given `secs` to answer.
    fn refresh_within(copy: GitCache, secs: u64) -> Result<(), String> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(copy.refresh());
        });
        rx.recv_timeout(std::time::Duration::from_secs(secs))
            .unwrap_or_else(|_| panic!("git did not answer within {secs} s"))
    }

    #[test]
    fn a_remote_helper_is_refused_by_git_itself_at_once() {
        // `fd::0` speaks git's protocol on standard input: with labrun's
        // standard input open, it waited forever.
        let dir = tempfile::tempdir().unwrap();
        for helper in ["fd::0", "ext::sh -c true"] {
            let err = refresh_within(GitCache::new(dir.path(), helper), 30).unwrap_err();
            assert!(err.contains("not allowed"), "{helper}: {err}");
        }
    }

    #[test]
    fn credentials_in_the_url_are_not_in_messages() {
        let dir = tempfile::tempdir().unwrap();
        // Port 1 on the loopback: refused at once, nothing leaves the machine.
        let copy = GitCache::new(dir.path(), "https://user:TOKEN@127.0.0.1:1/x.git");
        assert_eq!(copy.shown(), "https://<redacted>@127.0.0.1:1/x.git");
        let err = refresh_within(copy, 60).unwrap_err();
        assert!(err.contains("cannot be reached"), "{err}");
        assert!(!err.contains("TOKEN"), "{err}");
    }
}
