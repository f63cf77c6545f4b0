//! `versions:` on a tool: a release series expands into `tool@<version>`
//! tools, each with its own pins, run interleaved in one plan, with an
//! anchor every run includes.

use labrun_lab::{Lab, PlanOverrides};

const SUM_A: &str = "h1:gvsowIM7EsW8a0w8MHPiagrwqkejBTxtgzGi07Lh4pY=";
const SUM_B: &str = "h1:HALyLpq9AzTLUTG8aVQvMO8Xivm6l74j6DiNRgGwTNw=";
const SUM_C: &str = "h1:LQKkar5/gYxay1OCokAWPBNiLr1lTpt4fhdM4GWqSlY=";
const SHA_A: &str = "ae7b1141900d9ed402ce0cc78be2d1c66c82a26e65cae5711557a66f34a5b746";
const SHA_B: &str = "1111111111111111111111111111111111111111111111111111111111111111";
const SHA_C: &str = "abb2da9c76ac06cf80295bbe4d670e96d43b4c97cf54b3fd882e544ffc451577";

/// A lab whose restic is a series; `versions` and `extra` are the tool's
/// lines after `name:` (indented by 4).
fn text(versions: &str, extra: &str) -> String {
    format!(
        r#"name: series
dataset:
  kind: synthetic
  seed: 1
  scale: 0.01
cycles: 3
tools:
  - name: restic
    version: "{{version}}"
{extra}    versions:
{versions}    artifact:
      go:
        module: github.com/restic/restic
        version: v{{version}}
        sum: "{{sum}}"
        package: ./cmd/restic
        toolchain: go1.26.8
      sha256: "{{sha256}}"
    env:
      RESTIC_PASSWORD: pw-not-secret
    secret_env: [RESTIC_PASSWORD]
    commands:
      init: ["{{bin}}", init, -r, "{{repo}}"]
      backup: ["{{bin}}", backup, -r, "{{repo}}", "{{source}}"]
      restore: ["{{bin}}", restore, latest, -r, "{{repo}}", --target, "{{target}}"]
  - name: borg
    version: 1.4.5
    artifact:
      url: https://example.invalid/borg-linux64
      sha256: f415415624dcc452f2a02b8c33641791a8c6d6d3b65bbb3543fcf9a25151585c
    commands:
      init: ["{{bin}}", init, -e, none, "{{repo}}"]
      backup: ["{{bin}}", create, "{{repo}}::a", "{{source}}"]
      restore: ["{{bin}}", extract, "{{repo}}::a", "{{target}}"]
"#
    )
}

fn three() -> String {
    format!(
        "      - {{version: 0.16.4, sum: \"{SUM_A}\", sha256: {SHA_A}}}\n      \
         - {{version: 0.17.3, sum: \"{SUM_B}\", sha256: {SHA_B}}}\n      \
         - {{version: 0.19.1, sum: \"{SUM_C}\", sha256: {SHA_C}}}\n"
    )
}

fn load(text: &str) -> Result<Lab, String> {
    Lab::from_text(text, "lab.yaml").map_err(|e| e.to_string())
}

fn names(lab: &Lab) -> Vec<String> {
    lab.tools.iter().map(|t| t.name.clone()).collect()
}

#[test]
fn a_versions_list_expands_into_pinned_members_in_order() {
    let lab = load(&text(&three(), "")).unwrap();
    assert_eq!(
        names(&lab),
        ["restic@0.16.4", "restic@0.17.3", "restic@0.19.1", "borg"]
    );
    let old = &lab.tools[0];
    assert_eq!(old.version, "0.16.4");
    assert_eq!(old.artifact.sha256, SHA_A);
    let provenance = old.artifact.provenance();
    assert!(
        provenance.contains("github.com/restic/restic@v0.16.4"),
        "{provenance}"
    );
    assert!(provenance.contains(SUM_A), "{provenance}");
    assert_eq!(lab.tools[1].artifact.sha256, SHA_B);
    assert!(lab.tools.iter().all(|t| t.versions.is_empty()));
    // The newest (last written) is the anchor by default.
    let series = lab.series();
    assert_eq!(series.len(), 1);
    assert_eq!(series[0].anchor, "restic@0.19.1");
    assert_eq!(
        series[0].members,
        ["restic@0.16.4", "restic@0.17.3", "restic@0.19.1"]
    );
}

#[test]
fn a_stated_anchor_is_kept() {
    let lab = load(&text(&three(), "    anchor: 0.17.3\n")).unwrap();
    assert_eq!(lab.series()[0].anchor, "restic@0.17.3");
}

#[test]
fn an_anchor_not_in_the_list_is_refused_at_its_line() {
    let err = load(&text(&three(), "    anchor: 0.18.0\n")).unwrap_err();
    // `anchor:` is line 10.
    assert!(
        err.contains("lab.yaml:10:") && err.contains("tools[0].anchor"),
        "{err}"
    );
    assert!(
        err.contains("0.18.0") && err.contains("0.16.4, 0.17.3, 0.19.1"),
        "{err}"
    );
}

#[test]
fn a_version_without_its_pin_is_refused_with_the_command_that_writes_it() {
    let versions = format!(
        "      - {{version: 0.16.4}}\n      - {{version: 0.19.1, sum: \"{SUM_C}\", sha256: {SHA_C}}}\n"
    );
    let err = load(&text(&versions, "")).unwrap_err();
    assert!(err.contains("lab.yaml:11:"), "{err}");
    assert!(err.contains("tools[0].versions[0]"), "{err}");
    assert!(err.contains("labrun pin restic --series"), "{err}");
    assert!(
        err.contains("no `sum:` (the module's hash) and `sha256:` pin"),
        "{err}"
    );
    assert!(err.contains("1 problem"), "one problem per entry: {err}");
}

#[test]
fn a_bad_pin_of_one_version_is_said_at_its_entry() {
    let versions = format!(
        "      - {{version: 0.16.4, sum: \"h1:short\", sha256: {SHA_A}}}\n      - {{version: 0.19.1, sum: \"{SUM_C}\", sha256: {SHA_C}}}\n"
    );
    let err = load(&text(&versions, "")).unwrap_err();
    assert!(err.contains("tools[0].versions[0]"), "{err}");
    assert!(err.contains("version 0.16.4: artifact.go.sum"), "{err}");
}

#[test]
fn an_unknown_key_in_an_entry_is_refused() {
    let versions = format!("      - {{version: 0.16.4, sha: {SHA_A}}}\n");
    let err = load(&text(&versions, "")).unwrap_err();
    assert!(err.contains("unknown field `sha`"), "{err}");
    assert!(err.contains("lab.yaml:11:"), "{err}");
}

#[test]
fn a_template_without_placeholders_is_refused() {
    let t = text(&three(), "").replace("sha256: \"{sha256}\"", &format!("sha256: {SHA_A}"));
    let err = load(&t).unwrap_err();
    assert!(err.contains("tools[0].artifact.sha256"), "{err}");
    let t = text(&three(), "").replace("version: \"{version}\"", "version: 0.19.1");
    let err = load(&t).unwrap_err();
    assert!(err.contains("tools[0].version"), "{err}");
}

#[test]
fn the_plan_runs_every_member_interleaved_with_the_anchor() {
    let lab = load(&text(&three(), "")).unwrap();
    let plan = lab.to_plan("r", &PlanOverrides::default()).unwrap();
    let planned: Vec<&str> = plan.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        planned,
        ["restic@0.16.4", "restic@0.17.3", "restic@0.19.1", "borg"]
    );
    // The rotation interleaves them cycle by cycle.
    assert!(plan.rotate_tools);
    assert_eq!(plan.tools[0].version, "0.16.4");
    // A member alone still brings the anchor.
    let only = PlanOverrides {
        tools: Some(vec!["restic@0.16.4".into()]),
        ..Default::default()
    };
    let plan = lab.to_plan("r", &only).unwrap();
    let planned: Vec<&str> = plan.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(planned, ["restic@0.16.4", "restic@0.19.1"]);
    // The series' name stands for all its members.
    let all = PlanOverrides {
        tools: Some(vec!["restic".into()]),
        ..Default::default()
    };
    let plan = lab.to_plan("r", &all).unwrap();
    assert_eq!(plan.tools.len(), 3);
    // The report is told the series.
    let request = lab.compare_plan().unwrap();
    assert!(request.pairs.is_empty());
    assert_eq!(request.series.len(), 1);
    assert_eq!(request.series[0].anchor, "restic@0.19.1");
    assert_eq!(request.series[0].members.len(), 3);
}

#[test]
fn a_lab_without_versions_asks_the_report_for_no_series() {
    let t = text(&three(), "");
    let start = t.find("  - name: borg").unwrap();
    let plain = format!("name: plain\ncycles: 3\ntools:\n{}", &t[start..]);
    let lab = load(&plain).unwrap();
    assert!(lab.series().is_empty());
    assert!(lab.compare_plan().is_none());
}

#[test]
fn a_rule_of_the_template_itself_is_said_once_at_its_line() {
    let t = text(&three(), "").replace(
        "init: [\"{bin}\", init, -r, \"{repo}\"]",
        "init: [\"{bin}\", init]",
    );
    let err = load(&t).unwrap_err();
    assert_eq!(err.matches("never uses `{repo}`").count(), 1, "{err}");
    assert!(err.contains("tools[0].commands.init"), "{err}");
}

#[test]
fn a_variant_that_tunes_the_series_tunes_every_version() {
    let t = format!(
        "{}variants:\n  - name: plain\n  - name: tuned\n    tools: {{restic: {{args: {{restore: [--verify]}}}}}}\n",
        text(&three(), "")
    );
    let lab = load(&t).unwrap();
    let variants = lab.variants().unwrap();
    let tuned = variants.iter().find(|v| v.record.name == "tuned").unwrap();
    let members: Vec<_> = tuned
        .lab
        .tools
        .iter()
        .filter(|t| t.name.starts_with("restic@"))
        .collect();
    assert_eq!(members.len(), 3);
    for m in members {
        assert_eq!(
            m.args.get("restore").unwrap(),
            &["--verify".to_string()],
            "{}",
            m.name
        );
    }
    // Said once, under the name the variant wrote.
    assert_eq!(tuned.record.changes.len(), 1, "{:?}", tuned.record.changes);
}

#[test]
fn pairs_and_the_noise_floor_may_name_a_version() {
    let t = format!(
        "{}noise_floor: {{tool: restic@0.19.1}}\ncompare:\n  pairs:\n    - {{baseline: restic@0.19.1, candidate: restic@0.16.4}}\n",
        text(&three(), "")
    );
    let lab = load(&t).unwrap();
    let names = names(&lab);
    assert!(names.contains(&"restic@0.19.1-aa".to_string()), "{names:?}");
    let request = lab.compare_plan().unwrap();
    assert_eq!(request.pairs.len(), 2);
    assert_eq!(request.series.len(), 1);
    // A version that is also a tool written beside the series is refused.
    let clash = text(&three(), "").replace("  - name: borg", "  - name: restic@0.17.3");
    let err = load(&clash).unwrap_err();
    assert!(err.contains("tools[0].versions[1].version"), "{err}");
}

#[test]
fn a_version_may_build_with_its_own_toolchain() {
    let versions = format!(
        "      - {{version: 0.16.4, sum: \"{SUM_A}\", sha256: {SHA_A}, toolchain: go1.22.12}}\n      - {{version: 0.19.1, sum: \"{SUM_C}\", sha256: {SHA_C}}}\n"
    );
    let lab = load(&text(&versions, "")).unwrap();
    let old = lab.tools[0].artifact.provenance();
    let new = lab.tools[1].artifact.provenance();
    assert!(old.contains("toolchain go1.22.12"), "{old}");
    assert!(new.contains("toolchain go1.26.8"), "{new}");
}

/// `n` pinned versions 1.0.0 ... 1.0.(n-1), as `versions:` entries.
fn many(n: usize) -> String {
    (0..n)
        .map(|i| format!("      - {{version: 1.0.{i}, sum: \"{SUM_A}\", sha256: {SHA_A}}}\n"))
        .collect()
}

/// Issue item 5: a member cloned the template with its whole version list
/// (cleared, its allocation kept), so n versions held n x n entries: 7,000
/// of them took 2.8 GB. A member holds no version list at all.
#[test]
fn no_member_of_a_series_holds_the_series_version_list() {
    let lab = load(&text(&many(40), "")).unwrap();
    let members: Vec<_> = lab.tools.iter().filter(|t| t.name.contains('@')).collect();
    assert_eq!(members.len(), 40);
    for m in members {
        assert_eq!(m.versions.capacity(), 0, "{} keeps a version list", m.name);
    }
}

/// Issue item 5: the count is capped as matrix and variants are, and the
/// refusal says the count and what to do.
#[test]
fn a_series_longer_than_the_cap_is_refused_with_its_count() {
    let max = labrun_lab::series::MAX_VERSIONS;
    assert!(load(&text(&many(max), "")).is_ok());
    let e = load(&text(&many(max + 1), "")).unwrap_err();
    assert!(
        e.contains(&format!(
            "tools[0].versions: lists {} versions; a series runs at most {max}",
            max + 1
        )),
        "{e}"
    );
}
