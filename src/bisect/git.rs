//! The commits a bisection searches, from the tool's git repository: the
//! good commit, then every commit after it on the first-parent line that
//! leads to the bad one (a merge is one step, as a release history reads).

use anyhow::bail;
use labrun_artifact::build::source::git_cache::GitCache;

/// The full id of `rev` (a tag, a branch, a commit id) in labrun's copy.
pub fn resolve(copy: &GitCache, rev: &str) -> anyhow::Result<String> {
    match copy.resolve(rev) {
        Some(id) => Ok(id),
        None => bail!(
            "the repository {} has no tag, branch or commit `{rev}` (`git ls-remote {}` lists its tags and branches)",
            copy.shown(),
            copy.shown()
        ),
    }
}

/// Good first, bad last, full ids, from labrun's copy of the repository
/// (fetched first: `git.repo` may be a URL). Refused when bad does not
/// descend from good: there is no line to search.
pub fn commits_between(copy: &GitCache, good: &str, bad: &str) -> anyhow::Result<Vec<String>> {
    copy.refresh().map_err(anyhow::Error::msg)?;
    let good_id = resolve(copy, good)?;
    let bad_id = resolve(copy, bad)?;
    if good_id == bad_id {
        bail!("good and bad are the same commit ({good_id})");
    }
    if copy
        .git(&["merge-base", "--is-ancestor", &good_id, &bad_id])
        .is_err()
    {
        bail!(
            "{bad} ({}) does not descend from {good} ({}): bisect needs the good commit to be an ancestor of the bad one",
            super::short(&bad_id),
            super::short(&good_id)
        );
    }
    let list = copy
        .git(&[
            "rev-list",
            "--reverse",
            "--first-parent",
            "--ancestry-path",
            &format!("{good_id}..{bad_id}"),
        ])
        .map_err(|e| anyhow::anyhow!("git rev-list {good}..{bad} failed: {e}"))?;
    let mut commits = vec![good_id];
    commits.extend(list.lines().map(str::to_string));
    if commits.last() != Some(&bad_id) {
        bail!("{bad} is not on the first-parent line from {good}; name commits of one branch");
    }
    Ok(commits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn repo_with(commits: usize) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| {
            let ok = Command::new("git")
                .arg("-C")
                .arg(dir.path())
                .args([
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@t",
                    "-c",
                    "commit.gpgsign=false",
                ])
                .args(args)
                .status()
                .unwrap()
                .success();
            assert!(ok, "git {args:?}");
        };
        run(&["init", "-q", "-b", "main"]);
        for i in 0..commits {
            std::fs::write(dir.path().join("f"), format!("{i}")).unwrap();
            run(&["add", "f"]);
            run(&["commit", "-q", "-m", &format!("c{i}")]);
            run(&["tag", &format!("v{i}")]);
        }
        dir
    }

    /// labrun's copy of `repo`, reached by a `file://` URL as a remote one
    /// would be.
    fn copy_of(repo: &tempfile::TempDir, cache: &tempfile::TempDir) -> GitCache {
        GitCache::new(cache.path(), &format!("file://{}", repo.path().display()))
    }

    #[test]
    fn the_line_from_good_to_bad() {
        let (repo, cache) = (repo_with(6), tempfile::tempdir().unwrap());
        let copy = copy_of(&repo, &cache);
        let commits = commits_between(&copy, "v1", "v5").unwrap();
        assert_eq!(commits.len(), 5);
        assert_eq!(commits[0], resolve(&copy, "v1").unwrap());
        assert_eq!(commits[4], resolve(&copy, "v5").unwrap());
        // A branch and a commit id name commits too.
        assert_eq!(
            commits_between(&copy, &commits[1], "main").unwrap().len(),
            4
        );
    }

    #[test]
    fn a_missing_commit_and_a_reversed_range_are_refused() {
        let (repo, cache) = (repo_with(3), tempfile::tempdir().unwrap());
        let copy = copy_of(&repo, &cache);
        let err = commits_between(&copy, "v0", "v9").unwrap_err().to_string();
        assert!(err.contains("no tag, branch or commit `v9`"), "{err}");
        let err = commits_between(&copy, "v2", "v0").unwrap_err().to_string();
        assert!(err.contains("does not descend"), "{err}");
    }
}
