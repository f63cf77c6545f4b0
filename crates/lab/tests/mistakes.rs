//! Each kind of mistake in a lab file gets a message that says where (file,
//! line, column, field path), what was expected, and the nearest valid
//! spelling. The messages are snapshots in `tests/snapshots/<case>.txt`;
//! after a deliberate change of wording, re-run with `UPDATE_SNAPSHOTS=1`
//! and review the diff.

use labrun_lab::Lab;
use std::path::Path;

const BASE: &str = r#"name: mini
vm:
  vcpus: 4
  memory: 3GiB
  accel: auto
  ssh_timeout: 300s
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
      restore: ["{bin}", restore, latest, -r, "{repo}", --target, "{target}"]
  - name: borg
    version: 1.2.4
    artifact:
      apt: {package: borgbackup, version: 1.2.4-1}
      sha256: 4bd4d7962a6cbc12c48e1c35495686da1c45f683782bb4e36f7873bcedc06032
      extract:
        deb-install: /usr/bin/borg
    env:
      BORG_PASSPHRASE: pw-not-secret
    secret_env: [BORG_PASSPHRASE]
    commands:
      init: ["{bin}", init, --encryption=repokey-blake2, "{repo}"]
      backup: ["{bin}", create, "{repo}::{snapshot}", "{source}"]
      restore:
        argv: ["{bin}", extract, "{repo}::{snapshot}"]
        cwd: "{target}"
"#;

/// (case name, text to replace in BASE, replacement)
const CASES: &[(&str, &str, &str)] = &[
    (
        "protocol_unknown_step",
        "cycles: 3\n",
        "cycles: 3\nprotocol: [source, {run: init}, prune]\n",
    ),
    (
        "protocol_command_missing",
        "cycles: 3\n",
        "cycles: 3\nprotocol:\n  - source\n  - {run: init}\n  - {run: backup, name: backup_full, makes: s1}\n  - {run: restore, restores: s1}\n  - verify\n  - {run: check}\n",
    ),
    (
        "protocol_verify_first",
        "cycles: 3\n",
        "cycles: 3\nprotocol: [source, verify, {run: init}, {run: restore, restores: s9}]\n",
    ),
    (
        "command_key_typo",
        "      backup: [\"{bin}\", backup, -r",
        "      bakup: [\"{bin}\", backup, -r",
    ),
    (
        "history_two_sources",
        "  kind: synthetic\n  seed: 7\n  scale: 0.5",
        "  kind: git-history\n  generate: {seed: 1, commits: 3, files: 10}\n  repository: /var/tmp/r.bundle\n  commits: [v1]",
    ),
    (
        "history_repository_without_commits",
        "  kind: synthetic\n  seed: 7\n  scale: 0.5",
        "  kind: git-history\n  repository: linux.bundle",
    ),
    (
        "history_generator_out_of_range",
        "  kind: synthetic\n  seed: 7\n  scale: 0.5",
        "  kind: git-history\n  generate: {seed: 1, commits: 0, files: 10}",
    ),
    (
        "history_generator_typo",
        "  kind: synthetic\n  seed: 7\n  scale: 0.5",
        "  kind: git-history\n  generate: {seed: 1, comits: 3, files: 10}",
    ),
    // A history lab's own protocol: a block that starts at the wrong
    // commit, and a restore of snapshots it never made, each at its step.
    (
        "history_protocol_block_mistakes",
        "  kind: synthetic\n  seed: 7\n  scale: 0.5\ncycles: 3\n",
        "  kind: git-history\n  generate: {seed: 1, commits: 3, files: 10}\ncycles: 3\nprotocol:\n  - {run: init}\n  - commit\n  - {run: backup, makes: s1}\n  - each_commit:\n      - commit\n      - {run: backup, name: backup_next, makes: \"s{k}\"}\n  - each_commit:\n      - {run: restore, restores: \"t{k}\"}\n      - verify\n",
    ),
    (
        "history_list_and_every",
        "  kind: synthetic\n  seed: 7\n  scale: 0.5",
        "  kind: git-history\n  repository: /r\n  commits: [a]\n  every: {commits: 10, from: a, to: b}",
    ),
    (
        "history_every_zero",
        "  kind: synthetic\n  seed: 7\n  scale: 0.5",
        "  kind: git-history\n  repository: /r\n  every: {commits: 0, from: a, to: b}",
    ),
    ("typo_top_level_key", "cycles: 3", "cycels: 3"),
    (
        "typo_nested_key",
        "      sha256: 4bd4",
        "      sha265: 4bd4",
    ),
    ("typo_key_in_dataset", "  scale: 0.5", "  scael: 0.5"),
    ("unknown_dataset_kind", "kind: synthetic", "kind: synthetik"),
    ("unknown_accel", "accel: auto", "accel: kvn"),
    ("missing_field", "    version: 1.2.4\n", ""),
    ("duplicate_key", "cycles: 3", "cycles: 3\ncycles: 4"),
    ("size_unit", "memory: 3GiB", "memory: 3Gib"),
    (
        "duration_without_unit",
        "ssh_timeout: 300s",
        "ssh_timeout: 300",
    ),
    ("wrong_type", "cycles: 3", "cycles: three"),
    ("negative_number", "seed: 7", "seed: -7"),
    (
        "yaml_syntax",
        "secret_env: [RESTIC_PASSWORD]",
        "secret_env: [RESTIC_PASSWORD",
    ),
    (
        "command_as_string",
        r#"init: ["{bin}", init, -r, "{repo}"]"#,
        r#"init: "{bin} init -r {repo}""#,
    ),
    (
        "unquoted_placeholder",
        r#"init: ["{bin}", init, --encryption"#,
        r#"init: [{bin}, init, --encryption"#,
    ),
    ("short_sha256", "bb3543fcf9a25151585c", "bb3543fcf9a2515158"),
    ("uppercase_sha256", "f415415624dcc452", "F415415624DCC452"),
    (
        "unknown_placeholder",
        r#""{repo}", "{source}"]"#,
        r#""{reop}", "{source}"]"#,
    ),
    (
        "secret_not_in_env",
        "secret_env: [BORG_PASSPHRASE]",
        "secret_env: [BORG_PASSPRASE]",
    ),
    (
        "secret_on_command_line",
        r#"create, "{repo}::{snapshot}""#,
        r#"create, --pass=pw-not-secret, "{repo}::{snapshot}""#,
    ),
    (
        "url_scheme",
        "url: https://example.invalid",
        "url: ftp://example.invalid",
    ),
    (
        "two_sources",
        "      apt: {package",
        "      url: https://example.invalid/borg.deb\n      apt: {package",
    ),
    // A block with no source, and a rule of one source's own field: each
    // at its line, with the field's path.
    (
        "no_source",
        "      url: https://example.invalid/restic_0.19.1_linux_amd64.bz2\n",
        "",
    ),
    (
        "apt_package_name",
        "apt: {package: borgbackup",
        "apt: {package: BorgBackup",
    ),
    (
        "extract_mismatch",
        "      extract: bz2",
        "      extract: raw",
    ),
    ("duplicate_tool_name", "  - name: borg", "  - name: restic"),
    (
        "snapshot_id_pattern_mistakes",
        "    secret_env: [RESTIC_PASSWORD]\n",
        "    secret_env: [RESTIC_PASSWORD]\n    snapshot_id_pattern: 'snapshot [0-9a-f]+ saved'\n",
    ),
    (
        "snapshot_id_pattern_beside_a_command",
        "    secret_env: [BORG_PASSPHRASE]\n    commands:\n",
        "    secret_env: [BORG_PASSPHRASE]\n    snapshot_id_pattern: 'Archive name: (\\S+)'\n    commands:\n      snapshot_id: [\"{bin}\", list, --last, \"1\", \"{repo}\"]\n",
    ),
    ("scale_out_of_range", "scale: 0.5", "scale: 250"),
    // Serde's words (`use Option<String>`, `internally tagged enum
    // DatasetSpec`, `enum variant value`) never reach the user.
    ("empty_version", "    version: 0.19.1", "    version:"),
    (
        "empty_dataset",
        "dataset:\n  kind: synthetic\n  seed: 7\n  scale: 0.5\n",
        "dataset:\n",
    ),
    (
        "extract_with_two_choices",
        "      extract:\n        deb-install: /usr/bin/borg",
        "      extract:\n        deb-install: /usr/bin/borg\n        tar: borg",
    ),
    // `up` makes a libvirt domain and run ids of the name: `check` refuses
    // what `up` would.
    ("lab_name_up_would_refuse", "name: mini", "name: Bench.A"),
    // A value with a line break, quoted by its error, stays on the error's
    // line: no fake "ok" line after it.
    (
        "a_quoted_line_break_stays_on_its_line",
        "name: mini",
        "name: \"mini\\nok: lab is valid\"",
    ),
    // The agent's own range: `check` refuses what the guest would.
    (
        "scale_below_the_agents_range",
        "scale: 0.5",
        "scale: 1e-300",
    ),
    (
        "memory_beyond_any_machine",
        "memory: 3GiB",
        "memory: 18446744073709551615",
    ),
    // An ed25519 key labelled ssh-rsa: the connection's parser refuses it,
    // so `check` does too.
    (
        "host_key_type_does_not_match_its_key",
        "vm:\n  vcpus: 4\n  memory: 3GiB\n  accel: auto\n  ssh_timeout: 300s\n",
        "target:\n  host: 127.0.0.1\n  port: 2222\n  user: lab\n  key: id_ed25519\n  host_key: ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIDYCZFgOBmVSFzHX7jn1QRTq3YwwYgdCKmVASoHTtMtL\n",
    ),
    ("zero_cycles_and_no_tools", "cycles: 3", "cycles: 0"),
    ("restore_without_target", r#", --target, "{target}"]"#, "]"),
    (
        "cloud_image_with_packages",
        "  ssh_timeout: 300s",
        "  ssh_timeout: 300s\n  packages: [python3-msgpack]\n  image:\n    cloud:\n      url: https://example.invalid/debian-12-genericcloud-amd64.qcow2\n      sha256: f415415624dcc452f2a02b8c33641791a8c6d6d3b65bbb3543fcf9a25151585c",
    ),
    (
        "vm_and_target",
        "dataset:",
        "target:\n  host: 127.0.0.1\n  port: 2222\n  user: lab\n  key: id_ed25519\n  host_key: \"[127.0.0.1]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA\"\ndataset:",
    ),
    (
        "hosts_remote_without_ssh_and_a_twice_used_name",
        "dataset:",
        "hosts:\n  - name: here\n  - name: rack2\n    uri: qemu+libssh://bench@10.0.0.2/system\n  - name: here\n    uri: qemu:///system\n    ssh:\n      host: 10.0.0.3\n      user: bench\n      key: id_ed25519\n      host_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDYCZFgOBmVSFzHX7jn1QRTq3YwwYgdCKmVASoHTtMtL\ndataset:",
    ),
    (
        "hosts_ssh_with_a_bad_host_key",
        "dataset:",
        "hosts:\n  - name: rack2\n    uri: qemu+libssh://bench@10.0.0.2/system\n    ssh:\n      host: 10.0.0.2\n      user: bench\n      key: id_ed25519\n      host_key: ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIDYCZFgOBmVSFzHX7jn1QRTq3YwwYgdCKmVASoHTtMtL\n      workdir: relative/dir\ndataset:",
    ),
    (
        "disk_profile_unknown",
        "  accel: auto",
        "  accel: auto\n  disk_profile: nvme",
    ),
    (
        "disk_profile_iotune_typo",
        "  accel: auto",
        "  accel: auto\n  disk_profile: {total_bytes: 100000000}",
    ),
    (
        "disk_profile_zero_and_total_beside_read",
        "  accel: auto",
        "  accel: auto\n  disk_profile: {total_bytes_sec: 100000000, read_bytes_sec: 50000000, write_iops_sec: 0}",
    ),
    (
        "cpu_pinning_unknown_word",
        "  accel: auto",
        "  accel: auto\n  cpu_pinning: all",
    ),
    (
        "cpu_pinning_fewer_cpus_than_vcpus_and_one_twice",
        "  accel: auto",
        "  accel: auto\n  cpu_pinning: [2, 3, 3]",
    ),
    (
        "cpu_pinning_emulator_on_a_vcpu",
        "  accel: auto",
        "  accel: auto\n  cpu_pinning: {vcpus: [0, 1, 2, 3], emulator: 3}",
    ),
    (
        "cpu_pinning_map_typo",
        "  accel: auto",
        "  accel: auto\n  cpu_pinning: {vcpus: [0, 1, 2, 3], emulater: 4}",
    ),
    (
        "cooldown_too_long",
        "cycles: 3\n",
        "cycles: 3\ncooldown: 2h\n",
    ),
    (
        "several_problems_at_once",
        "cycles: 3",
        "cycles: 0\ntimeouts: {step: 0s}",
    ),
    (
        "noise_floor_unknown_tool",
        "cycles: 3\n",
        "cycles: 3\nnoise_floor: {tool: restik}\n",
    ),
    (
        "noise_floor_unknown_key",
        "cycles: 3\n",
        "cycles: 3\nnoise_floor: {tool: restic, name: again}\n",
    ),
];

fn render(case: &str, text: &str) -> String {
    // the "no tools" half of its case
    let text = if case == "zero_cycles_and_no_tools" {
        text.split("tools:").next().unwrap().to_string() + "tools: []\n"
    } else {
        text.to_string()
    };
    match Lab::from_text(&text, "lab.yaml") {
        Ok(_) => panic!("{case}: the mutated lab was accepted"),
        Err(e) => format!("{e}\n"),
    }
}

#[test]
fn the_base_lab_is_valid() {
    Lab::from_text(BASE, "lab.yaml").unwrap();
}

#[test]
fn each_mistake_has_its_message() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
    let update = std::env::var_os("UPDATE_SNAPSHOTS").is_some();
    let mut failures = Vec::new();
    for (case, from, to) in CASES {
        assert!(
            BASE.contains(from),
            "{case}: `{from}` is not in the base lab"
        );
        let got = render(case, &BASE.replacen(from, to, 1));
        let file = dir.join(format!("{case}.txt"));
        if update {
            std::fs::write(&file, &got).unwrap();
            continue;
        }
        match std::fs::read_to_string(&file) {
            Ok(want) if want == got => {}
            Ok(want) => failures.push(format!("{case}:\n--- want\n{want}--- got\n{got}")),
            Err(_) => failures.push(format!(
                "{case}: no snapshot {}; got:\n{got}",
                file.display()
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
