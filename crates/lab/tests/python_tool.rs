//! A tool that is a Python package: valid on the suite it is built for,
//! refused (with the reason and what to do) on a guest of another suite, on
//! a suite whose python3 the release does not support, and with an
//! `install:` path its venv does not have.

use labrun_lab::Lab;

const LAB: &str = r#"name: py
vm:
  image: {debian: bookworm}
dataset:
  kind: synthetic
  seed: 7
  scale: 0.5
cycles: 3
tools:
  - name: attic
    version: "0.16"
    artifact:
      python:
        name: attic
        version: "0.16"
        sdist_sha256: 6650cd28072101c2e05941e77b93a62f91da6179785e4e4b4880916c469bba2c
        suite: bookworm
        python: ">=3.4,<3.12"
        entry_point: attic
      sha256: 1111111111111111111111111111111111111111111111111111111111111111
    env:
      ATTIC_PASSPHRASE: pw-not-secret
    secret_env: [ATTIC_PASSPHRASE]
    commands:
      init: ["{bin}", init, --encryption=passphrase, "{repo}"]
      backup: ["{bin}", create, "{repo}::{snapshot}", "{source}"]
      restore:
        argv: ["{bin}", extract, "{repo}::{snapshot}"]
        cwd: "{target}"
"#;

fn problems(text: &str) -> String {
    match Lab::from_text(text, "lab.yaml") {
        Ok(_) => String::new(),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_python_tool_on_its_suite_is_valid_and_runs_from_its_venv() {
    let lab = Lab::from_text(LAB, "lab.yaml").unwrap();
    assert_eq!(
        lab.tools[0].install_path(),
        "/opt/labrun/attic/venv/bin/attic"
    );
}

#[test]
fn a_guest_of_another_suite_is_refused() {
    let text = LAB.replace("image: {debian: bookworm}", "image: {debian: trixie}");
    let msg = problems(&text);
    assert!(
        msg.contains("tools[0].artifact.python.suite")
            && msg.contains("the lab's guest is Debian trixie"),
        "{msg}"
    );
}

#[test]
fn a_suite_whose_python_the_release_does_not_support_is_refused() {
    let text = LAB
        .replace("image: {debian: bookworm}", "image: {debian: sid}")
        .replace("suite: bookworm", "suite: sid");
    let msg = problems(&text);
    assert!(
        msg.contains("supports Python >=3.4,<3.12, but Debian sid's python3 is 3.14"),
        "{msg}"
    );
}

#[test]
fn an_install_path_is_refused() {
    let text = LAB.replace(
        "    env:\n",
        "    install: /usr/local/bin/attic\n    env:\n",
    );
    let msg = problems(&text);
    assert!(msg.contains("remove `install:`"), "{msg}");
}

#[test]
fn a_name_that_is_shell_is_refused_at_its_field() {
    let text = LAB.replace(
        "        name: attic\n",
        "        name: \"attic; rm -rf /\"\n",
    );
    let msg = problems(&text);
    assert!(msg.contains("artifact.python.name"), "{msg}");
}
