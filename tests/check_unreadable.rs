//! A folder with a file its user cannot read is refused by `labrun check`
//! before anything boots, naming the file and saying what to do. Root reads
//! every file whatever its mode, so as root the check runs with the two
//! capabilities that let it (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH) dropped
//! by `setpriv`: the same refusal an ordinary user meets.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

const LAB: &str = r#"name: unreadable
dataset: {kind: files, path: DATA}
tools:
  - name: restic
    version: 0.14.0
    artifact:
      apt: {package: restic, version: 0.14.0-1+b5}
      sha256: 9d7e8c210736f3f15ed7cf425ab56aa5259b07d8422b958494bfd4359b5024d1
      extract: {deb-member: usr/bin/restic}
    env: {RESTIC_PASSWORD: lab-only-not-a-secret}
    secret_env: [RESTIC_PASSWORD]
    commands:
      init: ["{bin}", init, -r, "{repo}"]
      backup: {argv: ["{bin}", backup, -r, "{repo}", .], cwd: "{source}"}
      restore: ["{bin}", restore, latest, -r, "{repo}", --target, "{target}"]
"#;

#[test]
fn a_file_the_user_cannot_read_is_named_before_anything_boots() {
    let dir = tempfile::tempdir().unwrap();
    // Others may walk the folders (the test's tempdir is 0700).
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(data.join("sub")).unwrap();
    std::fs::write(data.join("readable"), b"hello").unwrap();
    let locked = data.join("sub/locked");
    std::fs::write(&locked, b"secret").unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let lab = dir.path().join("lab.yaml");
    std::fs::write(&lab, LAB.replace("DATA", &data.display().to_string())).unwrap();

    let labrun = env!("CARGO_BIN_EXE_labrun");
    let mut cmd = if labrun_vm::access::is_root() {
        let mut c = Command::new("setpriv");
        c.args([
            "--bounding-set=-dac_override,-dac_read_search",
            "--inh-caps=-dac_override,-dac_read_search",
            labrun,
        ]);
        c
    } else {
        Command::new(labrun)
    };
    let out = cmd
        .args(["check", "-f"])
        .arg(&lab)
        .env("LABRUN_CACHE", dir.path().join("cache"))
        .output()
        .expect("setpriv (util-linux) runs labrun");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.contains("tree 1:"))
        .unwrap_or_else(|| {
            panic!(
                "no data line:\n{stdout}{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    assert!(
        line.contains("cannot be used")
            && line.contains(&locked.display().to_string())
            && line.contains("Permission denied")
            && line.contains("fix its permissions"),
        "{line}"
    );
    assert!(!stdout.contains("the machine needs about"), "{stdout}");
}
