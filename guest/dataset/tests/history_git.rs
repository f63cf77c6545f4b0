//! The synthetic history against real git: each commit of the history is
//! committed into a git repository (written afresh each time), then
//! - moving a work tree forward with labrun's `checkout` gives, at every
//!   commit, exactly what `git checkout` of that commit gives (paths,
//!   contents, modes, no leftover empty folders);
//! - the same parameters give the same commits (git's own tree ids) and the
//!   same manifests.
//!
//! Needs the `git` CLI (scripts/host-setup.sh installs it).

use labrun_dataset::history::{History, HistoryGenerator, TreeIndex, checkout};
use labrun_evidence::Manifest;
use std::path::Path;
use std::process::Command;

fn git(cwd: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=labrun",
            "-c",
            "user.email=labrun@example.invalid",
        ])
        .args(["-c", "core.autocrlf=false", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(cwd)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        .output()
        .expect("the git CLI is needed (scripts/host-setup.sh installs it)");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn params() -> HistoryGenerator {
    HistoryGenerator {
        seed: 11,
        commits: 10,
        files: 120,
        mean_file_bytes: 1500,
        churn: 0.08,
    }
}

/// Commits every commit of the history (each written into an empty folder,
/// so nothing of labrun's move is involved) and returns the commit ids.
fn build_repo(repo: &Path, scratch: &Path) -> Vec<String> {
    std::fs::create_dir_all(repo).unwrap();
    git(repo, &["init", "-q"]);
    let mut h = History::new(&params()).unwrap();
    let mut ids = Vec::new();
    loop {
        let tree = scratch.join(format!("afresh-{}", h.index()));
        checkout(&tree, &TreeIndex::default(), &h).unwrap();
        let work = tree.to_str().unwrap();
        git(repo, &["--work-tree", work, "add", "-A", "."]);
        git(
            repo,
            &["--work-tree", work, "commit", "-q", "-m", &h.label()],
        );
        ids.push(git(repo, &["rev-parse", "HEAD"]));
        if !h.advance() {
            return ids;
        }
    }
}

fn manifest(dir: &Path) -> Manifest {
    let mut m = labrun_dataset::scan(dir).unwrap();
    m.entries
        .retain(|e| e.path != ".git" && !e.path.starts_with(".git/"));
    m
}

#[test]
fn moving_forward_matches_git_checkout_of_every_commit() {
    // git creates files as 0666/0777 minus the umask; labrun sets 0644/0755.
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o022));
    let tmp = tempfile::tempdir().unwrap();
    let ids = build_repo(&tmp.path().join("repo"), tmp.path());
    assert_eq!(ids.len(), 10);

    // git's own work tree, moved forward commit by commit.
    let clone = tmp.path().join("clone");
    git(
        tmp.path(),
        &["clone", "-q", "--no-checkout", "repo", "clone"],
    );
    let moved = tmp.path().join("moved");
    let mut h = History::new(&params()).unwrap();
    let mut on_disk = TreeIndex::default();
    let (mut dirs_before, mut dirs_emptied) = (Vec::new(), 0);
    for (k, id) in ids.iter().enumerate() {
        assert_eq!(h.index() as usize, k + 1);
        git(&clone, &["checkout", "-q", "--detach", id]);
        on_disk = checkout(&moved, &on_disk, &h).unwrap().0;
        let (ours, theirs) = (manifest(&moved), manifest(&clone));
        assert!(
            ours == theirs,
            "commit {}: labrun's tree differs from git checkout: {:?}",
            k + 1,
            labrun_dataset::compare(&theirs, &ours).first_differences
        );
        // Modes too (compare() ignores them; git checkout sets them).
        assert!(
            ours.entries
                .iter()
                .zip(&theirs.entries)
                .all(|(a, b)| a.mode == b.mode)
        );
        let dirs: Vec<String> = ours
            .entries
            .iter()
            .filter(|e| e.kind == labrun_evidence::EntryKind::Dir)
            .map(|e| e.path.clone())
            .collect();
        dirs_emptied += dirs_before.iter().filter(|d| !dirs.contains(d)).count();
        dirs_before = dirs;
        h.advance();
    }
    // The series exercised the removal of emptied folders.
    assert!(
        dirs_emptied > 0,
        "no folder was emptied: pick other parameters"
    );
}

#[test]
fn same_parameters_same_commits_and_manifests() {
    let tmp = tempfile::tempdir().unwrap();
    let a = build_repo(&tmp.path().join("a"), &tmp.path().join("sa"));
    let b = build_repo(&tmp.path().join("b"), &tmp.path().join("sb"));
    // Same dates and author: same trees give the same commit ids.
    assert_eq!(a, b);
    let tree = |repo: &str, id: &str| {
        git(
            &tmp.path().join(repo),
            &["rev-parse", &format!("{id}^{{tree}}")],
        )
    };
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(tree("a", x), tree("b", y));
    }
    // And every commit's tree is different from the one before it.
    for w in a.windows(2) {
        assert_ne!(tree("a", &w[0]), tree("a", &w[1]));
    }
    for k in 1..=10 {
        assert_eq!(
            manifest(&tmp.path().join(format!("sa/afresh-{k}"))),
            manifest(&tmp.path().join(format!("sb/afresh-{k}")))
        );
    }
}
