//! Source builds (`source:`): the tree id against `git write-tree`, a tree
//! that is not the pinned one refused before anything builds, a local git
//! repository the test writes (a tiny Go module, three commits) built from a
//! commit, the same tree from a `git archive` tarball giving the same cache
//! entry, and a commit or repository that cannot be had refused clearly.
//! Nothing leaves the machine (GOPROXY=off: the module has no dependencies).
//! A host without `git` or `go` fails these tests: they cannot pass by
//! skipping.

mod common;

use common::{Reply, Server, quick_net, sha256_hex};
use labrun_artifact::build::source::{
    ArchiveLocation, GitSource, SourceArchive, SourceCargo, SourceGo, SourceOrigin, SourceToolchain,
};
use labrun_artifact::build::tree_id::tree_id;
use labrun_artifact::{
    ArtifactError, ArtifactSource, ArtifactSpec, BuildRecipe, FetchOptions, Fetcher, NoProgress,
    Resolution, Source, SourceBuild, resolve_offline,
};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "core.autocrlf=false",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("these tests need `git` on PATH");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn installed_go() -> String {
    let out = Command::new("go")
        .args(["env", "GOVERSION"])
        .output()
        .expect("the source build tests need `go` on PATH (Debian: golang-go)");
    assert!(out.status.success(), "go env GOVERSION failed");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The tree of a fresh repository holding `dir`'s files, as git computes it.
fn git_write_tree(dir: &Path) -> String {
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A", "-f"]);
    git(dir, &["write-tree"])
}

#[test]
fn the_tree_id_is_the_one_git_write_tree_gives() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write(&d.join("README"), "top\n");
    write(
        &d.join("a.b"),
        "a file whose name sorts before the folder a/\n",
    );
    write(&d.join("a/x"), "nested\n");
    write(&d.join("a/deeper/y"), "deeper\n");
    write(&d.join("a0"), "sorts after a/\n");
    write(&d.join("a-"), "sorts before a.b\n");
    write(&d.join("run.sh"), "#!/bin/sh\necho hi\n");
    std::fs::set_permissions(d.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    // Group and other bits alone are not executable for git.
    write(&d.join("odd"), "x\n");
    std::fs::set_permissions(d.join("odd"), std::fs::Permissions::from_mode(0o655)).unwrap();
    symlink("a/x", d.join("link")).unwrap();
    symlink("../README", d.join("a/up")).unwrap();
    std::fs::create_dir_all(d.join("empty/inside")).unwrap();
    // Ignored and CRLF-marked files are part of the tree all the same.
    write(&d.join(".gitignore"), "ignored.txt\n");
    write(&d.join("ignored.txt"), "kept\n");
    write(&d.join(".gitattributes"), "*.txt text eol=crlf\n");
    write(&d.join("empty.txt"), "");

    let ours = tree_id(d).unwrap();
    assert_eq!(
        ours,
        git_write_tree(d),
        "the native tree id differs from git's"
    );
    // `.git` is never part of the tree.
    assert_eq!(tree_id(d).unwrap(), ours);
}

/// A tiny Go module in a local git repository: three commits, each printing
/// its own line.
struct Repo {
    tmp: tempfile::TempDir,
    commits: Vec<String>,
    trees: Vec<String>,
}

impl Repo {
    fn new() -> Repo {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("hello");
        std::fs::create_dir_all(&dir).unwrap();
        git(&dir, &["init", "-q", "-b", "main"]);
        write(&dir.join("go.mod"), "module example.com/hello\n\ngo 1.21\n");
        let mut commits = Vec::new();
        let mut trees = Vec::new();
        for n in 1..=3 {
            write(
                &dir.join("cmd/hello/main.go"),
                &format!(
                    "package main\n\nimport \"fmt\"\n\nfunc main() {{ fmt.Println(\"hello from commit {n}\") }}\n"
                ),
            );
            git(&dir, &["add", "-A"]);
            git(&dir, &["commit", "-q", "-m", &format!("commit {n}")]);
            commits.push(git(&dir, &["rev-parse", "HEAD"]));
            trees.push(git(&dir, &["rev-parse", "HEAD^{tree}"]));
        }
        Repo {
            tmp,
            commits,
            trees,
        }
    }

    fn dir(&self) -> PathBuf {
        self.tmp.path().join("hello")
    }

    fn cache(&self) -> PathBuf {
        self.tmp.path().join("cache")
    }

    fn fetcher(&self, mirror: Option<PathBuf>) -> Fetcher {
        let mut opts = FetchOptions::new(self.cache(), mirror);
        opts.build_env = vec![("GOPROXY".into(), "off".into())];
        Fetcher::new(opts).unwrap()
    }

    /// `git archive` of commit `i` as a tarball, as a forge serves one.
    fn archive(&self, i: usize) -> PathBuf {
        let path = self.tmp.path().join(format!("hello-{i}.tar.gz"));
        git(
            &self.dir(),
            &[
                "archive",
                "--format=tar.gz",
                &format!("--prefix=hello-{i}/"),
                "-o",
                path.to_str().unwrap(),
                &self.commits[i],
            ],
        );
        path
    }
}

fn go_build() -> SourceToolchain {
    SourceToolchain::Go(SourceGo {
        package: "./cmd/hello".into(),
        toolchain: installed_go(),
        tags: vec![],
        ldflags: Some("-s -w".into()),
        binary: None,
    })
}

fn spec(origin: SourceOrigin, tree: Option<&str>, sha256: &str) -> ArtifactSpec {
    ArtifactSpec::new(
        ArtifactSource::Build(BuildRecipe::Source(SourceBuild {
            origin,
            tree: tree.map(str::to_string),
            build: go_build(),
        })),
        sha256,
    )
}

fn archive_file(path: &Path) -> SourceOrigin {
    SourceOrigin::Archive(SourceArchive {
        location: ArchiveLocation::File(path.display().to_string()),
        name: None,
        sha256: None,
    })
}

fn git_commit(repo: &Path, commit: &str) -> SourceOrigin {
    SourceOrigin::Git(GitSource {
        repo: repo.display().to_string(),
        commit: commit.into(),
    })
}

fn actual_of(err: ArtifactError) -> String {
    match err {
        ArtifactError::BuiltDigestMismatch { actual, .. } => actual,
        other => panic!("expected a built-digest mismatch, got: {other}"),
    }
}

#[tokio::test]
async fn an_archive_whose_tree_is_not_the_pin_is_refused_before_anything_builds() {
    let repo = Repo::new();
    let archive = repo.archive(1);
    let f = repo.fetcher(None);
    // The archive of commit 2 pinned with commit 1's tree.
    let wrong = spec(
        archive_file(&archive),
        Some(&repo.trees[0]),
        &"0".repeat(64),
    );
    let err = f.fetch("hello", &wrong, &mut NoProgress).await.unwrap_err();
    let msg = err.to_string();
    let ArtifactError::SourceTreeMismatch {
        expected, actual, ..
    } = &err
    else {
        panic!("expected a tree mismatch, got: {err}")
    };
    assert_eq!((expected, actual), (&repo.trees[0], &repo.trees[1]));
    assert!(
        msg.contains(&repo.trees[0])
            && msg.contains(&repo.trees[1])
            && msg.contains("nothing was built"),
        "{msg}"
    );
    // No go build ran, and no binary is anywhere in the cache.
    let builds = repo.cache().join("builds");
    for entry in std::fs::read_dir(&builds).unwrap() {
        let path = entry.unwrap().path();
        assert!(!path.join("hello").exists(), "a binary was built");
        if let Ok(log) = std::fs::read_to_string(path.join("build.log")) {
            assert!(!log.contains("go build -trimpath"), "{log}");
        }
    }
}

#[tokio::test]
#[ignore = "needs a Go build (the host's go): `make test` runs it"]
async fn a_git_commit_and_an_archive_of_the_same_tree_are_one_cached_build() {
    let repo = Repo::new();
    let f = repo.fetcher(None);

    // Commit 2 through the git source, its tree not pinned: built, and
    // refused under a placeholder digest, which names the real one.
    let commit = git_commit(&repo.dir(), &repo.commits[1]);
    let digest = actual_of(
        f.fetch(
            "hello",
            &spec(commit.clone(), None, &"0".repeat(64)),
            &mut NoProgress,
        )
        .await
        .unwrap_err(),
    );
    let from_git = f
        .fetch(
            "hello",
            &spec(commit, Some(&repo.trees[1]), &digest),
            &mut NoProgress,
        )
        .await
        .unwrap();
    let Source::Build {
        cached,
        dir: git_dir,
        ..
    } = &from_git.from
    else {
        panic!("not a build: {:?}", from_git.from)
    };
    assert!(*cached, "the same commit was built twice");
    let run = Command::new(&from_git.path).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&run.stdout).trim(),
        "hello from commit 2"
    );
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(git_dir.join("build.json")).unwrap())
            .unwrap();
    assert_eq!(record["source"]["kind"], "git");
    assert_eq!(record["source"]["commit"], repo.commits[1].as_str());
    assert_eq!(record["inputs"]["source"]["tree"], repo.trees[1].as_str());

    // The same tree as a forge's tarball, found in a mirror folder by name:
    // the same cache entry, nothing built.
    let tarball = repo.archive(1);
    let mirror = repo.tmp.path().join("mirror");
    std::fs::create_dir_all(&mirror).unwrap();
    std::fs::rename(&tarball, mirror.join("hello-src.tar.gz")).unwrap();
    let by_name = SourceOrigin::Archive(SourceArchive {
        location: ArchiveLocation::Url("https://example.invalid/archive/hello.tar.gz".into()),
        name: Some("hello-src.tar.gz".into()),
        sha256: None,
    });
    let from_archive = repo
        .fetcher(Some(mirror))
        .fetch(
            "hello",
            &spec(by_name, Some(&repo.trees[1]), &digest),
            &mut NoProgress,
        )
        .await
        .unwrap();
    let Source::Build { cached, dir, .. } = &from_archive.from else {
        panic!("not a build: {:?}", from_archive.from)
    };
    assert!(*cached, "the same tree from an archive was built again");
    assert_eq!(dir, git_dir);

    // From empty caches, the archive alone builds the same bytes.
    std::fs::remove_dir_all(repo.cache()).unwrap();
    let fresh = repo
        .fetcher(None)
        .fetch(
            "hello",
            &spec(
                archive_file(&repo.archive(1)),
                Some(&repo.trees[1]),
                &digest,
            ),
            &mut NoProgress,
        )
        .await
        .unwrap();
    assert!(matches!(fresh.from, Source::Build { cached: false, .. }));
    assert_eq!(fresh.sha256, digest);
}

#[tokio::test]
async fn a_commit_the_repository_lacks_or_a_repository_out_of_reach_is_refused_clearly() {
    let repo = Repo::new();
    let f = repo.fetcher(None);
    let absent = "0123456789abcdef0123456789abcdef01234567";
    let err = f
        .fetch(
            "hello",
            &spec(git_commit(&repo.dir(), absent), None, &"0".repeat(64)),
            &mut NoProgress,
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains(&format!("has no commit {absent}")), "{err}");

    let nowhere = repo.tmp.path().join("no-such-repository");
    let err = f
        .fetch(
            "hello",
            &spec(
                git_commit(&nowhere, &repo.commits[0]),
                None,
                &"0".repeat(64),
            ),
            &mut NoProgress,
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("the repository cannot be reached"), "{err}");

    // A commit whose tree is not the pinned one: refused, naming both.
    let err = f
        .fetch(
            "hello",
            &spec(
                git_commit(&repo.dir(), &repo.commits[2]),
                Some(&repo.trees[0]),
                &"0".repeat(64),
            ),
            &mut NoProgress,
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&repo.trees[0]) && err.contains(&repo.trees[2]),
        "{err}"
    );
}

#[tokio::test]
async fn an_archive_is_downloaded_its_digest_checked_when_pinned_and_kept_in_the_cache() {
    let repo = Repo::new();
    let bytes = std::fs::read(repo.archive(0)).unwrap();
    let server = Server::start();
    server.route("/archive/hello.tar.gz", vec![Reply::Body(bytes.clone())]);
    let mut opts = FetchOptions::new(repo.cache(), None);
    opts.net = quick_net();
    opts.build_env = vec![("GOPROXY".into(), "off".into())];
    let f = Fetcher::new(opts).unwrap();
    let at = |sha256: Option<String>| {
        SourceOrigin::Archive(SourceArchive {
            location: ArchiveLocation::Url(server.url("/archive/hello.tar.gz")),
            name: Some("hello-1.tar.gz".into()),
            sha256,
        })
    };

    // A pinned archive digest that the bytes do not have: refused, nothing built.
    let err = f
        .fetch(
            "hello",
            &spec(
                at(Some("ab".repeat(32))),
                Some(&repo.trees[0]),
                &"0".repeat(64),
            ),
            &mut NoProgress,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ArtifactError::DigestMismatch { actual, .. } if *actual == sha256_hex(&bytes)),
        "{err}"
    );
    assert_eq!(
        common::files_under(&repo.cache().join("artifacts")),
        Vec::<PathBuf>::new(),
        "a refused download was kept"
    );

    // No archive digest: downloaded, unpacked, and its tree (commit 1's)
    // compared with the pin (commit 2's here): refused, naming both.
    let err = f
        .fetch(
            "hello",
            &spec(at(None), Some(&repo.trees[1]), &"0".repeat(64)),
            &mut NoProgress,
        )
        .await
        .unwrap_err();
    let ArtifactError::SourceTreeMismatch {
        expected, actual, ..
    } = &err
    else {
        panic!("expected a tree mismatch, got: {err}")
    };
    assert_eq!((expected, actual), (&repo.trees[1], &repo.trees[0]));
    assert_eq!(server.hits("/archive/hello.tar.gz"), 2);

    // The download was kept under its digest: with that digest pinned, the
    // cache serves it and the server is not asked again.
    let kept = repo
        .cache()
        .join("artifacts")
        .join(sha256_hex(&bytes))
        .join("hello-1.tar.gz");
    assert!(kept.is_file(), "{}", kept.display());
    let err = f
        .fetch(
            "hello",
            &spec(
                at(Some(sha256_hex(&bytes))),
                Some(&repo.trees[1]),
                &"0".repeat(64),
            ),
            &mut NoProgress,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, ArtifactError::SourceTreeMismatch { .. }),
        "{err}"
    );
    assert_eq!(server.hits("/archive/hello.tar.gz"), 2);
}

#[tokio::test]
#[ignore = "needs a cargo build (the host's cargo): `make test` runs it"]
async fn a_crate_is_built_from_a_git_commit_with_its_own_lock_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("hi");
    std::fs::create_dir_all(&dir).unwrap();
    git(&dir, &["init", "-q", "-b", "main"]);
    write(
        &dir.join("Cargo.toml"),
        "[package]\nname = \"hi\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    write(
        &dir.join("Cargo.lock"),
        "version = 3\n\n[[package]]\nname = \"hi\"\nversion = \"0.1.0\"\n",
    );
    write(
        &dir.join("src/main.rs"),
        "fn main() { println!(\"hi from git\"); }\n",
    );
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-q", "-m", "hi"]);
    let commit = git(&dir, &["rev-parse", "HEAD"]);
    let rustc = Command::new("rustc").arg("--version").output().unwrap();
    let toolchain = String::from_utf8(rustc.stdout).unwrap();
    // An empty cargo home: the crate has no dependency, so no registry is asked.
    let home = tmp.path().join("cargo-home");
    std::fs::create_dir_all(&home).unwrap();
    let mut opts = FetchOptions::new(tmp.path().join("cache"), None);
    opts.build_env = vec![("CARGO_HOME".into(), home.into_os_string())];
    let f = Fetcher::new(opts).unwrap();
    let spec = |sha256: &str| {
        ArtifactSpec::new(
            ArtifactSource::Build(BuildRecipe::Source(SourceBuild {
                origin: git_commit(&dir, &commit),
                tree: None,
                build: SourceToolchain::Cargo(SourceCargo {
                    toolchain: toolchain.split_whitespace().nth(1).unwrap().to_string(),
                    bin: "hi".into(),
                    features: vec![],
                    no_default_features: false,
                }),
            })),
            sha256,
        )
    };
    let digest = actual_of(
        f.fetch("hi", &spec(&"0".repeat(64)), &mut NoProgress)
            .await
            .unwrap_err(),
    );
    let got = f
        .fetch("hi", &spec(&digest), &mut NoProgress)
        .await
        .unwrap();
    assert!(matches!(got.from, Source::Build { cached: true, .. }));
    let run = Command::new(&got.path).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&run.stdout).trim(), "hi from git");
}

#[test]
fn check_says_where_an_unbuilt_source_archive_would_come_from() {
    let tmp = tempfile::tempdir().unwrap();
    let (cache, mirror) = (tmp.path().join("cache"), tmp.path().join("mirror"));
    std::fs::create_dir_all(&mirror).unwrap();
    let tree = "7b918db8b537055153778f6d9d2360c47ab47cab";
    let url = SourceOrigin::Archive(SourceArchive {
        location: ArchiveLocation::Url("https://example.invalid/archive/abc.tar.gz".into()),
        name: Some("tool-abc.tar.gz".into()),
        sha256: None,
    });
    let by_url = spec(url, Some(tree), &"0".repeat(64));
    assert!(matches!(
        resolve_offline(&by_url, &cache, Some(&mirror)),
        Resolution::Download(_)
    ));
    std::fs::write(mirror.join("tool-abc.tar.gz"), b"x").unwrap();
    let found = resolve_offline(&by_url, &cache, Some(&mirror));
    assert!(
        matches!(&found, Resolution::Build(d) if d.contains("mirror folder")),
        "{found}"
    );
    let missing = spec(
        archive_file(&tmp.path().join("nowhere.tar.gz")),
        Some(tree),
        &"0".repeat(64),
    );
    assert!(matches!(
        resolve_offline(&missing, &cache, None),
        Resolution::Unresolvable(_)
    ));
}
