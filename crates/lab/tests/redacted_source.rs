//! `raw/lab.yaml` keeps no secret, however the lab file writes it.

use labrun_lab::Lab;

/// The shipped default lab with restic's password written `as_written`.
fn lab_with_password(as_written: &str) -> Lab {
    let shipped = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../lab.yaml"))
        .expect("the default lab");
    let text = shipped.replacen(
        "RESTIC_PASSWORD: lab-only-not-a-secret",
        &format!("RESTIC_PASSWORD: {as_written}"),
        1,
    );
    assert_ne!(
        text, shipped,
        "the default lab sets RESTIC_PASSWORD plainly"
    );
    Lab::from_text(&text, "lab.yaml").expect("a valid lab")
}

#[test]
fn secrets_written_with_yaml_escapes_do_not_reach_the_lab_as_run() {
    let cases = [
        // (as written in the file, the decoded secret)
        (
            r#""lab-only-\"quoted\"-secret""#,
            r#"lab-only-"quoted"-secret"#,
        ),
        (r#""\x6cab-only-hex-secret""#, "lab-only-hex-secret"),
        (
            "\"lab-only-\\\n      continued-secret\"",
            "lab-only-continued-secret",
        ),
        ("'lab-only-''single''-secret'", "lab-only-'single'-secret"),
        ("|-\n        lab-only-block-secret", "lab-only-block-secret"),
    ];
    for (written, decoded) in cases {
        let lab = lab_with_password(written);
        let restic = lab
            .tools
            .iter()
            .find(|t| t.name == "restic")
            .expect("restic");
        assert_eq!(restic.env["RESTIC_PASSWORD"], decoded, "{written}");
        let out = lab.redacted_source();
        assert!(!out.contains(decoded), "{written}: {out}");
        let first_line = written.lines().next().unwrap_or(written);
        assert!(
            !out.contains(first_line) || first_line.len() < 4,
            "{written} is still in the lab as run"
        );
        // What is kept is still the lab: it parses, with the password gone
        // and the other settings as they were.
        let again = Lab::from_text(&out, "raw/lab.yaml").expect("the lab as run parses");
        let restic = again
            .tools
            .iter()
            .find(|t| t.name == "restic")
            .expect("restic");
        assert_eq!(restic.env["RESTIC_PASSWORD"], "<redacted>");
        assert_eq!(again.tools.len(), lab.tools.len());
        assert_eq!(again.cycles, lab.cycles);
    }
}

#[test]
fn credentials_in_a_git_url_do_not_reach_the_lab_as_run() {
    let text = r#"name: gitcred
tools:
  - name: tool
    version: "1.0"
    artifact:
      source:
        git: {repo: "https://user:TOKEN@example.invalid/x.git", commit: "0123456789abcdef0123456789abcdef01234567"}
        build:
          go: {package: ./cmd/tool, toolchain: go1.26.8}
      sha256: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
    commands:
      init: ["{bin}", init, "{repo}"]
      backup: ["{bin}", backup, "{repo}", "{source}"]
      restore: ["{bin}", restore, "{repo}", "{target}"]
"#;
    let lab = Lab::from_text(text, "lab.yaml").expect("a valid lab");
    let out = lab.redacted_source();
    assert!(!out.contains("TOKEN"), "{out}");
    assert!(
        out.contains("https://<redacted>@example.invalid/x.git"),
        "{out}"
    );
    Lab::from_text(&out, "raw/lab.yaml").expect("the lab as run parses");
}
