//! `labrun pin`'s core: digests from an upstream checksum list served on
//! 127.0.0.1, written into a lab file's text with its comments kept.

mod common;

use common::*;
use labrun_artifact::lab_edit::{PinEdit, apply_pin, read_tool};
use labrun_artifact::{ArtifactError, FetchOptions, Fetcher, ManualPin, PinRequest, write_lab};
use std::path::Path;

const OLD: &str = "1111111111111111111111111111111111111111111111111111111111111111";
const NEW: &str = "f415415624dcc452f2a02b8c33641791a8c6d6d3b65bbb3543fcf9a25151585c";
const OTHER: &str = "416d0f84a3dbb321a8b2d8f0997b1a0a6e915babe79ee76fa6e4d2bd1e1c5178";

fn lab(base: &str) -> String {
    [
        "# The published comparison.",
        "vm:",
        "  cpus: 4",
        "tools:",
        "  # restic: SHA256SUMS beside each release",
        "  - name: restic",
        "    version: 0.18.0",
        "    artifact:",
        &format!(
            "      url: {base}/restic/releases/download/v0.18.0/restic_0.18.0_linux_amd64.bz2"
        ),
        &format!("      sha256: {OLD}   # typed by hand"),
        "      sha256_source: \"restic SHA256SUMS, v0.18.0\"",
        "      extract: bz2",
        &format!("      binary_sha256: {OLD}"),
        "    env:",
        "      RESTIC_PASSWORD: secret # not a real one",
        "",
        "  - name: kopia",
        "    version: \"0.22.0\"",
        "    artifact:",
        &format!("      url: {base}/kopia/releases/download/v0.22.0/kopia-0.22.0-linux-x64.tar.gz"),
        &format!("      sha256: {OLD}"),
        "      extract:",
        "        tar: kopia-0.22.0-linux-x64/kopia",
        "dataset:",
        "  scale: 1",
        "",
    ]
    .join("\n")
}

fn fetcher(cache: &Path) -> Fetcher {
    let mut o = FetchOptions::new(cache.to_path_buf(), None);
    o.net = quick_net();
    Fetcher::new(o).unwrap()
}

fn request(tool: &str, version: &str) -> PinRequest {
    PinRequest {
        tool: tool.into(),
        version: version.into(),
        url_template: None,
        checksums: None,
        manual: None,
    }
}

#[tokio::test]
async fn pins_restic_from_sha256sums_keeping_everything_else() {
    let server = Server::start();
    let list =
        format!("{OTHER}  restic_0.19.1_darwin_amd64.bz2\n{NEW}  restic_0.19.1_linux_amd64.bz2\n");
    server.route(
        "/restic/releases/download/v0.19.1/SHA256SUMS",
        vec![Reply::Body(list.into_bytes())],
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lab.yaml");
    let before = lab(&format!("http://{}", server.addr));
    std::fs::write(&path, &before).unwrap();

    let f = fetcher(&dir.path().join("cache"));
    let text = std::fs::read_to_string(&path).unwrap();
    let out = f
        .plan_pin(&path, &text, &request("restic", "0.19.1"))
        .await
        .unwrap();
    write_lab(&path, &text, &out.new_text).unwrap();
    let after = std::fs::read_to_string(&path).unwrap();

    let url = server.url("/restic/releases/download/v0.19.1/restic_0.19.1_linux_amd64.bz2");
    assert_eq!(out.sha256, NEW);
    assert_eq!(out.old_sha256.as_deref(), Some(OLD));
    assert_eq!(out.url.as_deref(), Some(url.as_str()));
    let view = read_tool(&after, "restic").unwrap();
    assert_eq!(view.version.as_deref(), Some("0.19.1"));
    assert_eq!(view.url.as_deref(), Some(url.as_str()));
    assert_eq!(view.sha256.as_deref(), Some(NEW));
    let list_url = server.url("/restic/releases/download/v0.19.1/SHA256SUMS");
    assert!(
        after.contains(&format!(
            "      sha256_source: upstream checksum list {list_url}\n"
        )),
        "{after}"
    );
    // Comments and the other tool are untouched; the stale binary pin is gone.
    assert!(after.contains("# The published comparison.\n"));
    assert!(after.contains("  # restic: SHA256SUMS beside each release\n"));
    assert!(after.contains("RESTIC_PASSWORD: secret # not a real one\n"));
    assert!(!after.contains("binary_sha256"), "{after}");
    let kopia_before = &before[before.find("  - name: kopia").unwrap()..];
    assert!(after.ends_with(kopia_before), "{after}");
    assert_eq!(after.lines().count(), before.lines().count() - 1);
}

#[tokio::test]
async fn finds_kopias_checksums_txt_after_a_404_on_sha256sums() {
    let server = Server::start();
    let list =
        format!("{NEW}  kopia-0.23.1-linux-x64.tar.gz\n{OTHER}  kopia_0.23.1_linux_amd64.deb\n");
    server.route(
        "/kopia/releases/download/v0.23.1/checksums.txt",
        vec![Reply::Body(list.into_bytes())],
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lab.yaml");
    let text = lab(&format!("http://{}", server.addr));
    let out = fetcher(dir.path())
        .plan_pin(&path, &text, &request("kopia", "0.23.1"))
        .await
        .unwrap();
    assert_eq!(out.sha256, NEW);
    assert_eq!(
        server.hits("/kopia/releases/download/v0.23.1/SHA256SUMS"),
        1
    );
    let view = read_tool(&out.new_text, "kopia").unwrap();
    assert_eq!(view.version.as_deref(), Some("0.23.1"));
    // The quoted version stays a string; a sha256_source line was added.
    assert!(
        out.new_text.contains("    version: 0.23.1\n"),
        "{}",
        out.new_text
    );
    assert!(
        out.new_text.contains(&format!(
            "      sha256: {NEW}\n      sha256_source: upstream checksum list http://"
        )),
        "{}",
        out.new_text
    );
    assert!(
        out.new_text
            .contains("checksums.txt\n      extract:\n        tar: kopia-0.23.1-linux-x64/kopia\n")
    );
}

#[tokio::test]
async fn no_published_list_says_what_to_do() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lab.yaml");
    let text = lab(&format!("http://{}", server.addr));
    let err = fetcher(dir.path())
        .plan_pin(&path, &text, &request("restic", "0.19.1"))
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, ArtifactError::Checksums { .. }), "{err:?}");
    assert!(
        msg.contains("SHA256SUMS (404)") && msg.contains("checksums.txt (404)"),
        "{msg}"
    );
    assert!(msg.contains("--sha256") && msg.contains("borg"), "{msg}");

    // The manual route, with provenance, needs no list.
    let mut req = request("restic", "0.19.1");
    req.manual = Some(ManualPin {
        sha256: NEW.into(),
        source: "GitHub release API digest, checked by hand".into(),
    });
    let out = fetcher(dir.path())
        .plan_pin(&path, &text, &req)
        .await
        .unwrap();
    assert!(
        out.new_text
            .contains("sha256_source: GitHub release API digest, checked by hand\n")
    );
}

#[tokio::test]
async fn a_list_with_two_digests_for_the_file_is_refused() {
    let server = Server::start();
    let list =
        format!("{NEW}  restic_0.19.1_linux_amd64.bz2\n{OTHER}  restic_0.19.1_linux_amd64.bz2\n");
    server.route(
        "/restic/releases/download/v0.19.1/SHA256SUMS",
        vec![Reply::Body(list.into_bytes())],
    );
    let dir = tempfile::tempdir().unwrap();
    let text = lab(&format!("http://{}", server.addr));
    let err = fetcher(dir.path())
        .plan_pin(
            &dir.path().join("lab.yaml"),
            &text,
            &request("restic", "0.19.1"),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("refusing to guess"), "{err}");
}

#[test]
fn ambiguous_or_unusual_labs_are_refused() {
    let base = lab("http://127.0.0.1:9");
    let edit = PinEdit {
        tool: "restic".into(),
        version: None,
        url: None,
        apt_version: None,
        extract_member: None,
        sha256: NEW.into(),
        sha256_source: "x".into(),
    };
    let twice = base.replace("  - name: kopia", "  - name: restic");
    assert!(
        apply_pin(&twice, &edit)
            .unwrap_err()
            .contains("2 tools are named `restic`")
    );
    let missing = PinEdit {
        tool: "borg".into(),
        ..edit.clone()
    };
    assert!(
        apply_pin(&base, &missing)
            .unwrap_err()
            .contains("the tools are: restic, kopia")
    );
    let flow = base.replace(
        &format!("      sha256: {OLD}   # typed by hand"),
        "      sha256: &pin abc",
    );
    assert!(
        apply_pin(&flow, &edit)
            .unwrap_err()
            .contains("does not rewrite")
    );
    let dup = base.replace(
        "      extract: bz2\n",
        &format!("      sha256: {OLD}\n      extract: bz2\n"),
    );
    assert!(
        apply_pin(&dup, &edit)
            .unwrap_err()
            .contains("appears 2 times")
    );
}

#[test]
fn values_are_quoted_when_yaml_would_misread_them() {
    use labrun_artifact::lab_edit::yaml_scalar;
    assert_eq!(yaml_scalar("0.19.1"), "0.19.1");
    assert_eq!(yaml_scalar("1.4"), "\"1.4\"");
    assert_eq!(yaml_scalar("yes"), "\"yes\"");
    assert_eq!(yaml_scalar("a: b"), "\"a: b\"");
    assert_eq!(
        yaml_scalar(&"1".repeat(64)),
        format!("\"{}\"", "1".repeat(64))
    );
    assert_eq!(yaml_scalar("12e4"), "\"12e4\"");
    assert_eq!(yaml_scalar(NEW), NEW);
    assert_eq!(yaml_scalar("https://h/x_1.bz2"), "https://h/x_1.bz2");
}

#[tokio::test]
async fn an_apt_tool_is_pinned_from_the_hosts_signed_index() {
    let policy = std::process::Command::new("apt-cache")
        .args(["policy", "restic"])
        .output()
        .unwrap();
    let policy = String::from_utf8(policy.stdout).unwrap();
    let version = policy
        .lines()
        .find_map(|l| l.trim().strip_prefix("Candidate: "))
        .unwrap()
        .to_string();
    let text = [
        "tools:",
        "  - name: restic",
        "    version: 0.14.0",
        "    artifact:",
        "      apt: {package: restic, version: 0.0.1-1}",
        &format!("      sha256: {OLD}"),
        "      extract:",
        "        deb-member: usr/bin/restic",
        &format!("      binary_sha256: {OLD}"),
        "",
    ]
    .join("\n");
    let dir = tempfile::tempdir().unwrap();
    let out = fetcher(dir.path())
        .plan_pin(
            &dir.path().join("lab.yaml"),
            &text,
            &request("restic", &version),
        )
        .await
        .unwrap();
    let show = std::process::Command::new("apt-cache")
        .args(["show", &format!("restic={version}")])
        .output()
        .unwrap();
    let listed = String::from_utf8(show.stdout).unwrap();
    assert!(
        listed.contains(&format!("SHA256: {}\n", out.sha256)),
        "{listed}"
    );
    let view = read_tool(&out.new_text, "restic").unwrap();
    assert_eq!(view.apt_package.as_deref(), Some("restic"));
    assert_eq!(view.apt_version.as_deref(), Some(version.as_str()));
    assert_eq!(
        view.version.as_deref(),
        Some("0.14.0"),
        "the upstream version is kept"
    );
    assert!(
        out.new_text.contains(&format!(
            "      apt: {{package: restic, version: {version}}}\n"
        )),
        "{}",
        out.new_text
    );
    assert!(
        out.new_text
            .contains("sha256_source: apt-cache show restic=")
    );
    assert!(!out.new_text.contains("binary_sha256"));
}

/// The labs the repository ships must be pinnable as they are written: each
/// tool found, the pin read back, every other tool untouched.
#[test]
fn every_shipped_lab_can_be_pinned_in_place() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = vec![root.join("lab.yaml")];
    if let Ok(dir) = std::fs::read_dir(root.join("labs")) {
        files.extend(
            dir.map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml")),
        );
    }
    let mut pinned = 0;
    for file in files.iter().filter(|f| f.exists()) {
        let text = std::fs::read_to_string(file).unwrap();
        let names = tool_names(&text);
        for name in &names {
            let before = read_tool(&text, name)
                .unwrap_or_else(|e| panic!("{}: {name}: {e}", file.display()));
            // A tool variant that takes its artifact from its tool through
            // a merge key (`<<: *borg`) is pinned there.
            if before.sha256.is_none() {
                continue;
            }
            let edit = PinEdit {
                tool: name.clone(),
                version: None,
                url: before.url.clone(),
                apt_version: before.apt_version.clone(),
                extract_member: None,
                sha256: NEW.into(),
                sha256_source: "a test: the list at http://127.0.0.1/x".into(),
            };
            let out = apply_pin(&text, &edit)
                .unwrap_or_else(|e| panic!("{}: {name}: {e}", file.display()));
            let after = read_tool(&out, name).unwrap();
            assert_eq!(after.sha256.as_deref(), Some(NEW));
            assert_eq!(after.url, before.url);
            assert_eq!(after.apt_version, before.apt_version);
            assert!(
                out.contains("      sha256_source: \"a test: the list at http://127.0.0.1/x\"\n")
            );
            for other in names.iter().filter(|n| *n != name) {
                assert_eq!(
                    read_tool(&out, other).unwrap(),
                    read_tool(&text, other).unwrap()
                );
            }
            pinned += 1;
        }
    }
    assert!(pinned >= 3, "the shipped labs name at least three tools");
}

#[test]
fn a_folded_sha256_source_is_replaced_with_all_its_lines() {
    let text = lab("http://127.0.0.1:9").replace(
        "      sha256_source: \"restic SHA256SUMS, v0.18.0\"\n",
        "      sha256_source: >-\n        several packaging files agree;\n\n        see the notes\n",
    );
    let edit = PinEdit {
        tool: "restic".into(),
        version: None,
        url: None,
        apt_version: None,
        extract_member: None,
        sha256: NEW.into(),
        sha256_source: "upstream SHA256SUMS".into(),
    };
    let out = apply_pin(&text, &edit).unwrap();
    assert!(
        !out.contains("several packaging") && !out.contains("see the notes"),
        "{out}"
    );
    assert!(
        out.contains("      sha256_source: upstream SHA256SUMS\n      extract: bz2\n"),
        "{out}"
    );
}

/// The names of the `tools:` list's items, as written: `- name: x`, or
/// `name: x` as an item's first key after an anchor or merge key
/// (`- &restic` / `- <<: *restic`). Other lists (`variants:`, `compare:`)
/// name other things.
fn tool_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_tools = false;
    let mut item_pending = false;
    for line in text.lines() {
        if !line.starts_with([' ', '-', '#']) && !line.trim().is_empty() {
            in_tools = line.trim_end() == "tools:";
            continue;
        }
        if !in_tools {
            continue;
        }
        let t = line.trim();
        if let Some(name) = t.strip_prefix("- name: ") {
            names.push(name.to_string());
            item_pending = false;
        } else if t.starts_with("- &") || t.starts_with("- <<:") {
            item_pending = true;
        } else if item_pending && let Some(name) = t.strip_prefix("name: ") {
            names.push(name.to_string());
            item_pending = false;
        }
    }
    names
}

/// A series written both ways: flow entries and a block entry, with
/// comments on and between them.
const SERIES: &str = "\
# restic across releases.
tools:
  - name: restic
    version: \"{version}\"
    anchor: 0.19.1
    versions:
      # the oldest kept
      - {version: 0.16.4, toolchain: go1.26.8}  # first
      - {version: 0.19.0, sum: \"h1:old=\", sha256: 1111111111111111111111111111111111111111111111111111111111111111}
      - version: 0.19.1
        # pinned by hand once
        sha256: 2222222222222222222222222222222222222222222222222222222222222222 # old
    artifact:
      go: {module: example.com/x, version: \"v{version}\", sum: \"{sum}\", toolchain: go1.26.8}
      sha256: \"{sha256}\"
";

fn series_edit(version: &str, sum: &str) -> labrun_artifact::lab_edit::SeriesPinEdit {
    labrun_artifact::lab_edit::SeriesPinEdit {
        tool: "restic".into(),
        version: version.into(),
        sum: Some(sum.into()),
        sha256: NEW.into(),
    }
}

#[test]
fn a_series_entry_is_pinned_in_place_comments_and_other_keys_kept() {
    use labrun_artifact::lab_edit::apply_series_pin;
    let sum = "h1:gvsowIM7EsW8a0w8MHPiagrwqkejBTxtgzGi07Lh4pY=";
    let after = apply_series_pin(SERIES, &series_edit("0.16.4", sum)).unwrap();
    assert!(
        after.contains(&format!(
            "      - {{version: 0.16.4, toolchain: go1.26.8, sum: \"{sum}\", sha256: {NEW}}}  # first\n"
        )),
        "{after}"
    );
    // A flow entry's old pins are replaced, in their places.
    let after = apply_series_pin(&after, &series_edit("0.19.0", sum)).unwrap();
    assert!(
        after.contains(&format!(
            "      - {{version: 0.19.0, sum: \"{sum}\", sha256: {NEW}}}\n"
        )),
        "{after}"
    );
    // A block entry: the old line replaced (its comment kept), the missing
    // pin added after `version:`.
    let after = apply_series_pin(&after, &series_edit("0.19.1", sum)).unwrap();
    assert!(
        after.contains(&format!(
            "      - version: 0.19.1\n        sum: {sum}\n        # pinned by hand once\n        sha256: {NEW} # old\n"
        )),
        "{after}"
    );
    for kept in [
        "# restic across releases.\n",
        "      # the oldest kept\n",
        "    anchor: 0.19.1\n",
    ] {
        assert!(after.contains(kept), "{kept:?} lost:\n{after}");
    }
    assert_eq!(after.lines().count(), SERIES.lines().count() + 1);
    // Everything but the entries is as it was.
    let tail = &SERIES[SERIES.find("    artifact:").unwrap()..];
    assert!(after.ends_with(tail));
}

#[test]
fn a_series_version_the_lab_does_not_list_is_refused() {
    use labrun_artifact::lab_edit::apply_series_pin;
    let err = apply_series_pin(SERIES, &series_edit("0.18.1", "h1:x=")).unwrap_err();
    assert!(err.contains("no version 0.18.1"), "{err}");
    let err = apply_series_pin(
        "tools:\n  - name: restic\n    version: 1\n",
        &series_edit("1", "h1:x="),
    )
    .unwrap_err();
    assert!(err.contains("no `versions:`"), "{err}");
}
