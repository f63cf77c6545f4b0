//! `storage:`, `servers:` and the tools' `repository:` forms: what reaches
//! the plan, what a variant leaves out, and every mistake said where it is.

use labrun_evidence::Server;
use labrun_lab::{Lab, PlanOverrides};

const BASE: &str = r#"name: net
dataset: {kind: synthetic, seed: 1, scale: 0.01}
servers:
  rest:
    version: 0.14.0
    artifact:
      go: {module: github.com/restic/rest-server, version: v0.14.0, sum: "h1:II5myUaSHEc5133fkM4BL5zINJIV8vaPRwTair/hr4Q=", package: ./cmd/rest-server, toolchain: go1.26.8}
      sha256: acaa436bc56d6a497631ddcc383a48af2348ae1419751f0b55eaf7a7b4238081
tools:
  - name: restic
    version: 0.19.1
    artifact:
      url: https://example.invalid/restic_0.19.1_linux_amd64.bz2
      sha256: f415415624dcc452f2a02b8c33641791a8c6d6d3b65bbb3543fcf9a25151585c
      extract: bz2
    env: {RESTIC_PASSWORD: pw-not-secret}
    secret_env: [RESTIC_PASSWORD]
    repository:
      sftp:
        repo: "sftp:{repo_user}@{repo_host}:{repo_path}"
        args: {init: [-o, "sftp.command=ssh -F {ssh_config} {repo_host} -s sftp"]}
      rest: {repo: "rest:{repo_url}"}
    commands:
      init: ["{bin}", init, -r, "{repo}"]
      backup: ["{bin}", backup, -r, "{repo}", "{source}"]
      restore: ["{bin}", restore, latest, -r, "{repo}", --target, "{target}"]
  - name: borg
    version: 1.4.5
    artifact:
      url: https://example.invalid/borg-linux64
      sha256: 0ab1db7d2c6a0a0dd2a2a9e0b3e8a0a1f2a6b3c4d5e6f708192a3b4c5d6e7f80
    env: {BORG_PASSPHRASE: pw-not-secret}
    secret_env: [BORG_PASSPHRASE]
    repository:
      sftp:
        repo: "ssh://{repo_user}@{repo_host}{repo_path}"
        env: {BORG_RSH: "ssh -F {ssh_config}"}
    commands:
      init: ["{bin}", init, --encryption=repokey-blake2, "{repo}"]
      backup: ["{bin}", create, "{repo}::{snapshot}", "{source}"]
      restore: {argv: ["{bin}", extract, "{repo}::{snapshot}"], cwd: "{target}"}
"#;

fn lab(extra: &str) -> Result<Lab, String> {
    Lab::from_text(&format!("{BASE}{extra}"), "lab.yaml").map_err(|e| e.to_string())
}

#[test]
fn a_lab_on_its_own_disk_plans_no_storage() {
    let plan = lab("")
        .unwrap()
        .to_plan("r", &PlanOverrides::default())
        .unwrap();
    assert_eq!(plan.storage, None);
    assert!(plan.tools.iter().all(|t| t.repo.is_none()));
    assert_eq!(
        plan.tools[0].commands["init"].argv,
        ["{bin}", "init", "-r", "{repo}"]
    );
}

#[test]
fn a_server_reaches_the_plan_with_each_tool_s_form() {
    let l = lab("storage: {server: sftp, network: {latency: 25ms, bandwidth: 100Mbit}}\n").unwrap();
    let plan = l.to_plan("r", &PlanOverrides::default()).unwrap();
    let st = plan.storage.unwrap();
    assert_eq!(st.server, Server::Sftp);
    let net = st.network.unwrap();
    assert_eq!(
        (net.rtt_ms, net.rate_bits_per_sec),
        (25.0, Some(100_000_000))
    );
    // The rest-server binary goes with every plan that pins it: a variant
    // sharing the machine may use it.
    assert_eq!(st.binary, None, "sftp runs the machine's own sshd");
    let restic = &plan.tools[0];
    assert_eq!(
        restic.repo.as_deref(),
        Some("sftp:{repo_user}@{repo_host}:{repo_path}")
    );
    assert_eq!(
        restic.commands["init"].argv,
        [
            "{bin}",
            "init",
            "-r",
            "{repo}",
            "-o",
            "sftp.command=ssh -F {ssh_config} {repo_host} -s sftp"
        ]
    );
    // Only the command the form names gains the option.
    assert_eq!(restic.commands["backup"].argv.len(), 5);
    let borg = &plan.tools[1];
    assert_eq!(borg.env["BORG_RSH"], "ssh -F {ssh_config}");
    assert_eq!(borg.env["BORG_PASSPHRASE"], "pw-not-secret");
}

#[test]
fn the_rest_server_is_installed_and_planned_with_its_pin() {
    let l = lab("storage: {server: rest}\ntools_left_out: x\n");
    assert!(
        l.unwrap_err().contains("tools_left_out"),
        "unknown keys are refused"
    );
    let only_restic = BASE.replace("  - name: borg", "  - name: borg\n    x: y");
    assert!(Lab::from_text(&only_restic, "lab.yaml").is_err());

    let l =
        lab("variants:\n  - name: rest\n    storage: {server: rest}\n  - name: local\n").unwrap();
    let installs: Vec<String> = l
        .installs(None)
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(installs, ["restic", "borg", "rest-server"]);
    let v = l.variants().unwrap();
    let rest = &v[0];
    assert_eq!(rest.record.name, "rest");
    let tools: Vec<&str> = rest.lab.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["restic"], "borg has no form for a rest-server");
    let change = rest
        .record
        .changes
        .iter()
        .find(|c| c.field == "tools")
        .unwrap();
    assert_eq!(change.from, "restic, borg");
    assert!(
        change
            .to
            .starts_with("restic (borg cannot name a repository on rest"),
        "{}",
        change.to
    );
    let plan = rest.lab.to_plan("r", &PlanOverrides::default()).unwrap();
    let st = plan.storage.unwrap();
    assert_eq!(st.binary.as_deref(), Some("/usr/local/bin/rest-server"));
    // As for a tool: a build's digest (its `sha256`) is checked where `up`
    // installs it; the agent checks a pinned `binary_sha256` (none here).
    assert_eq!(st.binary_sha256, None);
    assert_eq!(st.version.as_deref(), Some("0.14.0"));
    assert_eq!(plan.tools[0].repo.as_deref(), Some("rest:{repo_url}"));
    // The local variant keeps both tools and changes nothing.
    assert_eq!(v[1].lab.tools.len(), 2);
    assert!(v[1].record.changes.is_empty());
}

#[test]
fn mistakes_are_said_where_they_are() {
    let cases: &[(&str, &str)] = &[
        (
            "storage: {network: {latency: 25ms}}\n",
            "a network needs a server at its other end",
        ),
        (
            "storage: {server: rest}\n",
            "`borg` does not say how it names a repository on `rest`",
        ),
        (
            "storage: {server: sftp, network: {latency: 25}}\n",
            "is not a latency",
        ),
        (
            "storage: {server: sftp, network: {latency: 25ms, bandwidth: 100MB}}\n",
            "is not a bandwidth",
        ),
        ("storage: {server: ftp}\n", "ftp"),
    ];
    for (extra, expected) in cases {
        let e = lab(extra).unwrap_err();
        assert!(e.contains(expected), "{extra}: {e}");
    }
    let no_pin = BASE.replace("servers:\n  rest:", "unused_servers:\n  rest:");
    let e = Lab::from_text(&no_pin, "lab.yaml").unwrap_err().to_string();
    assert!(e.contains("unused_servers"), "{e}");
    let without_servers = BASE
        .split_once("servers:")
        .map(|(a, b)| format!("{a}{}", &b[b.find("tools:").unwrap()..]))
        .unwrap();
    let e = Lab::from_text(
        &format!("{without_servers}storage: {{server: rest}}\n"),
        "lab.yaml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("pin it under `servers: {rest:"), "{e}");
    let typo = BASE.replace(
        "rest: {repo: \"rest:{repo_url}\"}",
        "rest: {repo: \"rest:{repo_ulr}\"}",
    );
    let e = Lab::from_text(&typo, "lab.yaml").unwrap_err().to_string();
    assert!(
        e.contains("unknown placeholder `{repo_ulr}`") && e.contains("did you mean `{repo_url}`"),
        "{e}"
    );
    let on_s3 = BASE.replace("  - name: restic\n", "  - name: restic@new\n");
    let e = Lab::from_text(&format!("{on_s3}storage: {{server: s3}}\n"), "lab.yaml")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`restic@new` cannot use an S3 server")
            && e.contains("pin it under `servers: {s3:"),
        "{e}"
    );
    let local = BASE.replace(
        "      rest: {repo:",
        "      local: {repo: x}\n      rest: {repo:",
    );
    let e = Lab::from_text(&local, "lab.yaml").unwrap_err().to_string();
    assert!(
        e.contains("a local repository is the tool's own commands"),
        "{e}"
    );
}

#[test]
fn check_says_where_the_repositories_live() {
    let l = lab("variants:\n  - name: far\n    storage: {server: sftp, network: {latency: 270ms, bandwidth: 100Mbit}}\n").unwrap();
    let text = l.describe(None);
    assert!(
        text.contains("repositories: on the machine's own disk"),
        "{text}"
    );
    assert!(
        text.contains("server rest-server 0.14.0 -> /usr/local/bin/rest-server"),
        "{text}"
    );
    assert!(
        text.contains("on sftp  {repo} = sftp:{repo_user}@{repo_host}:{repo_path}"),
        "{text}"
    );
    assert!(
        text.contains("far (boot 1): storage.server local -> sftp; storage.network - -> 270 ms round trip, 100 Mbit/s"),
        "{text}"
    );
}
