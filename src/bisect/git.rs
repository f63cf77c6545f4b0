//! The commits a bisection searches, from the tool's git repository: the
//! good commit, then every commit after it on the first-parent line that
//! leads to the bad one (a merge is one step, as a release history reads).

use anyhow::{Context as _, bail};
use std::path::Path;
use std::process::Command;

/// The full id of `rev` (a commit, a tag, a branch) in `repo`.
pub fn resolve(repo: &Path, rev: &str) -> anyhow::Result<String> {
    if rev.starts_with('-') {
        bail!("`{rev}` is not a commit or tag name");
    }
    let out = git(
        repo,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{rev}^{{commit}}"),
        ],
    )?;
    match out {
        Some(id) if !id.is_empty() => Ok(id),
        _ => bail!(
            "the repository {} has no commit or tag `{rev}` (`git -C {} log --oneline` lists what it has)",
            repo.display(),
            repo.display()
        ),
    }
}

/// Good first, bad last, full ids. Refused when bad does not descend from
/// good: there is no line to search.
pub fn commits_between(repo: &Path, good: &str, bad: &str) -> anyhow::Result<Vec<String>> {
    let good_id = resolve(repo, good)?;
    let bad_id = resolve(repo, bad)?;
    if good_id == bad_id {
        bail!("good and bad are the same commit ({good_id})");
    }
    let is_ancestor = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["merge-base", "--is-ancestor", &good_id, &bad_id])
        .status()
        .context("cannot run git")?;
    if !is_ancestor.success() {
        bail!(
            "{bad} ({}) does not descend from {good} ({}): bisect needs the good commit to be an ancestor of the bad one",
            super::short(&bad_id),
            super::short(&good_id)
        );
    }
    let list = git(
        repo,
        &[
            "rev-list",
            "--reverse",
            "--first-parent",
            "--ancestry-path",
            &format!("{good_id}..{bad_id}"),
        ],
    )?
    .unwrap_or_default();
    let mut commits = vec![good_id];
    commits.extend(list.lines().map(str::to_string));
    if commits.last() != Some(&bad_id) {
        bail!("{bad} is not on the first-parent line from {good}; name commits of one branch");
    }
    Ok(commits)
}

/// Runs git; `None` when it exits non-zero (the caller says what that means).
fn git(repo: &Path, args: &[&str]) -> anyhow::Result<Option<String>> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .output()
        .context("cannot run git (is it installed?)")?;
    if !out.status.success() {
        return Ok(None);
    }
    Ok(Some(
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn the_line_from_good_to_bad() {
        let repo = repo_with(6);
        let commits = commits_between(repo.path(), "v1", "v5").unwrap();
        assert_eq!(commits.len(), 5);
        assert_eq!(commits[0], resolve(repo.path(), "v1").unwrap());
        assert_eq!(commits[4], resolve(repo.path(), "v5").unwrap());
    }

    #[test]
    fn a_missing_commit_and_a_reversed_range_are_refused() {
        let repo = repo_with(3);
        let err = resolve(repo.path(), "v9").unwrap_err().to_string();
        assert!(err.contains("no commit or tag `v9`"), "{err}");
        let err = commits_between(repo.path(), "v2", "v0")
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not descend"), "{err}");
    }
}
