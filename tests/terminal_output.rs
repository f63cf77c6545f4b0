//! Text from a lab file or a guest reaches the terminal escaped: the real
//! `labrun` binary on a hostile lab (and hostile evidence) must print no
//! control character a terminal would obey (clear the screen, retitle the
//! window, return to the start of the line over a fake "lab is valid"), but
//! show each one visibly, e.g. `\x1b[2J`.
//!
//! Nothing here boots a VM or touches the network: `check` resolves
//! artifacts offline, `report` reads files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const LABRUN: &str = env!("CARGO_BIN_EXE_labrun");

/// A valid lab whose description, a tool's version, its digest source, an
/// env value, a command and the URL carry terminal sequences. YAML's double
/// quotes turn `\x1b`, `\x07`, `\r`, `\n` and `\u202e` into the characters.
const HOSTILE_LAB: &str = r#"name: hostile
description: "first line\x1b[2J\x1b]0;title\x07\n\r✓ lab is valid\u202e"
vm:
  vcpus: 1
  memory: 1GiB
  disk: 4GiB
dataset: {kind: synthetic, seed: 1, scale: 0.01}
cycles: 1
tools:
  - name: restic
    version: "0.14.0\x1b[2J\nok: lab.yaml is valid"
    artifact:
      url: "https://example.invalid/restic\x1b[31m.bz2"
      sha256: 9d7e8c210736f3f15ed7cf425ab56aa5259b07d8422b958494bfd4359b5024d1
      sha256_source: "the site\x1b]0;owned\x07"
      extract: bz2
    env:
      RESTIC_PASSWORD: "x\x1b[2J"
    commands:
      version: ["{bin}", "version\x1b[2J\r"]
      init: ["{bin}", init, -r, "{repo}"]
      backup: ["{bin}", backup, -r, "{repo}", "{source}"]
      restore: ["{bin}", restore, latest, -r, "{repo}", --target, "{target}"]
      snapshots: ["{bin}", snapshots, -r, "{repo}"]
"#;

/// `labrun` with its cache and state in `dir`, so nothing outside is read.
fn labrun(dir: &Path, args: &[&str]) -> Output {
    Command::new(LABRUN)
        .arg("--cache")
        .arg(dir.join("cache"))
        .arg("--state")
        .arg(dir.join("state"))
        .args(args)
        .env_remove("LABRUN_LAB")
        .env_remove("LABRUN_MIRROR")
        .output()
        .expect("run labrun")
}

/// The characters a terminal would obey: C0 but newline and tab, DEL, C1,
/// and the bidi embeddings, overrides and isolates.
fn obeyed(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn assert_safe(what: &str, bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes).into_owned();
    let raw: Vec<char> = text.chars().filter(|c| obeyed(*c)).collect();
    assert!(
        raw.is_empty(),
        "{what} has raw control characters {raw:?}:\n{}",
        text.escape_debug()
    );
    text
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write lab");
    path
}

#[test]
fn check_shows_a_hostile_lab_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let lab = write(dir.path(), "lab.yaml", HOSTILE_LAB);
    let out = labrun(dir.path(), &["-f", lab.to_str().unwrap(), "check"]);
    let stdout = assert_safe("stdout", &out.stdout);
    let stderr = assert_safe("stderr", &out.stderr);
    assert!(out.status.success(), "{stderr}");
    for shown in [
        r"first line\x1b[2J\x1b]0;title\x07",
        r"\r✓ lab is valid\u{202e}",
        r"0.14.0\x1b[2J\nok: lab.yaml is valid",
        r"from the site\x1b]0;owned\x07",
        r"https://example.invalid/restic\x1b[31m.bz2",
        r"RESTIC_PASSWORD=x\x1b[2J",
    ] {
        assert!(stdout.contains(shown), "no {shown} in:\n{stdout}");
    }
    // The version's newline did not make a line of its own: one verdict.
    let verdicts = stdout.lines().filter(|l| l.starts_with("ok: ")).count();
    assert_eq!(verdicts, 1, "{stdout}");
}

#[test]
fn check_errors_that_quote_the_lab_are_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let bad = HOSTILE_LAB.replace("cycles: 1\n", "\"cycl\\x1b[2J\\res\": 1\n");
    let lab = write(dir.path(), "bad.yaml", &bad);
    let out = labrun(dir.path(), &["-f", lab.to_str().unwrap(), "check"]);
    assert_safe("stdout", &out.stdout);
    let stderr = assert_safe("stderr", &out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(r"cycl\x1b[2J\res"), "{stderr}");
}

#[test]
fn the_final_error_chain_is_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run\x1b[2J\x1b]0;owned\x07");
    std::fs::create_dir(&run).unwrap();
    let out = labrun(dir.path(), &["report", run.to_str().unwrap()]);
    assert_safe("stdout", &out.stdout);
    let stderr = assert_safe("stderr", &out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(r"run\x1b[2J\x1b]0;owned\x07") && stderr.contains("labrun: error:"),
        "{stderr}"
    );
}

/// Replaces `from` by `to` in `raw/name`, which must contain it.
fn tamper(raw: &Path, name: &str, from: &str, to: &str) {
    let path = raw.join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{name} has no {from}");
    std::fs::write(&path, text.replace(from, to)).unwrap();
}

#[test]
fn report_shows_hostile_evidence_escaped_and_keeps_it_raw() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/report/tests/fixtures/two-tools/raw");
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let raw = run.join("raw");
    std::fs::create_dir_all(&raw).unwrap();
    for f in std::fs::read_dir(&fixture).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), raw.join(f.file_name())).unwrap();
    }
    // JSON escapes: the files hold the control characters themselves.
    tamper(
        &raw,
        "plan.json",
        "\"version\": \"0.19.1\"",
        r#""version": "0.19.1\u001b]0;owned\u0007\r\u202e""#,
    );
    tamper(
        &raw,
        "environment.json",
        "\"6.1.0-27-amd64\"",
        r#""6.1.0-27\u001b[2J""#,
    );
    tamper(
        &raw,
        "records.jsonl",
        "1 changed (first: ",
        r"1 changed\u001b[2J (first: ",
    );
    let out = labrun(dir.path(), &["report", run.to_str().unwrap()]);
    let stdout = assert_safe("stdout", &out.stdout);
    let stderr = assert_safe("stderr", &out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains(r"restic 0.19.1\x1b]0;owned\x07\r\u{202e}"),
        "{stdout}"
    );

    let md = std::fs::read(run.join("summary.md")).unwrap();
    let md = assert_safe("summary.md", &md);
    // (A table cell is one line: its `\r` became a space.)
    for shown in [
        r"0.19.1\x1b]0;owned\x07 \u{202e}",
        r"kernel 6.1.0-27\x1b[2J",
        r"1 changed\x1b[2J (first: ",
    ] {
        assert!(md.contains(shown), "no {shown} in summary.md:\n{md}");
    }
    // The evidence keeps the bytes as they were.
    let env = std::fs::read_to_string(raw.join("environment.json")).unwrap();
    assert!(env.contains(r"6.1.0-27\u001b[2J"), "{env}");
}
