//! `labrun pin TOOL --series` end to end, with no network: a small Go
//! module at three versions in a module proxy folder (`GOPROXY=file://`),
//! a lab whose tool is a series over them; the command builds each version
//! (real go builds, in a cache of the test's own), writes every entry's
//! `sum` and `sha256` with the lab's comments kept, and `labrun check` then
//! passes. A host without `go` or `python3` fails this test: it cannot pass
//! by skipping.

use std::path::Path;
use std::process::Command;

const MODULE: &str = "example.com/labrunseries";
const VERSIONS: [&str; 3] = ["1.0.0", "1.1.0", "1.2.0"];

/// The module at `v{version}` in the proxy folder; returns go.sum's hash,
/// computed here (Go's dirhash "h1"), not by the go command.
fn publish(proxy: &Path, version: &str) -> String {
    let script = r#"
import base64, hashlib, json, os, sys, zipfile
proxy, module, version = sys.argv[1:4]
d = os.path.join(proxy, module, "@v")
os.makedirs(d, exist_ok=True)
gomod = "module %s\n\ngo 1.21\n" % module
files = {"go.mod": gomod, "main.go": 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("%s") }\n' % version}
prefix = "%s@%s/" % (module, version)
with zipfile.ZipFile(os.path.join(d, version + ".zip"), "w") as z:
    for name in sorted(files):
        z.writestr(prefix + name, files[name])
open(os.path.join(d, version + ".mod"), "w").write(gomod)
open(os.path.join(d, version + ".info"), "w").write(json.dumps({"Version": version, "Time": "2026-01-01T00:00:00Z"}))
with open(os.path.join(d, "list"), "a") as f:
    f.write(version + "\n")
summary = "".join("%s  %s\n" % (hashlib.sha256(files[n].encode()).hexdigest(), prefix + n) for n in sorted(files))
print("h1:" + base64.b64encode(hashlib.sha256(summary.encode()).digest()).decode())
"#;
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(proxy)
        .arg(MODULE)
        .arg(format!("v{version}"))
        .output()
        .expect("this test needs python3 to write its module proxy");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn go_version() -> String {
    let out = Command::new("go")
        .args(["env", "GOVERSION"])
        .output()
        .expect("this test needs `go` on PATH (Debian: golang-go)");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn lab(toolchain: &str) -> String {
    format!(
        r#"# A series of a test module.
name: pin-series
dataset: {{kind: synthetic, scale: 0.01}}
tools:
  - name: hello
    version: "{{version}}"
    versions:
      # oldest first
      - {{version: 1.0.0}}  # the first release
      - {{version: 1.1.0}}
      - version: 1.2.0
        # pinned below by the command
    artifact:
      go:
        module: {MODULE}
        version: "v{{version}}"
        sum: "{{sum}}"
        toolchain: {toolchain}
        ldflags: -s -w
      sha256: "{{sha256}}"
    commands:
      init: ["{{bin}}", "{{repo}}"]
      backup: ["{{bin}}", "{{repo}}", "{{source}}"]
      restore: ["{{bin}}", "{{repo}}", "{{target}}"]
"#
    )
}

fn labrun(dir: &Path, proxy: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_labrun"))
        .arg("-f")
        .arg(dir.join("lab.yaml"))
        .arg("--cache")
        .arg(dir.join("cache"))
        .args(args)
        .env("GOPROXY", format!("file://{}", proxy.display()))
        .env("GOSUMDB", "off")
        .env("GONOSUMDB", MODULE)
        .output()
        .unwrap()
}

#[test]
fn every_version_of_a_series_is_built_and_pinned_comments_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let proxy = tmp.path().join("proxy");
    let sums: Vec<String> = VERSIONS.iter().map(|v| publish(&proxy, v)).collect();
    let before = lab(&go_version());
    std::fs::write(tmp.path().join("lab.yaml"), &before).unwrap();

    // Unpinned, the lab is refused, and says what to run.
    let check = labrun(tmp.path(), &proxy, &["check"]);
    let err = String::from_utf8_lossy(&check.stderr).to_string()
        + &String::from_utf8_lossy(&check.stdout);
    assert!(!check.status.success());
    assert!(err.contains("labrun pin hello --series"), "{err}");

    let pin = labrun(tmp.path(), &proxy, &["pin", "hello", "--series"]);
    let said = String::from_utf8_lossy(&pin.stdout).to_string();
    assert!(
        pin.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&pin.stderr)
    );
    let after = std::fs::read_to_string(tmp.path().join("lab.yaml")).unwrap();
    for sum in &sums {
        assert!(after.contains(sum.as_str()), "{sum} not written:\n{after}");
    }
    for kept in [
        "# A series of a test module.\n",
        "      # oldest first\n",
        "}  # the first release\n",
        "        # pinned below by the command\n",
    ] {
        assert!(after.contains(kept), "{kept:?} lost:\n{after}");
    }
    // Three different binaries (each prints its own version), each pinned.
    let digests: Vec<&str> = said
        .lines()
        .filter_map(|l| l.trim().strip_prefix("sha256  (none) -> "))
        .map(|rest| rest.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(digests.len(), 3, "{said}");
    assert!(digests[0] != digests[1] && digests[1] != digests[2]);
    for d in &digests {
        assert!(after.contains(d), "{d} not written:\n{after}");
    }

    let check = labrun(tmp.path(), &proxy, &["check"]);
    assert!(
        check.status.success(),
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );

    // A second pin builds nothing new and changes nothing.
    let again = labrun(tmp.path(), &proxy, &["pin", "hello", "--series"]);
    assert!(again.status.success());
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("lab.yaml")).unwrap(),
        after
    );
}

/// One go build, pinned at another version by `labrun pin TOOL --version`:
/// the build block's version and module hash, the tool's version and the
/// binary's digest, comments kept.
#[test]
fn a_single_go_build_is_pinned_at_a_new_version() {
    let tmp = tempfile::tempdir().unwrap();
    let proxy = tmp.path().join("proxy");
    let sums: Vec<String> = VERSIONS.iter().map(|v| publish(&proxy, v)).collect();
    let toolchain = go_version();
    let before = format!(
        r#"name: pin-one
dataset: {{kind: synthetic, scale: 0.01}}
tools:
  - name: hello
    version: 1.0.0
    artifact:
      go:
        module: {MODULE}
        version: v1.0.0  # the release under test
        sum: {}
        toolchain: {toolchain}
      # the digest, written by labrun pin
      sha256: "{}"
    commands:
      init: ["{{bin}}", "{{repo}}"]
      backup: ["{{bin}}", "{{repo}}", "{{source}}"]
      restore: ["{{bin}}", "{{repo}}", "{{target}}"]
"#,
        sums[0],
        "0".repeat(64)
    );
    std::fs::write(tmp.path().join("lab.yaml"), &before).unwrap();
    let pin = labrun(tmp.path(), &proxy, &["pin", "hello", "--version", "1.2.0"]);
    assert!(
        pin.status.success(),
        "{}{}",
        String::from_utf8_lossy(&pin.stdout),
        String::from_utf8_lossy(&pin.stderr)
    );
    let after = std::fs::read_to_string(tmp.path().join("lab.yaml")).unwrap();
    assert!(
        after.contains("        version: v1.2.0 # the release under test\n"),
        "{after}"
    );
    assert!(
        after.contains(&format!("        sum: {}\n", sums[2])),
        "{after}"
    );
    assert!(after.contains("    version: 1.2.0\n"), "{after}");
    assert!(
        after.contains("      # the digest, written by labrun pin\n"),
        "{after}"
    );
    assert!(!after.contains(&"0".repeat(64)), "{after}");
    let check = labrun(tmp.path(), &proxy, &["check"]);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
}
