//! A scratch lab in its own VM for the tests that boot one (tests/vm.rs,
//! tests/bisect_vm.rs): its own lab file, state root and results store,
//! taken down and removed whatever the test did; and the checks that a VM
//! test may run here at all (it fails, saying what is missing, when not).
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::Instant;

/// Boots are serialized (one lock per test binary): two TCG guests on a
/// 2-core host would each take twice as long.
pub static ONE_VM_AT_A_TIME: Mutex<()> = Mutex::new(());

pub const CACHE: &str = "/var/tmp/labrun-test-cache";

/// A scratch lab: its own lab file and state root, removed at the end.
pub struct Lab {
    pub root: PathBuf,
    pub lab_file: PathBuf,
    pub name: String,
}

impl Lab {
    pub fn new(name: &str) -> Lab {
        Lab::with_yaml(name, &lab_yaml(name))
    }

    pub fn with_yaml(name: &str, yaml: &str) -> Lab {
        let root = PathBuf::from(format!(
            "/var/tmp/labrun-test-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let lab_file = root.join(format!("{name}.yaml"));
        std::fs::write(&lab_file, yaml).unwrap();
        Lab {
            root,
            lab_file,
            name: name.to_string(),
        }
    }

    pub fn state(&self) -> PathBuf {
        self.root.join("state")
    }

    pub fn domain(&self) -> String {
        format!("labrun-{}", self.name)
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_labrun"));
        c.arg("--file")
            .arg(&self.lab_file)
            .arg("--state")
            .arg(self.state())
            .arg("--cache")
            .arg(CACHE)
            .args(args)
            // Runs go into a store of the test's, not the machine's.
            .env("LABRUN_DB", self.root.join("store.sqlite"))
            .stdin(Stdio::null());
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        let out = self.cmd(args).output().unwrap();
        // A failure's last lines first: CI keeps the head of a failing
        // test's output, and a long run's reason sits at its very end.
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail = |text: &str| {
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(12)..].join("\n")
        };
        let why = if out.status.success() {
            String::new()
        } else {
            format!(
                "its last lines of stdout:\n{}\nand of stderr:\n{}\n(all of its output follows)\n",
                tail(&stdout),
                tail(&stderr)
            )
        };
        eprintln!(
            "$ labrun {}\n-> {:?}\n{why}{}{}",
            args.join(" "),
            out.status.code(),
            stdout,
            stderr
        );
        out
    }

    pub fn run_ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.status.success(), "labrun {} failed", args.join(" "));
        String::from_utf8(out.stdout).unwrap()
    }

    /// Nothing of this lab is left: no domain, no state folder content.
    pub fn assert_nothing_left(&self) {
        assert!(
            !domain_exists(&self.domain()),
            "domain {} still exists",
            self.domain()
        );
        let left: Vec<_> = std::fs::read_dir(self.state())
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "state left behind: {left:?}");
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        // Whatever the test did, leave the host clean.
        let _ = self.cmd(&["down"]).output();
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The smallest lab the lab schema accepts; the VM section is the default
/// machine (4 vCPU, 3 GiB).
/// The shipped default lab under another name: the tests boot the image the
/// default lab uses (one cached build) and install its real tools.
pub fn lab_yaml(name: &str) -> String {
    let shipped = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/lab.yaml"))
        .expect("lab.yaml");
    assert!(shipped.contains("\nname: default\n"));
    shipped.replace("\nname: default\n", &format!("\nname: {name}\n"))
}

pub fn virsh(args: &[&str]) -> Output {
    Command::new("virsh")
        .args(["-c", "qemu:///system"])
        .args(args)
        .output()
        .unwrap()
}

pub fn domain_exists(name: &str) -> bool {
    let out = virsh(&["list", "--all", "--name"]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|l| l.trim() == name)
}

pub fn domain_running(name: &str) -> bool {
    let out = virsh(&["domstate", name]);
    String::from_utf8_lossy(&out.stdout).trim() == "running"
}

/// Why this host cannot run the VM tests, or None.
pub fn unavailable() -> Option<String> {
    if !rustix_is_root() {
        return Some("not root".into());
    }
    for tool in ["virsh", "qemu-system-x86_64", "qemu-img", "mmdebstrap"] {
        if Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .map(|o| !o.status.success())
            .unwrap_or(true)
        {
            return Some(format!("{tool} is not installed"));
        }
    }
    if !virsh(&["version"]).status.success() {
        return Some(
            "libvirtd is not reachable at qemu:///system (run scripts/host-setup.sh)".into(),
        );
    }
    None
}

pub fn rustix_is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// Fails, saying what is missing, when this host cannot run a VM test: a
/// VM test that was asked to run must never pass unrun. (They are
/// `#[ignore]`d, so a plain `cargo test` / `make test-fast` reports them as
/// ignored; `make test` runs them.)
pub fn require_vm_host() {
    if let Some(why) = unavailable() {
        panic!("this VM test cannot run on this machine: {why}");
    }
}

pub fn ensure_image(lab: &Lab) {
    let t = Instant::now();
    lab.run_ok(&["image", "build"]);
    eprintln!("image ready after {:.0} s", t.elapsed().as_secs_f64());
}
