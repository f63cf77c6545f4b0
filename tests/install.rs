//! `make install` into a temporary DESTDIR, then the installed `labrun` run
//! from a folder with no build in it: `--version` names the commit, `check`
//! reads a shipped lab, and `bench` on a loopback SSH target finds the agent
//! where `make install` put it (no `--agent`, no LABRUN_AGENT, no target/).

// Only its loopback lab is used here, not its bench through the built labrun.
#[allow(dead_code)]
mod common;

use labrun_ssh::test_support::Sshd;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const REPO: &str = env!("CARGO_MANIFEST_DIR");

/// The installed labrun, run in `cwd` with no agent named.
fn installed(bin: &Path, cwd: &Path, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .current_dir(cwd)
        .env_remove("LABRUN_AGENT")
        // Runs go into a store of the test's, not the machine's.
        .env("LABRUN_DB", cwd.join("runs.sqlite"))
        .output()
        .expect("run the installed labrun")
}

fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
#[ignore = "needs the static agent `make agent` builds (LABRUN_AGENT): make test runs it"]
fn make_install_gives_a_labrun_that_finds_its_agent_from_anywhere() {
    let staging = tempfile::tempdir().unwrap();
    // `install` is `build` (a release build, as `make bench` does) then
    // `install-files`: the files are installed from this test's own labrun
    // and the agent `make test` built, so CI pays for no second build.
    let agent = std::env::var("LABRUN_AGENT")
        .expect("LABRUN_AGENT: the static agent `make agent` built (make test sets it)");
    let make = Command::new("make")
        .arg("-C")
        .arg(REPO)
        .arg("install-files")
        .arg(format!("LABRUN={}", env!("CARGO_BIN_EXE_labrun")))
        .arg(format!("AGENT={agent}"))
        .arg(format!("DESTDIR={}", staging.path().display()))
        .arg("PREFIX=/usr")
        .output()
        .expect("run make");
    assert!(make.status.success(), "make install: {}", text(&make));

    let prefix = staging.path().join("usr");
    let bin = prefix.join("bin/labrun");
    for file in [
        "bin/labrun",
        "lib/labrun/labrun-agent",
        "share/man/man1/labrun.1",
        "share/man/man1/labrun-bench.1",
        "share/man/man1/labrun-runs.1",
        "share/bash-completion/completions/labrun",
        "share/zsh/site-functions/_labrun",
        "share/fish/vendor_completions.d/labrun.fish",
    ] {
        assert!(prefix.join(file).is_file(), "{file} not installed");
    }
    // The hidden generator is no page of its own.
    assert!(!prefix.join("share/man/man1/labrun-generate.1").exists());
    let man = std::fs::read_to_string(prefix.join("share/man/man1/labrun.1")).unwrap();
    assert!(
        man.contains(".TH labrun 1") && man.contains("runs"),
        "{man}"
    );
    let bash =
        std::fs::read_to_string(prefix.join("share/bash-completion/completions/labrun")).unwrap();
    assert!(
        bash.contains("complete -F") && bash.contains("runs"),
        "{bash}"
    );
    // Nothing beside the binary: the agent can only come from lib/labrun/.
    assert!(!prefix.join("bin/labrun-agent").exists());

    let elsewhere = tempfile::tempdir().unwrap();
    let cwd = elsewhere.path();
    assert!(!cwd.join("target").exists());

    let version = installed(&bin, cwd, &["--version"]);
    let said = String::from_utf8_lossy(&version.stdout).trim().to_string();
    assert!(version.status.success(), "{}", text(&version));
    let head = Command::new("git")
        .args(["-C", REPO, "rev-parse", "--short=7", "HEAD"])
        .output()
        .expect("git");
    let commit = String::from_utf8_lossy(&head.stdout).trim().to_string();
    assert!(
        head.status.success() && commit.len() == 7,
        "no commit: {}",
        text(&head)
    );
    let expected = format!("labrun {} (commit {commit}", env!("CARGO_PKG_VERSION"));
    assert!(
        said == format!("{expected})") || said == format!("{expected}-dirty)"),
        "{said:?}, expected {expected:?}"
    );

    let shipped = Path::new(REPO).join("lab.yaml");
    let check = installed(&bin, cwd, &["-f", shipped.to_str().unwrap(), "check"]);
    assert!(check.status.success(), "{}", text(&check));
    assert!(
        String::from_utf8_lossy(&check.stdout).contains("is valid"),
        "{}",
        text(&check)
    );

    let sshd = Sshd::start().expect("sshd");
    let lab = common::target_lab(
        cwd,
        &sshd,
        "lab.yaml",
        "install",
        "dataset: {kind: synthetic, seed: 7, scale: 0.001}",
        1,
    );
    let results = cwd.join("results");
    let bench = |bin: &Path| {
        installed(
            bin,
            cwd,
            &[
                "-f",
                lab.to_str().unwrap(),
                "bench",
                "--plain",
                "--tools",
                "restic",
                "--results",
                results.to_str().unwrap(),
            ],
        )
    };
    // Without the installed agent there is none to find: the lookup is
    // what makes the run below work.
    let agent = prefix.join("lib/labrun/labrun-agent");
    let aside: PathBuf = prefix.join("lib/labrun/aside");
    std::fs::rename(&agent, &aside).unwrap();
    let missing = bench(&bin);
    std::fs::rename(&aside, &agent).unwrap();
    assert!(!missing.status.success(), "{}", text(&missing));
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("no static guest agent found"),
        "{}",
        text(&missing)
    );

    let ran = bench(&bin);
    assert!(
        ran.status.success(),
        "{}\nsshd log:\n{}",
        text(&ran),
        sshd.log()
    );
    let runs = installed(&bin, cwd, &["runs", "--json"]);
    let listed: Vec<serde_json::Value> =
        serde_json::from_slice(&runs.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&runs)));
    assert_eq!(listed.len(), 1, "{listed:#?}");
    assert_eq!(listed[0]["status"], "finished", "{listed:#?}");
    assert_eq!(listed[0]["lab"], "install");
}

/// Paths are data: a target folder, PREFIX and DESTDIR holding spaces (and a
/// quote) install where they say, and the recipe's `rm -rf` of its generated
/// folder removes that folder only. Unquoted, `CARGO_TARGET_DIR="/x/decoy
/// /x/tgt"` made it `rm -rf /x/decoy /x/tgt/release/generated`.
#[test]
fn install_files_takes_paths_with_spaces_and_deletes_nothing_beside_its_own_folder() {
    let root = tempfile::tempdir().unwrap();
    let decoy = root.path().join("decoy");
    std::fs::create_dir(&decoy).unwrap();
    std::fs::write(decoy.join("keep"), "a user's file").unwrap();
    let target_dir = format!("{} {}", decoy.display(), root.path().join("tgt").display());
    // install-files copies whatever AGENT names; its content is not run here.
    let agent_dir = root.path().join("agent's dir");
    std::fs::create_dir(&agent_dir).unwrap();
    let agent = agent_dir.join("labrun-agent");
    std::fs::write(&agent, "#!/bin/sh\n").unwrap();
    let staging = root.path().join("stage dir");
    let make = Command::new("make")
        .arg("-C")
        .arg(REPO)
        .arg("install-files")
        .arg(format!("LABRUN={}", env!("CARGO_BIN_EXE_labrun")))
        .arg(format!("AGENT={}", agent.display()))
        .arg(format!("DESTDIR={}", staging.display()))
        .arg("PREFIX=/opt/my labrun's prefix")
        .env("CARGO_TARGET_DIR", &target_dir)
        .output()
        .expect("run make");
    assert!(make.status.success(), "make install-files: {}", text(&make));
    assert!(
        decoy.join("keep").is_file(),
        "the folder beside the target folder was deleted: {}",
        text(&make)
    );
    let prefix = staging.join("opt/my labrun's prefix");
    for file in [
        "bin/labrun",
        "lib/labrun/labrun-agent",
        "share/man/man1/labrun.1",
        "share/bash-completion/completions/labrun",
        "share/zsh/site-functions/_labrun",
        "share/fish/vendor_completions.d/labrun.fish",
    ] {
        assert!(prefix.join(file).is_file(), "{file} not installed");
    }
    // The generated pages went to the target folder named, spaces and all.
    assert!(
        Path::new(&target_dir)
            .join("release/generated/man/labrun.1")
            .is_file()
    );
}
