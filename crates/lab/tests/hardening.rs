//! Issue 33, the second hostile test: what `check` accepted and the run
//! then refused, misused or leaked. Each case is refused by `check` with
//! the field, the value and why.

use labrun_lab::Lab;

const BASE: &str = r#"name: mini
vm:
  vcpus: 4
  memory: 3GiB
dataset:
  kind: synthetic
  seed: 7
  scale: 0.5
cycles: 3
tools:
  - name: restic
    version: 0.19.1
    artifact:
      url: https://example.invalid/restic_0.19.1_linux_amd64.bz2
      sha256: f415415624dcc452f2a02b8c33641791a8c6d6d3b65bbb3543fcf9a25151585c
      extract: bz2
    env:
      RESTIC_PASSWORD: pw-not-secret
    secret_env: [RESTIC_PASSWORD]
    commands:
      init: ["{bin}", init, -r, "{repo}"]
      backup: ["{bin}", backup, -r, "{repo}", "{source}"]
      restore: ["{bin}", restore, "{snapshot}", -r, "{repo}", --target, "{target}"]
"#;

const HOST_KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDYCZFgOBmVSFzHX7jn1QRTq3YwwYgdCKmVASoHTtMtL";

fn lab(extra: &str) -> Result<Lab, String> {
    Lab::from_text(&format!("{BASE}{extra}"), "lab.yaml").map_err(|e| e.to_string())
}

/// A pool of this host and `rack2`, its URI and its SSH `workdir` as given.
fn pool(uri: &str, ssh_host: &str, workdir: &str) -> String {
    format!(
        "hosts:\n  - name: here\n  - name: rack2\n    uri: {uri}\n    ssh: {{host: {ssh_host}, user: bench, key: /root/.ssh/bench, host_key: {HOST_KEY}, workdir: {workdir}}}\n"
    )
}

fn refused(extra: &str, says: &[&str]) {
    let err = lab(extra).expect_err(extra);
    for s in says {
        assert!(err.contains(s), "{extra}\n--- expected {s:?} in:\n{err}");
    }
}

// Item 1: a pool host's libvirt URI runs nothing, switches no verification
// off, and names the machine `ssh:` pins.

#[test]
fn pool_uris_labrun_supports_are_accepted() {
    for uri in [
        "\"qemu+libssh://bench@10.0.0.2/session?keyfile=/root/.ssh/bench&known_hosts=/root/.ssh/rack2_known_hosts&sshauth=privkey\"",
        "qemu+libssh://bench@10.0.0.2/system",
        "qemu+ssh://bench@10.0.0.2/system",
        "\"qemu+ssh://bench@10.0.0.2/system?keyfile=/root/.ssh/bench\"",
        "\"qemu+libssh://bench@10.0.0.2/system?known_hosts_verify=normal\"",
    ] {
        lab(&pool(uri, "10.0.0.2", "/var/tmp/labrun")).expect(uri);
    }
    lab(&pool(
        "\"qemu+libssh://bench@[fd00::2]:2222/session\"",
        "fd00::2, port: 2222",
        "/var/tmp/labrun",
    ))
    .expect("an IPv6 address with a port");
}

#[test]
fn pool_uris_that_run_programs_or_skip_verification_are_refused() {
    let at_10 = |uri: &str| pool(uri, "10.0.0.2", "/var/tmp/labrun");
    let cases: &[(&str, &[&str])] = &[
        (
            "\"qemu+ext:///system?command=/tmp/prog\"",
            &["hosts[1].uri", "`qemu+ext`", "runs a program"],
        ),
        (
            "\"qemu+libssh://bench@10.0.0.2/system?no_verify=1\"",
            &["hosts[1].uri", "`no_verify`"],
        ),
        (
            "\"qemu+libssh://bench@10.0.0.2/system?known_hosts_verify=ignore\"",
            &["`known_hosts_verify=ignore`", "normal"],
        ),
        (
            "\"qemu+ssh://bench@10.0.0.2/system?netcat=/tmp/nc\"",
            &["`netcat`"],
        ),
        (
            "\"qemu+libssh://bench@10.0.0.2/system?socket=/tmp/s\"",
            &["`socket`"],
        ),
        (
            "\"qemu+ssh://bench@10.0.0.2/system?no%5Fverify=1\"",
            &["`%`"],
        ),
        (
            "\"qemu+ssh://bench@10.0.0.2/system?keyfile=k;no_verify=1\"",
            &["`;`"],
        ),
        (
            "qemu+tcp://10.0.0.2/system",
            &["`qemu+tcp`", "not encrypted"],
        ),
        ("xen+ssh://bench@10.0.0.2/system", &["`xen+ssh`", "QEMU"]),
        ("\"--help\"", &["hosts[1].uri", "`--help`"]),
        (
            "\"-qemu+ssh://bench@10.0.0.2/system\"",
            &["starts with `-`"],
        ),
        (
            "\"qemu+ssh://bench@10.0.0.2/system\\nqemu+ext:///system\"",
            &["control character"],
        ),
        (
            "qemu+libssh://bench@10.0.0.9/system",
            &["hosts[1].uri", "`10.0.0.9`", "`10.0.0.2`", "same machine"],
        ),
        (
            "qemu+libssh://bench@10.0.0.2:2222/system",
            &["port 2222", "port 22"],
        ),
        ("qemu+libssh:///system", &["names no host"]),
        (
            "qemu+libssh://bench@10.0.0.2/",
            &["`/system` or `/session`"],
        ),
    ];
    for (uri, says) in cases {
        refused(&at_10(uri), says);
    }
}

#[test]
fn a_pool_host_workdir_of_the_root_or_with_dotdot_is_refused() {
    let uri = "qemu+libssh://bench@10.0.0.2/system";
    refused(
        &pool(uri, "10.0.0.2", "/"),
        &["hosts[1].ssh.workdir", "`/`"],
    );
    refused(
        &pool(uri, "10.0.0.2", "/var/tmp/../../etc"),
        &["hosts[1].ssh.workdir", "`..`"],
    );
}

#[test]
fn the_vm_uri_takes_the_same_transports() {
    let err = Lab::from_text(
        &BASE.replace(
            "  vcpus: 4\n",
            "  vcpus: 4\n  uri: \"qemu+ext:///system?command=/tmp/prog\"\n",
        ),
        "lab.yaml",
    )
    .map(|_| ())
    .expect_err("qemu+ext as vm.uri")
    .to_string();
    assert!(
        err.contains("vm.uri") && err.contains("`qemu+ext`"),
        "{err}"
    );
}

// Item 2: one variant's secret is in no copy of the lab.

#[test]
fn no_variant_keeps_another_variants_secret() {
    let l = lab(r#"variants:
  - {name: a, tools: {restic: {env: {RESTIC_PASSWORD: hunter2-only-in-a}}}}
  - {name: b}
"#)
    .unwrap();
    assert!(!l.redacted_source().contains("hunter2-only-in-a"));
    for v in l.variants().unwrap() {
        let text = v.lab.redacted_source();
        assert!(
            !text.contains("hunter2-only-in-a") && !text.contains("pw-not-secret"),
            "variant {}: {text}",
            v.record.name
        );
        Lab::from_text(&text, "raw/lab.yaml").expect("the lab as run parses");
    }
    // The same through a matrix axis.
    let l = lab(r#"matrix:
  pw:
    - {name: a, tools: {restic: {env: {RESTIC_PASSWORD: "hunter3-\x41"}}}}
    - {name: b}
"#)
    .unwrap();
    for v in l.variants().unwrap() {
        let text = v.lab.redacted_source();
        assert!(
            !text.contains("hunter3"),
            "variant {}: {text}",
            v.record.name
        );
    }
}

// Item 4: snapshot labels follow a rule like step names.

#[test]
fn snapshot_labels_with_shell_characters_or_dotdot_are_refused() {
    for label in [
        "\"s;touch X\"",
        "\"..\"",
        "\"../s1\"",
        "\"s 1\"",
        "\"$(id)\"",
        "S1",
    ] {
        let extra = format!(
            "protocol:\n  - source\n  - {{run: init}}\n  - {{run: backup, makes: {label}}}\n  - {{run: restore, restores: {label}}}\n  - verify\n"
        );
        refused(&extra, &["protocol[2]", "snapshot label"]);
    }
    lab("protocol:\n  - source\n  - {run: init}\n  - {run: backup, makes: s1_full}\n  - {run: restore, restores: s1_full}\n  - verify\n")
        .expect("a plain label");
}

// Item 9: expansion is counted before it is made.

#[test]
fn a_matrix_too_large_to_run_is_refused_before_it_is_expanded() {
    let mut extra = String::from("matrix:\n");
    for a in 0..10 {
        extra.push_str(&format!("  a{a}:\n"));
        for v in 0..10 {
            extra.push_str(&format!("    - {{name: v{v}}}\n"));
        }
    }
    let started = std::time::Instant::now();
    refused(&extra, &["matrix", "10000000000 variants", "at most 256"]);
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    // 2^64 and beyond is counted without overflow.
    let mut extra = String::from("matrix:\n");
    for a in 0..70 {
        extra.push_str(&format!("  a{a}: [{{name: x}}, {{name: y}}]\n"));
    }
    refused(&extra, &["matrix", "more than"]);
}

#[test]
fn too_many_listed_variants_are_refused() {
    let mut extra = String::from("variants:\n");
    for v in 0..300 {
        extra.push_str(&format!("  - {{name: v{v}}}\n"));
    }
    refused(&extra, &["variants", "300 variants", "at most 256"]);
}

// Item 13: a kill point the agent cannot wait for.

#[test]
fn a_kill_after_beyond_any_step_is_refused() {
    for secs in ["18446744073709551615", "1e300", "604801"] {
        let extra = format!(
            "protocol:\n  - source\n  - {{run: init}}\n  - {{run: backup, makes: s1, kill_after_secs: {secs}}}\n  - {{run: restore, restores: s1}}\n  - verify\n"
        );
        refused(&extra, &["kill_after_secs", "at most 604800"]);
    }
}

// Item 14: a matrix's joined name must fit the variant's run id.

#[test]
fn a_matrix_name_too_long_for_a_run_id_is_refused() {
    let long = "x".repeat(39);
    let extra = format!("matrix:\n  a: [{{name: {long}a}}]\n  b: [{{name: {long}b}}]\n");
    refused(&extra, &["matrix", "81 characters", "at most 64"]);
}

// Item 14: a build's module, version and binary are refused by `check`
// (before, `fetch` blamed the proxy, or the binary was named `..`).

/// A second tool built from `artifact` (the block's lines below `artifact:`).
fn built_tool(artifact: &str) -> String {
    format!(
        "  - name: built\n    version: 1.0.0\n    artifact:\n{artifact}      sha256: {}\n    commands:\n      init: [\"{{bin}}\", init, -r, \"{{repo}}\"]\n      backup: [\"{{bin}}\", backup, -r, \"{{repo}}\", \"{{source}}\"]\n      restore: [\"{{bin}}\", restore, \"{{snapshot}}\", -r, \"{{repo}}\", --target, \"{{target}}\"]\n",
        "ab".repeat(32)
    )
}

fn go_tool(module: &str, version: &str) -> String {
    built_tool(&format!(
        "      go:\n        module: {module}\n        version: {version}\n        sum: h1:LQKkar5/gYxay1OCokAWPBNiLr1lTpt4fhdM4GWqSlY=\n        package: .\n        toolchain: go1.26.8\n"
    ))
}

fn crate_tool(binary: &str) -> String {
    built_tool(&format!(
        "      crate:\n        name: rustic-rs\n        version: 0.11.4\n        binary: \"{binary}\"\n        toolchain: 1.95.0\n"
    ))
}

#[test]
fn go_modules_and_versions_the_go_command_would_refuse_are_refused() {
    lab(&go_tool("github.com/restic/restic", "v0.19.1")).expect("a module and a tag");
    lab(&go_tool(
        "example.com/tool/v3",
        "v3.0.0-20241219135422-065ae5086857",
    ))
    .expect("a major-version module and a pseudo-version");
    lab(&go_tool("github.com/a/b", "v2.0.0+incompatible")).expect("+incompatible");
    for module in [
        "example.com/../../etc",
        "example.com/./x",
        "example.com//x",
        "example.com/x/",
        "localhost/x",
        "Example.com/x",
        "example.com/.hidden",
    ] {
        refused(
            &go_tool(module, "v1.0.0"),
            &["artifact.go.module", module, "module path"],
        );
    }
    for version in [
        "vmaster",
        "v1",
        "v1.2",
        "v01.2.3",
        "v1.2.3-",
        "v1.2.3-a..b",
        "latest",
    ] {
        refused(
            &go_tool("example.com/x", version),
            &["artifact.go.version", version, "semantic version"],
        );
    }
}

#[test]
fn a_built_binary_named_dot_or_dotdot_is_refused() {
    lab(&crate_tool("rustic")).expect("a plain name");
    for binary in ["..", "."] {
        refused(
            &crate_tool(binary),
            &["artifact.crate.binary", "file name", "`.` or `..`"],
        );
    }
    let go_binary = built_tool(
        "      go:\n        module: example.com/x\n        version: v1.0.0\n        sum: h1:LQKkar5/gYxay1OCokAWPBNiLr1lTpt4fhdM4GWqSlY=\n        toolchain: go1.26.8\n        binary: \"..\"\n",
    );
    refused(&go_binary, &["artifact.go.binary", "`.` or `..`"]);
}
