//! A backup tool small enough to write in a test: a Go program in a local
//! git repository, with a history of eight commits whose fifth makes every
//! backup slower (a second, full pass over the data that sleeps), so a
//! bisection has a known answer. Tags `v1` (the first commit), `v2` (the
//! fourth, last fast one) and `v3` (the eighth).

#![allow(dead_code)] // each test binary that includes this module uses a part of it

use labrun_ssh::test_support::Sshd;
use std::path::Path;
use std::process::Command;

/// The commit that makes backups slower, counted from 0.
pub const SLOW_COMMIT: usize = 4;
pub const COMMITS: usize = 8;

const MAIN_GO: &str = r#"// toy: copies a tree into a repository folder and back.
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

func copyTree(from, to string) error {
	return filepath.Walk(from, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		switch {
		case info.IsDir():
			return os.MkdirAll(dst, info.Mode().Perm()|0o700)
		case info.Mode()&os.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, dst)
		case info.Mode().IsRegular():
			in, err := os.Open(path)
			if err != nil {
				return err
			}
			defer in.Close()
			out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, in); err != nil {
				return err
			}
			return out.Close()
		}
		return nil
	})
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: toy version|init REPO|backup REPO NAME|restore REPO NAME TARGET")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "version":
		fmt.Println("toy VERSION")
	case "init":
		err = os.MkdirAll(os.Args[2], 0o755)
	case "backup":
		err = backup(os.Args[2], os.Args[3])
	case "restore":
		err = restore(os.Args[2], os.Args[3], os.Args[4])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = time.Second
}
"#;

/// A backup's and a restore's steady cost: 0.3 s and 0.5 s of "work", so
/// that a probe's ratio is not made of process start-up noise alone (a copy
/// of a few MB takes milliseconds).
const FAST_BACKUP: &str = r#"
func backup(repo, name string) error {
	time.Sleep(300 * time.Millisecond)
	return copyTree(".", filepath.Join(repo, name))
}
"#;
const FAST_RESTORE: &str = r#"
func restore(repo, name, target string) error {
	time.Sleep(500 * time.Millisecond)
	return copyTree(filepath.Join(repo, name), target)
}
"#;

/// The planted regressions: 1.5 s more per backup, 6x its steady cost;
/// 3 s more per restore, about 2.2x with the copy a restore makes under
/// TCG (the size of step issue 46 was found with).
const SLOW_BACKUP: &str = r#"
func backup(repo, name string) error {
	time.Sleep(1800 * time.Millisecond)
	return copyTree(".", filepath.Join(repo, name))
}
"#;
const SLOW_RESTORE: &str = r#"
func restore(repo, name, target string) error {
	time.Sleep(3500 * time.Millisecond)
	return copyTree(filepath.Join(repo, name), target)
}
"#;

/// Which step the slow commit makes slower.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Plant {
    Backup,
    Restore,
}

/// Runs git in the repository `dir` as the test's author; its output.
fn git_in(dir: &Path) -> impl Fn(&[&str]) -> String + '_ {
    move |args: &[&str]| -> String {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args([
                "-c",
                "user.name=labrun test",
                "-c",
                "user.email=test@labrun.invalid",
                "-c",
                "commit.gpgsign=false",
                "-c",
                "tag.gpgsign=false",
            ])
            .args(args)
            .output()
            .expect("run git");
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

/// Writes the repository into `dir` (created) and returns the commits'
/// ids, oldest first: backups slower from [`SLOW_COMMIT`] on.
pub fn write(dir: &Path) -> Vec<String> {
    write_planted(dir, Plant::Backup)
}

/// [`write`], with the slowdown planted in the step `plant`.
pub fn write_planted(dir: &Path, plant: Plant) -> Vec<String> {
    std::fs::create_dir_all(dir).expect("repo folder");
    let git = git_in(dir);
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(
        dir.join("go.mod"),
        "module example.invalid/toy\n\ngo 1.22\n",
    )
    .expect("go.mod");
    let mut ids = Vec::new();
    for i in 0..COMMITS {
        let slow = i >= SLOW_COMMIT;
        let backup = if slow && plant == Plant::Backup {
            SLOW_BACKUP
        } else {
            FAST_BACKUP
        };
        let restore = if slow && plant == Plant::Restore {
            SLOW_RESTORE
        } else {
            FAST_RESTORE
        };
        let main = MAIN_GO.replace("VERSION", &format!("0.{i}"));
        std::fs::write(dir.join("main.go"), format!("{main}{backup}{restore}")).expect("main.go");
        git(&["add", "-A"]);
        git(&["commit", "-q", "-m", &format!("commit {i}")]);
        ids.push(git(&["rev-parse", "HEAD"]));
    }
    git(&["tag", "v1", &ids[0]]);
    git(&["tag", "v2", &ids[SLOW_COMMIT - 1]]);
    git(&["tag", "v3", &ids[COMMITS - 1]]);
    ids
}

/// Two more commits on top of the history: one whose `main.go` does not
/// compile, then one that puts it back. Their ids, broken first.
pub fn break_then_fix(dir: &Path) -> (String, String) {
    let git = git_in(dir);
    let main = dir.join("main.go");
    let good = std::fs::read_to_string(&main).expect("main.go");
    std::fs::write(&main, "package main\n\nfunc main() {\n").expect("main.go");
    git(&["commit", "-q", "-a", "-m", "broken"]);
    let broken = git(&["rev-parse", "HEAD"]);
    std::fs::write(&main, good).expect("main.go");
    git(&["commit", "-q", "-a", "-m", "fixed"]);
    (broken, git(&["rev-parse", "HEAD"]))
}

/// The lab (`bisect` and `track` test with it): the toy as a series template built from the repository's
/// commits (named by a `file://` URL, as a remote repository would be:
/// labrun lists and builds them from its own copy), installed per commit
/// under the test's folder.
pub fn lab(dir: &Path, sshd: &Sshd, repo: &Path, first: &str) -> std::path::PathBuf {
    let t = sshd.target();
    let lab = format!(
        r#"name: toy-bisect
target:
  host: 127.0.0.1
  port: {port}
  user: {user}
  key: {key}
  host_key: "{host_key}"
  workdir: {work}
dataset: {{kind: synthetic, seed: 7, scale: 0.001}}
cycles: 3
tools:
{tool}"#,
        port = t.port,
        user = t.user,
        key = t.client_key.display(),
        host_key = t.host_key,
        work = dir.join("remote").display(),
        tool = tool(repo, first, Some(&dir.join("bin"))),
    );
    let path = dir.join("lab.yaml");
    std::fs::write(&path, lab).expect("write lab");
    path
}

/// The lab's text for a VM: `machine` (a `vm:` block) as the machine, the
/// toy as the series, a protocol of the two steps a bisection asks about
/// (a full backup and its restore, verified), so that each probe is short
/// under TCG.
pub fn vm_lab(name: &str, machine: &str, repo: &Path, first: &str) -> String {
    format!(
        r#"name: {name}
{machine}
dataset: {{kind: synthetic, seed: 7, scale: 0.001}}
cycles: 3
protocol:
  - source
  - {{run: init}}
  - {{run: backup, name: backup_full, makes: s1}}
  - {{run: restore, restores: s1, repo_size: false}}
tools:
{tool}"#,
        tool = tool(repo, first, None),
    )
}

/// The toy's `tools:` entry: a series of the repository's commits, each
/// built with Go; on an existing machine each commit's binary at a path of
/// its own under `bin`.
fn tool(repo: &Path, first: &str, bin: Option<&Path>) -> String {
    let install = bin.map_or_else(String::new, |b| {
        format!("    install: {}/{{version}}/toy\n", b.display())
    });
    format!(
        r#"  - name: toy
    version: "{{version}}"
    versions:
      - {{version: {first}, sha256: {zeros}}}
{install}    artifact:
      source:
        git: {{repo: "file://{repo}", commit: "{{version}}"}}
        build:
          go: {{package: ., binary: toy, toolchain: go1.26.8}}
      sha256: "{{sha256}}"
    commands:
      version: ["{{bin}}", version]
      init: ["{{bin}}", init, "{{repo}}"]
      backup:
        argv: ["{{bin}}", backup, "{{repo}}", "{{snapshot}}"]
        cwd: "{{source}}"
      restore: ["{{bin}}", restore, "{{repo}}", "{{snapshot}}", "{{target}}"]
"#,
        repo = repo.display(),
        zeros = "0".repeat(64),
    )
}
