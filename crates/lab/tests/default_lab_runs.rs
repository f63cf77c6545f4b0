//! labs/debian12.yaml's commands, run for real with the Debian packages it
//! pins (the host has the same ones: `scripts/host-setup.sh` installs restic,
//! borgbackup and duplicity): init, full backup, change, incremental backup,
//! restore, and the restored tree compared with the source. This is what
//! catches a wrong flag or a missing `--force` before a VM ever boots. The
//! default lab's tools (built from source, borg from sid) run in the VM test.

use labrun_lab::{CommandTemplate, Lab, ToolSpec};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Dirs {
    source: PathBuf,
    repo: PathBuf,
    target: PathBuf,
    work: PathBuf,
}

fn substitute(s: &str, bin: &str, d: &Dirs, snapshot: &str) -> String {
    s.replace("{bin}", bin)
        .replace("{repo}", d.repo.to_str().unwrap())
        .replace("{source}", d.source.to_str().unwrap())
        .replace("{target}", d.target.to_str().unwrap())
        .replace("{work}", d.work.to_str().unwrap())
        .replace("{snapshot}", snapshot)
}

fn run(tool: &ToolSpec, cmd: &CommandTemplate, bin: &str, d: &Dirs, snapshot: &str) -> String {
    let argv: Vec<String> = cmd
        .argv
        .iter()
        .map(|a| substitute(a, bin, d, snapshot))
        .collect();
    let mut c = Command::new(&argv[0]);
    // as the agent does: HOME is the tool's fresh work folder
    c.args(&argv[1..]).envs(&tool.env).env("HOME", &d.work);
    if let Some(cwd) = &cmd.cwd {
        c.current_dir(substitute(cwd, bin, d, snapshot));
    }
    let out = c
        .output()
        .unwrap_or_else(|e| panic!("{}: cannot run {argv:?}: {e}", tool.name));
    assert!(
        out.status.success(),
        "{}: {argv:?} failed: {}\n{}",
        tool.name,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

fn tree(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(
                    p.strip_prefix(root).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    out
}

#[test]
fn default_lab_commands_back_up_and_restore_with_the_pinned_packages() {
    let lab =
        Lab::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../labs/debian12.yaml")).unwrap();
    for tool in &lab.tools {
        let bin = tool.install_path().replace("/usr/local/bin/", "/usr/bin/");
        assert!(
            Path::new(&bin).exists(),
            "{bin} missing: run `make setup` (scripts/host-setup.sh installs the default lab's tools)"
        );
        let tmp = tempfile::tempdir().unwrap();
        let d = Dirs {
            source: tmp.path().join("src"),
            repo: tmp.path().join("repo"),
            target: tmp.path().join("restore"),
            work: tmp.path().join("work"),
        };
        for dir in [&d.source, &d.target, &d.work] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::create_dir_all(d.source.join("a/b")).unwrap();
        std::fs::write(d.source.join("a/b/small"), b"hello").unwrap();
        std::fs::write(d.source.join("big"), vec![7u8; 300_000]).unwrap();

        let c = &tool.commands;
        if let Some(v) = c.get("version") {
            let out = run(tool, v, &bin, &d, "");
            assert!(
                out.contains(&tool.version),
                "{}: version output {out:?} lacks {}",
                tool.name,
                tool.version
            );
        }
        run(tool, &c["init"], &bin, &d, "");
        run(tool, &c["backup"], &bin, &d, "s1");
        std::fs::write(d.source.join("a/b/small"), b"changed").unwrap();
        std::fs::write(d.source.join("new"), b"added").unwrap();
        run(tool, &c["backup"], &bin, &d, "s2");
        run(tool, &c["restore"], &bin, &d, "s2");
        if let Some(s) = c.get("snapshots") {
            run(tool, s, &bin, &d, "");
        }

        // The agent verifies the tree at {target} itself, not under it.
        assert_eq!(
            tree(&d.target),
            tree(&d.source),
            "{}: restored tree differs",
            tool.name
        );

        // A gpg-agent started for duplicity's encryption belongs to this
        // test: it lives in the GNUPGHOME the lab names, and must not outlive
        // the test (the agent runs each step in a cgroup; this test does not).
        if let Some(home) = tool.env.get("GNUPGHOME") {
            let _ = Command::new("gpgconf")
                .args(["--kill", "gpg-agent"])
                .env("GNUPGHOME", home)
                .status();
            // `gpgconf --kill` asks the agent to exit and returns: give it
            // up to 5 s on a loaded machine before calling it a leak.
            let pattern = format!("gpg-agent --homedir {home}");
            let mut left = Command::new("pgrep")
                .args(["-f", &pattern])
                .output()
                .expect("pgrep");
            for _ in 0..50 {
                if left.stdout.is_empty() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
                left = Command::new("pgrep")
                    .args(["-f", &pattern])
                    .output()
                    .expect("pgrep");
            }
            assert!(
                left.stdout.is_empty(),
                "{}: a gpg-agent for {home} outlived the test: {}",
                tool.name,
                String::from_utf8_lossy(&left.stdout)
            );
        }
    }
}
