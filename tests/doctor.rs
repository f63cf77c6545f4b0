//! `labrun doctor` on this host: what a run gets (the acceleration and its
//! reason, libvirt, the noise sources) and an exit code that follows
//! whether a run can start.

use std::path::Path;
use std::process::Output;

fn doctor(lab: &Path, wrap: Option<&str>) -> (Output, String) {
    let labrun = env!("CARGO_BIN_EXE_labrun");
    let mut cmd = match wrap {
        // A shell around labrun: the libvirt sockets hidden first.
        Some(prefix) => {
            let mut c = std::process::Command::new("unshare");
            c.args(["-m", "sh", "-c"])
                .arg(format!("{prefix} && exec \"$0\" -f \"$1\" doctor"));
            c.arg(labrun).arg(lab);
            c
        }
        None => {
            let mut c = std::process::Command::new(labrun);
            c.arg("-f").arg(lab).arg("doctor");
            c
        }
    };
    let out = cmd.output().expect("run labrun doctor");
    let text = format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out, text)
}

fn shipped_lab() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("lab.yaml")
}

/// Here (PVM: /dev/kvm runs only PVM guest kernels) doctor says TCG and
/// why; on a KVM host, KVM. Either way a run can start: exit 0.
#[test]
#[ignore = "needs libvirtd: `make test` runs it"]
fn doctor_says_the_acceleration_and_why_and_a_run_can_start() {
    let (out, text) = doctor(&shipped_lab(), None);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let pvm = Path::new("/dev/kvm").exists() && Path::new("/sys/module/kvm_pvm").exists();
    let accel = text
        .lines()
        .find(|l| l.contains("acceleration:"))
        .unwrap_or_else(|| panic!("no acceleration line: {text}"));
    if pvm {
        assert!(
            accel.contains("TCG") && accel.contains("PVM: cannot boot a stock kernel"),
            "{accel}"
        );
    } else {
        assert!(accel.contains("KVM") || accel.contains("TCG"), "{accel}");
    }
    assert!(
        text.contains("libvirtd answers at qemu:///system"),
        "{text}"
    );
    assert!(text.contains("a run can start here"), "{text}");
    // The noise sources, each read or said unknown.
    for fact in [
        "cpufreq governor:",
        "load average:",
        "transparent huge pages:",
        "other libvirt domains:",
    ] {
        assert!(text.contains(fact), "{fact}: {text}");
    }
}

/// With the system daemon's sockets hidden (a private mount namespace, a
/// tmpfs over /run/libvirt), libvirtd cannot be reached: doctor says so and
/// exits 1, as `up` would refuse.
#[test]
#[ignore = "needs libvirtd and root (a mount namespace): `make test` runs it"]
fn doctor_exits_1_when_libvirtd_cannot_be_reached() {
    let (out, text) = doctor(&shipped_lab(), Some("mount -t tmpfs none /run/libvirt"));
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("libvirtd does not answer at qemu:///system"),
        "{text}"
    );
    assert!(text.contains("a run cannot start here"), "{text}");
}

/// A lab on an SSH target has no hypervisor here to check: said, exit 0.
#[test]
fn doctor_of_an_ssh_target_lab_says_there_is_nothing_to_check() {
    let dir = tempfile::tempdir().unwrap();
    let lab = dir.path().join("lab.yaml");
    let shipped = std::fs::read_to_string(shipped_lab()).unwrap();
    let tools = &shipped[shipped.find("\ntools:").unwrap()..];
    std::fs::write(
        &lab,
        format!(
            "name: remote\ntarget:\n  host: 127.0.0.1\n  port: 2222\n  user: bench\n  key: id\n  host_key: \"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\"\n  workdir: /srv/labrun\ndataset: {{kind: synthetic, seed: 1, scale: 0.001}}\ncycles: 1\n{tools}"
        ),
    )
    .unwrap();
    let (out, text) = doctor(&lab, None);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("runs on an SSH target"), "{text}");
}

/// From a folder without a lab (`/`), doctor describes the host for the
/// protocol's machine instead of failing on the missing lab file, and its
/// exit code follows its FAIL lines.
#[test]
fn doctor_without_a_lab_describes_the_host() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_labrun"))
        .arg("doctor")
        .env_remove("LABRUN_LAB")
        .current_dir("/")
        .output()
        .expect("run labrun doctor");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("no lab file at lab.yaml"), "{text}");
    for fact in ["QEMU", "libvirt", "acceleration:", "disk:"] {
        assert!(text.contains(fact), "no {fact} line:\n{text}");
    }
    let blocked = text.lines().any(|l| l.starts_with("FAIL"));
    assert_eq!(out.status.success(), !blocked, "{text}");
}

/// A lab file that cannot be read says why once (the cause was printed
/// twice: in the message and again as its source).
#[test]
fn a_missing_lab_file_says_its_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_labrun"))
        .args(["-f", "missing.yaml", "check"])
        .current_dir(dir.path())
        .output()
        .expect("run labrun check");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(err.matches("os error 2").count(), 1, "{err}");
    assert!(err.contains("-f FILE"), "{err}");
}
