//! Names the commit `labrun --version` was built from: `0.1.0 (commit
//! abc1234)`, `-dirty` when the tree had changes, `(commit unknown)` when
//! there is no git (a source tarball, or a folder inside someone else's
//! repository).
//!
//! It reruns only when the commit can have changed (HEAD, the branch it
//! points to, packed refs) or labrun's own sources did (which rebuild
//! labrun anyway): a commit elsewhere in the repository does not rebuild
//! labrun, and `-dirty` stays true to the sources compiled.

use std::path::Path;
use std::process::Command;

fn main() {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    for path in [
        "build.rs",
        "Cargo.toml",
        "Cargo.lock",
        "src",
        "crates",
        "guest",
    ] {
        println!("cargo:rerun-if-changed={path}");
    }
    let commit = match git_commit(Path::new(&manifest_dir)) {
        Some(c) => c,
        None => "unknown".to_string(),
    };
    println!("cargo:rustc-env=LABRUN_LONG_VERSION={version} (commit {commit})");
}

/// `abc1234` or `abc1234-dirty`; None without git or outside labrun's own
/// repository.
fn git_commit(dir: &Path) -> Option<String> {
    let top = git(dir, &["rev-parse", "--show-toplevel"])?;
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !same(Path::new(&top), dir) {
        return None;
    }
    // Watch what moves when a commit is made or checked out; paths from git
    // itself, so a worktree's HEAD and its shared refs are both right.
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        if let Some(p) = git(dir, &["rev-parse", "--git-path", &name]) {
            let p = dir.join(p);
            if p.exists() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
    }
    let hash = git(dir, &["rev-parse", "--short=7", "HEAD"])?;
    let dirty =
        git(dir, &["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    Some(if dirty { format!("{hash}-dirty") } else { hash })
}

/// One git command's trimmed stdout; None when git is missing or fails.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}
