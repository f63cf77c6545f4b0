//! The VM lifecycle as an ordinary user: `check`, `up`, `status`, `down`
//! run by a user the test makes (in groups `libvirt` and `kvm`, no sudo),
//! with the `labrun` binary already built (copied where the user can read
//! it), the lab's cloud image and tool given through `--mirror`, and no
//! `--cache`/`--state`: the user's XDG folders are what is tested.
//!
//! Which libvirt the user gets is what labrun decides and `check` says. On
//! these hosts the system daemon authorises non-root clients through polkit
//! (its default `auth_unix_rw`), and there is no system bus for polkit: it
//! refuses the user ("Unable to get system bus connection"), so labrun uses
//! the user's session daemon (`qemu:///session`), which libvirt starts on
//! first use (`libvirtd --timeout=120`, no systemd needed) and whose QEMU
//! runs as the user. On a host that lets group `libvirt` in, the same test
//! runs through the system daemon; either way `up` must say the URI `check`
//! named, and the domain must be gone from it at the end.
//!
//! Afterwards nothing is left: no domain, no state, no QEMU process of the
//! user; and nothing of the user's is in root's folders (`/var/cache/labrun`,
//! `/var/lib/labrun`, the tests' cache). The user, its home and its
//! processes (the session daemons idle out only after 120 s: ended by pid)
//! are removed at the end, also when the test fails.
//!
//! The smallest VM the tests boot: the stand-in cloud image (tests/vm.rs
//! builds and caches it; built here when missing), 2 vCPU, 1 GiB, one
//! tool (the host's Debian restic, a static binary).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

#[path = "common/cloud_standin.rs"]
mod cloud_standin;

const TEST_CACHE: &str = "/var/tmp/labrun-test-cache";
/// root's folders, which a user's run must never write into.
const ROOT_FOLDERS: [&str; 3] = ["/var/cache/labrun", "/var/lib/labrun", TEST_CACHE];

/// A user made for the test; removed with everything it owns on drop.
struct User {
    name: String,
    uid: u32,
    home: PathBuf,
}

impl User {
    fn create() -> User {
        let pid = std::process::id();
        let name = format!("labrun-nr{pid}");
        // Short: the session daemon's socket path must fit in 108 bytes.
        let home = PathBuf::from(format!("/var/tmp/lnr{pid}"));
        let _ = std::fs::remove_dir_all(&home);
        let out = Command::new("useradd")
            .args(["--create-home", "--home-dir"])
            .arg(&home)
            .args(["--shell", "/bin/sh", "--groups", "libvirt,kvm", &name])
            .output()
            .expect("useradd runs");
        assert!(
            out.status.success(),
            "useradd {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let id = Command::new("id").args(["-u", &name]).output().unwrap();
        let uid = String::from_utf8_lossy(&id.stdout).trim().parse().unwrap();
        User { name, uid, home }
    }

    /// `program args` as the user, in its home, with a login-like
    /// environment and nothing of root's.
    fn command(&self, program: &Path) -> Command {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid",
            &self.name,
            "--regid",
            &self.name,
            "--init-groups",
        ])
        .arg("env")
        .arg("-i")
        .arg(format!("HOME={}", self.home.display()))
        .arg(format!("USER={}", self.name))
        .arg("PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
        .arg(program)
        .current_dir(&self.home)
        .stdin(Stdio::null());
        c
    }

    /// Pids of the user's live processes, with their command lines.
    fn processes(&self) -> Vec<(u32, String)> {
        use std::os::unix::fs::MetadataExt;
        let mut out = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            if e.metadata().map(|m| m.uid()).ok() != Some(self.uid) {
                continue;
            }
            let status = std::fs::read_to_string(e.path().join("status")).unwrap_or_default();
            if status.lines().any(|l| l.starts_with("State:\tZ")) {
                continue;
            }
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            out.push((pid, cmdline.trim().to_string()));
        }
        out
    }

    fn kill_all(&self) {
        for _ in 0..50 {
            let left = self.processes();
            if left.is_empty() {
                return;
            }
            for (pid, _) in left {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for User {
    fn drop(&mut self) {
        let labrun = self.home.join("bin/labrun");
        if labrun.exists() {
            let _ = self
                .command(&labrun)
                .args(["-f", "lab.yaml", "down"])
                .output();
        }
        self.kill_all();
        let _ = Command::new("userdel").arg(&self.name).output();
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

/// Every file under root's folders that belongs to `uid`: all a process
/// of that user can have made there. (Other tests may write into the
/// tests' cache meanwhile, so contents are not compared.)
fn owned_by(uid: u32) -> Vec<PathBuf> {
    fn walk(dir: &Path, uid: u32, out: &mut Vec<PathBuf>) {
        use std::os::unix::fs::MetadataExt;
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let Ok(m) = e.path().symlink_metadata() else {
                continue;
            };
            if m.uid() == uid {
                out.push(e.path());
            }
            if m.is_dir() {
                walk(&e.path(), uid, out);
            }
        }
    }
    let mut out = Vec::new();
    for f in ROOT_FOLDERS {
        walk(Path::new(f), uid, &mut out);
    }
    out
}

fn run(user: &User, labrun: &Path, mirror: &Path, args: &[&str]) -> Output {
    let out = user
        .command(labrun)
        .args(["-f", "lab.yaml", "--mirror"])
        .arg(mirror)
        .args(args)
        .output()
        .unwrap();
    eprintln!(
        "$ labrun {} (as {})\n-> {:?}\n{}{}",
        args.join(" "),
        user.name,
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout_ok(out: &Output, what: &str) -> String {
    assert!(out.status.success(), "labrun {what} failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Copies `from` to `to`, owned by the user.
fn give(user: &User, from: &Path, to: &Path) {
    std::fs::copy(from, to).unwrap_or_else(|e| panic!("copying {}: {e}", from.display()));
    std::os::unix::fs::chown(to, Some(user.uid), None).unwrap();
}

fn lab_yaml(name: &str, image_sha256: &str, restic_sha256: &str) -> String {
    format!(
        r#"name: {name}
vm:
  vcpus: 2
  memory: 1GiB
  disk: 8GiB
  image:
    cloud:
      url: http://127.0.0.1:9/debian-12-standin-amd64.qcow2
      sha256: {image_sha256}
dataset:
  kind: synthetic
  seed: 1
  scale: 0.002
cycles: 1
tools:
  - name: restic
    version: 0.14.0
    artifact:
      url: http://127.0.0.1:9/restic_0.14.0_linux_amd64
      sha256: {restic_sha256}
    env:
      RESTIC_PASSWORD: lab-only-not-a-secret
    commands:
      version: ["{{bin}}", version]
      init: ["{{bin}}", init, -r, "{{repo}}"]
      backup: ["{{bin}}", backup, -r, "{{repo}}", "{{source}}"]
      restore: ["{{bin}}", restore, latest, -r, "{{repo}}", --target, "{{target}}"]
"#
    )
}

fn require_root_and_tools() {
    let id = Command::new("id").arg("-u").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&id.stdout).trim(),
        "0",
        "this test makes a user: it must run as root"
    );
    for tool in [
        "useradd",
        "userdel",
        "setpriv",
        "virsh",
        "qemu-system-x86_64",
    ] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(found, "{tool} is not installed (run scripts/host-setup.sh)");
    }
    assert!(
        Path::new("/usr/bin/restic").exists(),
        "/usr/bin/restic is missing (package restic: run scripts/host-setup.sh)"
    );
}

#[test]
#[ignore = "needs libvirt and a VM boot: make test runs it"]
fn an_ordinary_user_brings_a_vm_up_and_down() {
    require_root_and_tools();
    let started = Instant::now();
    let image = cloud_standin::image(TEST_CACHE);

    let user = User::create();
    let bin = user.home.join("bin");
    let mirror = user.home.join("mirror");
    for d in [&bin, &mirror] {
        std::fs::create_dir(d).unwrap();
        std::os::unix::fs::chown(d, Some(user.uid), None).unwrap();
    }
    let built = PathBuf::from(env!("CARGO_BIN_EXE_labrun"));
    let labrun = bin.join("labrun");
    give(&user, &built, &labrun);
    // The agent beside it, as an install puts it (`up` does not need it).
    let agent = built.with_file_name("labrun-agent");
    if agent.exists() {
        give(&user, &agent, &bin.join("labrun-agent"));
    }
    give(&user, &image, &mirror.join("debian-12-standin-amd64.qcow2"));
    give(
        &user,
        Path::new("/usr/bin/restic"),
        &mirror.join("restic_0.14.0_linux_amd64"),
    );
    let digest = |p: &Path| cloud_standin::sha256_hex(&std::fs::read(p).unwrap());
    let name = format!("nonroot-{}", std::process::id());
    let lab = user.home.join("lab.yaml");
    std::fs::write(
        &lab,
        lab_yaml(
            &name,
            &digest(&image),
            &digest(Path::new("/usr/bin/restic")),
        ),
    )
    .unwrap();
    std::os::unix::fs::chown(&lab, Some(user.uid), None).unwrap();

    let check = stdout_ok(&run(&user, &labrun, &mirror, &["check"]), "check");
    let said = check
        .lines()
        .find_map(|l| l.strip_prefix("hypervisor: "))
        .unwrap_or_else(|| panic!("check names no hypervisor:\n{check}"));
    let uri = if said.starts_with("qemu:///session") {
        "qemu:///session"
    } else {
        assert!(
            said.starts_with("qemu:///system") && said.contains("group libvirt"),
            "{said}"
        );
        "qemu:///system"
    };

    let t = Instant::now();
    let up = run(&user, &labrun, &mirror, &["up"]);
    let up_text = String::from_utf8_lossy(&up.stderr).into_owned();
    stdout_ok(&up, "up");
    eprintln!(
        "up as {} took {:.1} s",
        user.name,
        t.elapsed().as_secs_f64()
    );
    assert!(
        up_text.contains(&format!("up: libvirt: {uri}")),
        "up did not use the hypervisor check named ({uri}):\n{up_text}"
    );
    // The user's own XDG folders hold the cache and the lab's state.
    let cache = user.home.join(".cache/labrun");
    let state = user.home.join(".local/state/labrun");
    assert!(
        cache.join("artifacts").is_dir(),
        "no cache in {}",
        cache.display()
    );
    let lab_dirs: Vec<_> = std::fs::read_dir(&state)
        .unwrap_or_else(|e| panic!("{}: {e}", state.display()))
        .flatten()
        .collect();
    assert_eq!(lab_dirs.len(), 1, "{lab_dirs:?}");

    let status = stdout_ok(&run(&user, &labrun, &mirror, &["status"]), "status");
    let domain = format!("labrun-{name}");
    assert!(
        status
            .lines()
            .any(|l| l.starts_with(&domain) && l.contains("running")),
        "{status}"
    );
    assert!(
        user.processes()
            .iter()
            .any(|(_, c)| c.contains("qemu-system") && c.contains(&domain))
            || uri == "qemu:///system",
        "no QEMU of the user runs {domain}"
    );

    let down = stdout_ok(&run(&user, &labrun, &mirror, &["down"]), "down");
    assert!(
        down.contains(&format!("removed: domain {domain}")),
        "{down}"
    );
    let after = stdout_ok(&run(&user, &labrun, &mirror, &["status"]), "status");
    assert!(after.contains("nothing is up"), "{after}");

    // Nothing left: no domain at the URI, no state, no QEMU.
    let list = user
        .command(Path::new("/usr/bin/virsh"))
        .args(["-c", uri, "list", "--all", "--name"])
        .output()
        .unwrap();
    assert!(
        list.status.success(),
        "virsh -c {uri} list as the user failed"
    );
    let domains = String::from_utf8_lossy(&list.stdout);
    assert!(
        !domains.lines().any(|l| l.trim() == domain),
        "{domain} is still defined at {uri}: {domains}"
    );
    let left: Vec<_> = std::fs::read_dir(&state)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "state left behind: {left:?}");
    let qemu: Vec<_> = user
        .processes()
        .into_iter()
        .filter(|(_, c)| c.contains("qemu-system"))
        .collect();
    assert!(qemu.is_empty(), "QEMU still runs: {qemu:?}");
    // Only libvirt's own idle daemons may remain (they exit after 120 s).
    let others: Vec<_> = user
        .processes()
        .into_iter()
        .filter(|(_, c)| !c.contains("--timeout=120"))
        .collect();
    assert!(others.is_empty(), "processes left: {others:?}");

    let written = owned_by(user.uid);
    assert!(
        written.is_empty(),
        "a user's run wrote into root's folders: {written:?}"
    );
    eprintln!(
        "the non-root lifecycle took {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
