//! A real repository as a git-history dataset: the machine under test's
//! `git` reads it (a clone or a `git bundle create` file), and moves the work
//! tree with `git checkout`, so the tree is exactly git's.
//!
//! The clone is bare, made once per run under the work folder; each tool
//! cycle checks out into its own source folder with its own index file
//! (`GIT_INDEX_FILE`), so cycles never see each other's state and `.git` is
//! never inside the tree that is backed up.

use labrun_evidence::CommitSelection;
use std::path::Path;
use std::process::Command;

/// Where `labrun-agent` looks for the repository's clone, under the run's
/// work folder.
pub const CLONE_DIR: &str = "history.git";

/// Runs git with a configuration of its own (no user or system files, any
/// owner's repository readable); gives stdout, or what went wrong.
fn git(args: &[&str], env: &[(&str, &Path)]) -> Result<String, String> {
    let mut c = Command::new("git");
    c.args(["-c", "safe.directory=*", "-c", "advice.detachedHead=false"])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            "a git-history `repository` needs `git` on the machine under test: add `git` to `vm.packages` in the lab (or install it on the target)".to_string()
        } else {
            format!("cannot run git: {e}")
        }
    })?;
    if !out.status.success() {
        return Err(format!(
            "`git {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The argv [`clone`] runs, for the record.
pub fn clone_argv(path: &str, clone: &Path) -> Vec<String> {
    ["git", "clone", "--quiet", "--bare", path]
        .iter()
        .map(|s| s.to_string())
        .chain([clone.to_string_lossy().into_owned()])
        .collect()
}

/// A bare clone of the repository or bundle at `path`.
pub fn clone(path: &str, clone: &Path) -> Result<(), String> {
    let target = clone.to_string_lossy();
    git(&["clone", "--quiet", "--bare", path, &target], &[]).map(drop)
}

/// The full ids of the selected commits, oldest first.
pub fn resolve(clone: &Path, selection: &CommitSelection) -> Result<Vec<String>, String> {
    let dir = clone.to_string_lossy();
    let id = |rev: &str| -> Result<String, String> {
        git(
            &[
                "--git-dir",
                &dir,
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("{rev}^{{commit}}"),
            ],
            &[],
        )
        .map(|s| s.trim().to_string())
        .map_err(|_| format!("`{rev}` names no commit of the repository"))
    };
    match selection {
        CommitSelection::List(revs) => revs.iter().map(|r| id(r)).collect(),
        CommitSelection::Every { n, from, to } => {
            let (from, to) = (id(from)?, id(to)?);
            let range = format!("{from}..{to}");
            let listed = git(
                &[
                    "--git-dir",
                    &dir,
                    "rev-list",
                    "--reverse",
                    "--first-parent",
                    &range,
                ],
                &[],
            )?;
            let after: Vec<String> = listed.lines().map(str::to_string).collect();
            if after.is_empty() {
                return Err(format!(
                    "no first-parent commit leads from `{from}` to `{to}`: is `to` a descendant of `from`?"
                ));
            }
            Ok(every_nth(from, &after, *n))
        }
    }
}

/// `first`, then every `n`th commit of `after`, and `after`'s last one.
pub fn every_nth(first: String, after: &[String], n: u32) -> Vec<String> {
    let n = n.max(1) as usize;
    let mut out = vec![first];
    out.extend(after.iter().skip(n - 1).step_by(n).cloned());
    if let Some(last) = after.last()
        && out.last() != Some(last)
    {
        out.push(last.clone());
    }
    out
}

/// Moves the work tree `dir` (whose state `index` describes; a missing
/// index file means an empty tree) to `commit`, as `git checkout` does.
pub fn checkout(clone: &Path, index: &Path, commit: &str, dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let (git_dir, work) = (clone.to_string_lossy(), dir.to_string_lossy());
    git(
        &[
            "--git-dir",
            &git_dir,
            "--work-tree",
            &work,
            "checkout",
            "--quiet",
            "--force",
            "--detach",
            commit,
        ],
        &[("GIT_INDEX_FILE", index)],
    )
    .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("c{i}")).collect()
    }

    #[test]
    fn every_nth_keeps_the_ends() {
        assert_eq!(every_nth("c0".into(), &ids(6), 2), ["c0", "c2", "c4", "c6"]);
        assert_eq!(every_nth("c0".into(), &ids(7), 3), ["c0", "c3", "c6", "c7"]);
        assert_eq!(every_nth("c0".into(), &ids(2), 10), ["c0", "c2"]);
        assert_eq!(every_nth("c0".into(), &ids(3), 1), ["c0", "c1", "c2", "c3"]);
    }
}
