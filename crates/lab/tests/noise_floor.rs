//! `noise_floor: {tool: X}`: an A/A copy of X in every cycle (the same
//! binary, environment and commands under the name `X@aa`) and the pair
//! (X, X@aa), added after the lab is checked; a lab without it unchanged.

use labrun_lab::{Lab, PlanOverrides};

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
  - &restic
    name: restic
    version: 0.19.1
    artifact:
      url: https://example.invalid/restic_0.19.1_linux_amd64.bz2
      sha256: f415415624dcc452f2a02b8c33641791a8c6d6d3b65bbb3543fcf9a25151585c
      extract: bz2
    env:
      RESTIC_PASSWORD: pw-not-secret
    secret_env: [RESTIC_PASSWORD]
    args:
      backup: [--compression, max]
    commands:
      init: ["{bin}", init, -r, "{repo}"]
      backup: ["{bin}", backup, -r, "{repo}", "{source}"]
      restore: ["{bin}", restore, latest, -r, "{repo}", --target, "{target}"]
  - <<: *restic
    name: restic@0.14.0
    version: 0.14.0
"#;

fn lab(extra: &str) -> Result<Lab, String> {
    Lab::from_text(&format!("{BASE}{extra}"), "lab.yaml").map_err(|e| e.to_string())
}

fn names(lab: &Lab) -> Vec<&str> {
    lab.tools.iter().map(|t| t.name.as_str()).collect()
}

#[test]
fn without_the_option_the_lab_is_as_written() {
    let l = lab("").unwrap();
    assert_eq!(names(&l), ["restic", "restic@0.14.0"]);
    assert!(l.compare.is_none());
    assert!(l.noise_floor_pair().is_none());
    assert!(!l.describe(None).contains("noise floor"));
}

#[test]
fn the_copy_runs_the_same_binary_and_commands_after_its_tool() {
    let l = lab("noise_floor: {tool: restic}\n").unwrap();
    assert_eq!(names(&l), ["restic", "restic@aa", "restic@0.14.0"]);
    let plan = l.to_plan("run", &PlanOverrides::default()).unwrap();
    let [tool, copy] = [&plan.tools[0], &plan.tools[1]];
    assert_eq!(copy.name, "restic@aa");
    assert_eq!(copy.binary, tool.binary, "the very file the tool runs");
    assert_eq!(tool.binary, "/usr/local/bin/restic");
    assert_eq!(copy.binary_sha256, tool.binary_sha256);
    assert_eq!(copy.version, tool.version);
    assert_eq!(copy.env, tool.env);
    assert_eq!(copy.secret_env, tool.secret_env);
    assert_eq!(copy.commands, tool.commands);
    // The tool's own `args` are part of the commands both run.
    assert!(copy.commands["backup"].argv.ends_with(&["max".to_string()]));
    // Interleaved like any tool: the plan rotates the order every cycle.
    assert!(plan.rotate_tools);
}

#[test]
fn the_copy_is_installed_from_the_same_artifact() {
    let l = lab("noise_floor: {tool: restic}\n").unwrap();
    let installs = l.installs(None).unwrap();
    assert_eq!(installs[1].name, "restic@aa");
    assert_eq!(installs[1].artifact, installs[0].artifact);
    assert_eq!(installs[1].install_path(), installs[0].install_path());
}

#[test]
fn the_pair_is_added_and_marked_as_the_floor() {
    let l = lab("noise_floor: {tool: restic}\n").unwrap();
    let plan = l.compare.as_ref().and_then(|c| c.to_plan()).unwrap();
    assert_eq!(plan.pairs.len(), 1);
    assert_eq!(plan.pairs[0].baseline, "restic");
    assert_eq!(plan.pairs[0].candidate, "restic@aa");
    assert_eq!(plan.noise_floor.as_ref(), Some(&plan.pairs[0]));
    assert_eq!(plan.margin, None, "the method's default margin");
    let json = serde_json::to_value(&plan).unwrap();
    assert_eq!(json["noise_floor"]["candidate"], "restic@aa");
}

#[test]
fn the_lab_s_own_pairs_come_first_and_keep_their_margin() {
    let l = lab(
        "noise_floor: {tool: restic}\ncompare:\n  margin: 10%\n  pairs:\n    - {baseline: restic@0.14.0, candidate: restic}\n",
    )
    .unwrap();
    let plan = l.compare.as_ref().and_then(|c| c.to_plan()).unwrap();
    let pairs: Vec<(&str, &str)> = plan
        .pairs
        .iter()
        .map(|p| (p.baseline.as_str(), p.candidate.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [("restic@0.14.0", "restic"), ("restic", "restic@aa")]
    );
    assert_eq!(plan.margin, Some(0.1));
    let d = l.describe(None);
    assert!(
        d.contains("restic@aa against restic (baseline): A/A, the noise floor"),
        "{d}"
    );
    assert!(
        d.contains("restic@aa: the noise floor, an A/A copy of restic"),
        "{d}"
    );
}

#[test]
fn a_tool_variant_gets_a_copy_with_a_plain_suffix() {
    let l = lab("noise_floor: {tool: restic@0.14.0}\n").unwrap();
    assert_eq!(names(&l), ["restic", "restic@0.14.0", "restic@0.14.0-aa"]);
}

#[test]
fn naming_the_tool_in_tools_brings_its_copy() {
    let l = lab("noise_floor: {tool: restic}\n").unwrap();
    let only = |n: &[&str]| {
        let o = PlanOverrides {
            tools: Some(n.iter().map(|s| s.to_string()).collect()),
            ..Default::default()
        };
        let plan = l.to_plan("run", &o).unwrap();
        plan.tools.into_iter().map(|t| t.name).collect::<Vec<_>>()
    };
    assert_eq!(only(&["restic"]), ["restic", "restic@aa"]);
    assert_eq!(only(&["restic@0.14.0"]), ["restic@0.14.0"]);
}

#[test]
fn a_variant_that_tunes_the_tool_tunes_its_copy() {
    let l = lab(
        "noise_floor: {tool: restic}\nvariants:\n  - name: plain\n  - name: fast\n    tools: {restic: {args: {restore: [--sparse]}}}\n",
    )
    .unwrap();
    let v = l.variants().unwrap();
    let fast = &v.iter().find(|v| v.record.name == "fast").unwrap().lab;
    let plan = fast.to_plan("run", &PlanOverrides::default()).unwrap();
    assert_eq!(plan.tools[1].name, "restic@aa");
    assert_eq!(plan.tools[1].commands, plan.tools[0].commands);
    assert!(
        plan.tools[1].commands["restore"]
            .argv
            .ends_with(&["--sparse".to_string()])
    );
    let pairs = &fast.compare.as_ref().unwrap().pairs;
    assert_eq!(pairs.len(), 1, "one floor pair per variant: {pairs:?}");
}

#[test]
fn a_variant_cannot_tune_the_copy_apart() {
    let err = lab(
        "noise_floor: {tool: restic}\nvariants:\n  - name: odd\n    tools: {restic@aa: {args: {restore: [--sparse]}}}\n",
    )
    .unwrap_err();
    assert!(err.contains("restic@aa"), "{err}");
}

#[test]
fn a_copy_written_by_hand_is_refused_at_its_line() {
    let copy = "  - <<: *restic\n    name: restic@aa\n";
    // The copy alone is a valid lab (the hand-made A/A pair of old).
    assert!(lab(copy).is_ok());
    let text = format!("{BASE}{copy}noise_floor: {{tool: restic}}\n");
    let line = text
        .lines()
        .position(|l| l.starts_with("noise_floor"))
        .unwrap()
        + 1;
    let err = Lab::from_text(&text, "lab.yaml").unwrap_err().to_string();
    assert!(
        err.contains(&format!("lab.yaml:{line}:21: noise_floor.tool:")),
        "pointed at the option's tool: {err}"
    );
    assert!(
        err.contains("a tool of that name is written already"),
        "{err}"
    );
}

#[test]
fn comparing_a_tool_with_itself_points_at_the_option() {
    let err = lab("compare:\n  pairs:\n    - {baseline: restic, candidate: restic}\n").unwrap_err();
    assert!(err.contains("noise_floor: {tool: restic}"), "{err}");
}

#[test]
fn a_pair_naming_the_copy_is_refused_as_the_floor_s_own() {
    let err = lab(
        "noise_floor: {tool: restic}\ncompare:\n  pairs:\n    - {baseline: restic@0.14.0, candidate: restic@aa}\n",
    )
    .unwrap_err();
    assert!(err.contains("compare.pairs[0].candidate"), "{err}");
    assert!(err.contains("`noise_floor:` adds its pair itself"), "{err}");
}
