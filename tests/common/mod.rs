//! What the end-to-end tests share: a lab whose machine is an OpenSSH server
//! this test started on 127.0.0.1, with the tools of a shipped lab.

use labrun_ssh::test_support::Sshd;
use std::path::{Path, PathBuf};

/// Writes `dir/lab.yaml`: the `tools:` of the shipped lab `shipped` (a path
/// from the repository root) pointed at this host (restic is the Debian
/// package's /usr/bin/restic, the same .deb the labs pin; the others are
/// where their packages install them), the server as `target:`, and the
/// given `dataset` and `cycles` lines; the shipped lab's `protocol:`, if it
/// has one, comes too.
pub fn target_lab(
    dir: &Path,
    sshd: &Sshd,
    shipped: &str,
    name: &str,
    dataset: &str,
    cycles: u32,
) -> PathBuf {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(shipped))
        .unwrap_or_else(|e| panic!("{shipped}: {e}"));
    let tools_at = text.find("\ntools:").expect("tools section");
    // A lab's own protocol comes along with its tools (it runs their commands).
    let protocol = text[..tools_at]
        .find("\nprotocol:")
        .map_or("", |at| &text[at..tools_at]);
    let tools = &text[tools_at..];
    let tools = tools.replace(
        "  - name: restic\n",
        "  - name: restic\n    install: /usr/bin/restic\n",
    );
    let t = sshd.target();
    let lab = format!(
        "name: {name}\ntarget:\n  host: 127.0.0.1\n  port: {port}\n  user: {user}\n  key: {key}\n  host_key: \"{host_key}\"\n  workdir: {work}\n{dataset}\ncycles: {cycles}\n{protocol}{tools}",
        port = t.port,
        user = t.user,
        key = t.client_key.display(),
        host_key = t.host_key,
        work = dir.join("remote").display(),
    );
    let path = dir.join("lab.yaml");
    std::fs::write(&path, lab).expect("write lab");
    path
}

/// The results store a test's `bench` imports into: beside its results
/// folder (inside it, it would be one more entry among the runs).
pub fn test_store(results: &Path) -> std::path::PathBuf {
    results.parent().unwrap_or(results).join("store.sqlite")
}

/// `labrun -f LAB bench --plain --tools TOOLS EXTRA... --results RESULTS`, which must
/// succeed (else the test fails with its output and the server's log);
/// gives stdout and stderr as one text.
pub fn bench_ok(lab: &Path, results: &Path, tools: &str, extra: &[&str], sshd: &Sshd) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_labrun"))
        .arg("-f")
        .arg(lab)
        .args(["bench", "--plain", "--tools", tools])
        .args(extra)
        .arg("--results")
        .arg(results)
        // The run goes into a store of the test's, not the machine's.
        .env("LABRUN_DB", test_store(results))
        .output()
        .expect("run labrun");
    let text = format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}\nsshd log:\n{}", sshd.log());
    text
}

/// Every file under `dir`, at any depth (none when it is missing). Links
/// are not followed.
// Not every test that includes this module walks a folder.
#[allow(dead_code)]
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}
