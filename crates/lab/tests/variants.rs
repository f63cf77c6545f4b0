//! `variants:` and `matrix:`: each variant is a complete lab, its changes
//! stated, its mistakes pointed at its own line; tool variants (`name@x`)
//! are tools of one plan.

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
    commands:
      init: ["{bin}", init, -r, "{repo}"]
      backup: ["{bin}", backup, -r, "{repo}", "{source}"]
      restore: ["{bin}", restore, latest, -r, "{repo}", --target, "{target}"]
"#;

fn lab(extra: &str) -> Result<Lab, String> {
    Lab::from_text(&format!("{BASE}{extra}"), "lab.yaml").map_err(|e| e.to_string())
}

#[test]
fn a_lab_without_variants_has_none() {
    let l = lab("").unwrap();
    assert!(!l.has_variants());
    assert!(l.variants().unwrap().is_empty());
}

#[test]
fn a_matrix_is_the_product_of_its_axes_in_file_order() {
    let l = lab(r#"matrix:
  memory:
    - {name: 512m, vm: {memory: 512MiB}}
    - {name: 3g}
  compression:
    - {name: auto}
    - {name: max, tools: {restic: {args: {backup: [--compression, max]}}}}
"#)
    .unwrap();
    let v = l.variants().unwrap();
    let names: Vec<&str> = v.iter().map(|v| v.record.name.as_str()).collect();
    assert_eq!(names, ["512m-auto", "512m-max", "3g-auto", "3g-max"]);
    // 512m's two variants share a boot, 3g's two another.
    let boots: Vec<u32> = v.iter().map(|v| v.record.boot).collect();
    assert_eq!(boots, [0, 0, 1, 1]);
    assert_eq!(v[0].record.axes[0].axis, "memory");
    assert_eq!(v[0].record.axes[1].value, "auto");

    let small_max = &v[1];
    assert_eq!(small_max.lab.vm.as_ref().unwrap().memory.bytes(), 512 << 20);
    let fields: Vec<(&str, &str, &str)> = small_max
        .record
        .changes
        .iter()
        .map(|c| (c.field.as_str(), c.from.as_str(), c.to.as_str()))
        .collect();
    assert_eq!(
        fields,
        [
            ("vm.memory", "3GiB", "512MiB"),
            ("tools.restic.args.backup", "-", "--compression max")
        ]
    );
    // The baseline changes nothing and says so.
    assert!(v[2].record.changes.is_empty());

    // The flags reach the plan the agent runs, after the lab's own argv.
    let plan = small_max
        .lab
        .to_plan("r", &PlanOverrides::default())
        .unwrap();
    assert_eq!(
        plan.tools[0].commands["backup"].argv,
        [
            "{bin}",
            "backup",
            "-r",
            "{repo}",
            "{source}",
            "--compression",
            "max"
        ]
    );
    // A variant's lab has no variants of its own.
    assert!(!small_max.lab.has_variants());
}

#[test]
fn variants_run_grouped_by_boot_in_the_order_the_lab_names_shapes() {
    let l = lab(r#"variants:
  - {name: a, vm: {memory: 1GiB}}
  - {name: b}
  - {name: c, vm: {memory: 1GiB}, dataset: {seed: 9}}
"#)
    .unwrap();
    let v = l.variants().unwrap();
    let order: Vec<(&str, u32)> = v
        .iter()
        .map(|v| (v.record.name.as_str(), v.record.boot))
        .collect();
    assert_eq!(order, [("a", 0), ("c", 0), ("b", 1)]);
    assert!(
        v[1].record
            .changes
            .iter()
            .any(|c| c.field == "dataset.seed" && c.from == "7" && c.to == "9")
    );
}

#[test]
fn a_tool_variant_reuses_its_tool_through_an_anchor() {
    let l = lab(r#"  - <<: *restic
    name: restic@tuned
    args: {restore: [--sparse]}
"#)
    .unwrap();
    let plan = l.to_plan("r", &PlanOverrides::default()).unwrap();
    assert_eq!(plan.tools.len(), 2);
    assert_eq!(plan.tools[1].name, "restic@tuned");
    assert_eq!(plan.tools[1].binary, "/usr/local/bin/restic@tuned");
    assert_eq!(
        plan.tools[1].commands["restore"]
            .argv
            .last()
            .map(String::as_str),
        Some("--sparse")
    );
    assert_eq!(
        labrun_evidence::variant::tool_base(&plan.tools[1].name),
        "restic"
    );
}

#[test]
fn secrets_set_by_a_variant_stay_out_of_its_changes() {
    let l = lab(r#"variants:
  - {name: other-password, tools: {restic: {env: {RESTIC_PASSWORD: hunter2, GOGC: "50"}}}}
"#)
    .unwrap();
    let v = l.variants().unwrap();
    let text = serde_json::to_string(&v[0].record).unwrap();
    assert!(!text.contains("hunter2"), "{text}");
    // A changed secret is still a change: said, never shown.
    assert!(
        text.contains(r#""field":"tools.restic.env.RESTIC_PASSWORD","from":"<redacted>","to":"<another secret>""#),
        "{text}"
    );
    assert!(text.contains("GOGC"), "{text}");
}

/// Each mistake is reported at the variant that made it, saying what to do.
#[test]
fn mistakes_point_at_the_variant() {
    let cases: &[(&str, &str)] = &[
        (
            "variants:\n  - {name: x, tools: {resitc: {env: {A: b}}}}\n",
            "variants[0].tools.resitc: the lab has no tool `resitc` (did you mean `restic`?)",
        ),
        (
            "variants:\n  - {name: x, tools: {restic: {args: {prune: [-v]}}}}\n",
            "has no command `prune` to add arguments to",
        ),
        (
            "variants:\n  - {name: x}\n  - {name: x, vm: {vcpus: 2}}\n",
            "the variant name `x` is used twice",
        ),
        (
            "variants:\n  - {name: Big}\n",
            "`Big` is not a usable variant name",
        ),
        (
            "variants:\n  - {name: a}\nmatrix:\n  m:\n    - {name: b}\n",
            "either as `variants:` or as the product of a `matrix:`, not both",
        ),
        (
            "matrix:\n  m1:\n    - {name: a, vm: {memory: 1GiB}}\n  m2:\n    - {name: b, vm: {memory: 2GiB}}\n",
            "`vm.memory` is already set by `matrix.m1[0].vm`",
        ),
        (
            "variants:\n  - {name: tiny, vm: {memory: 1MiB}}\n",
            "in variant `tiny`: vm.memory:",
        ),
        (
            "variants:\n  - {name: x, dataset: {scale: 1000}}\n",
            "variants[0].dataset.scale",
        ),
        ("variants:\n  - {name: x, vm: {memroy: 1GiB}}\n", "memroy"),
    ];
    for (extra, expected) in cases {
        let err = lab(extra).expect_err(extra);
        assert!(err.contains(expected), "{extra}\n--- got:\n{err}");
    }
}

#[test]
fn a_variant_problem_carries_the_variants_line() {
    let err = lab("variants:\n  - {name: ok}\n  - {name: x, tools: {nope: {}}}\n").unwrap_err();
    // BASE is 24 lines; `variants:` is line 25, the second entry line 27.
    assert!(err.contains("lab.yaml:27:"), "{err}");
}

#[test]
fn check_lists_each_variant_and_what_it_changes() {
    let l = lab(r#"variants:
  - {name: small, vm: {memory: 512MiB}}
  - {name: published}
"#)
    .unwrap();
    let text = l.describe(None);
    assert!(
        text.contains("variants (2, in run order; 2 VM boot(s)"),
        "{text}"
    );
    assert!(
        text.contains("  small (boot 1): vm.memory 3GiB -> 512MiB"),
        "{text}"
    );
    assert!(
        text.contains("  published (boot 2): the lab as written"),
        "{text}"
    );
}
