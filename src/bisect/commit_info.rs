//! What a bisected commit is, as people name it: its subject and date, and
//! the files the first bad commit changed. Read from labrun's copy of the
//! repository the way the rest of bisect reads it ([`GitCache::git`]).
//!
//! Subjects and file names are the repository's text: bounded here (a
//! commit may touch a hundred thousand files, a subject may run on), and
//! escaped by whoever prints them.

use labrun_artifact::build::source::git_cache::GitCache;

/// The most characters of a subject kept.
const SUBJECT_CHARS: usize = 100;
/// The most file names listed; the rest are counted.
pub const FILES_LISTED: usize = 20;

/// A commit's subject and author date (`2025-03-14`).
#[derive(Debug, Clone, PartialEq)]
pub struct CommitInfo {
    pub subject: String,
    pub date: String,
}

impl CommitInfo {
    /// `2025-03-14 "restore: read packs in parallel"`.
    pub fn line(&self) -> String {
        format!("{} \"{}\"", self.date, self.subject)
    }
}

/// `2025-03-14 "subject"` of `commit`, or why git could not tell it: a
/// bisection goes on without a commit's name.
pub fn named(copy: &GitCache, commit: &str) -> String {
    match describe(copy, commit) {
        Ok(info) => info.line(),
        Err(e) => format!("(subject unknown: {e})"),
    }
}

/// The subject and date of `commit`, or why git could not tell them.
pub fn describe(copy: &GitCache, commit: &str) -> Result<CommitInfo, String> {
    // A NUL between the two: a subject may hold any other character.
    let out = copy.git(&[
        "log",
        "-1",
        "--no-show-signature",
        "--format=%as%x00%s",
        commit,
        "--",
    ])?;
    let (date, subject) = out
        .split_once('\0')
        .ok_or_else(|| format!("git log gave no subject for {commit}"))?;
    let mut kept: String = subject.chars().take(SUBJECT_CHARS).collect();
    if kept.len() < subject.len() {
        kept.push_str("...");
    }
    Ok(CommitInfo {
        subject: kept,
        date: date.to_string(),
    })
}

/// The files a commit changed against its first parent.
#[derive(Debug, Clone, PartialEq)]
pub struct FilesChanged {
    /// The first [`FILES_LISTED`] names, in git's order.
    pub listed: Vec<String>,
    /// How many it changed in all.
    pub total: usize,
}

impl FilesChanged {
    /// `main.go, restore.go` or `a, b, ... and 180 more`.
    pub fn line(&self) -> String {
        let mut out = self.listed.join(", ");
        if self.total > self.listed.len() {
            out.push_str(&format!(" and {} more", self.total - self.listed.len()));
        }
        if self.total == 0 {
            out.push_str("none (the commit changed no file)");
        }
        out
    }
}

/// `git diff-tree --name-only` of `commit` against its first parent
/// (`-z`: a file name may hold a newline).
pub fn files_changed(copy: &GitCache, commit: &str) -> Result<FilesChanged, String> {
    let parent = format!("{commit}^1");
    let out = copy.git(&[
        "diff-tree",
        "-r",
        "-z",
        "--name-only",
        "--no-commit-id",
        &parent,
        commit,
        "--",
    ])?;
    let names: Vec<&str> = out.split('\0').filter(|n| !n.is_empty()).collect();
    Ok(FilesChanged {
        listed: names
            .iter()
            .take(FILES_LISTED)
            .map(|n| n.to_string())
            .collect(),
        total: names.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .env("GIT_AUTHOR_DATE", "2025-03-14T12:00:00Z")
            .env("GIT_COMMITTER_DATE", "2025-03-15T12:00:00Z")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    /// A repository of three commits: the second changes two files (one
    /// with a newline and a `|` in its name), the third 25 files under a
    /// subject of 300 characters. Reached by labrun's copy, as bisect
    /// reads it.
    fn repo() -> (tempfile::TempDir, tempfile::TempDir, GitCache, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        git(d, &["init", "-q", "-b", "main"]);
        std::fs::write(d.join("main.go"), "package main\n").unwrap();
        git(d, &["add", "."]);
        git(d, &["commit", "-q", "-m", "first"]);
        std::fs::write(d.join("main.go"), "package main // slower\n").unwrap();
        std::fs::write(d.join("odd\nname|.go"), "x").unwrap();
        git(d, &["add", "."]);
        git(
            d,
            &[
                "commit",
                "-q",
                "-m",
                "restore: read packs one at a time\n\nbody",
            ],
        );
        for i in 0..25 {
            std::fs::write(d.join(format!("f{i:02}")), "y").unwrap();
        }
        git(d, &["add", "."]);
        git(d, &["commit", "-q", "-m", &"long ".repeat(60)]);
        let ids: Vec<String> = git(d, &["rev-list", "--reverse", "HEAD"])
            .lines()
            .map(String::from)
            .collect();
        let cache = tempfile::tempdir().unwrap();
        let copy = GitCache::new(cache.path(), &format!("file://{}", d.display()));
        copy.refresh().unwrap();
        (dir, cache, copy, ids)
    }

    #[test]
    fn a_commit_is_named_by_its_subject_date_and_files() {
        let (_repo, _cache, copy, ids) = repo();
        let info = describe(&copy, &ids[1]).unwrap();
        assert_eq!(info.subject, "restore: read packs one at a time");
        assert_eq!(info.date, "2025-03-14", "the author date");
        assert_eq!(
            info.line(),
            "2025-03-14 \"restore: read packs one at a time\""
        );
        let files = files_changed(&copy, &ids[1]).unwrap();
        assert_eq!(files.listed, ["main.go", "odd\nname|.go"]);
        assert_eq!(files.total, 2);
    }

    #[test]
    fn a_long_subject_and_a_large_commit_are_bounded() {
        let (_repo, _cache, copy, ids) = repo();
        let info = describe(&copy, &ids[2]).unwrap();
        assert_eq!(info.subject.chars().count(), SUBJECT_CHARS + 3);
        assert!(info.subject.ends_with("..."), "{}", info.subject);
        let files = files_changed(&copy, &ids[2]).unwrap();
        assert_eq!(files.total, 25);
        assert_eq!(files.listed.len(), FILES_LISTED);
        assert!(files.line().ends_with("f19 and 5 more"), "{}", files.line());
    }

    #[test]
    fn an_unknown_commit_says_why() {
        let (_repo, _cache, copy, _) = repo();
        let missing = "0123456789abcdef0123456789abcdef01234567";
        assert!(describe(&copy, missing).is_err());
        assert!(files_changed(&copy, missing).is_err());
    }
}
