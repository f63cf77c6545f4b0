//! `labrun bench` of a lab with variants, end to end without a VM: the lab
//! names an existing machine (an OpenSSH server on 127.0.0.1 that this test
//! starts), and its second variant changes the dataset and a tool's flags. Each
//! variant is a complete run of its own; the comparison sets them side by
//! side; `labrun report` re-makes everything from raw evidence.

mod common;
mod run_output;

use labrun_ssh::test_support::Sshd;
use run_output::{only_run_dir, records};
use std::path::Path;

const VARIANTS: &str = r#"variants:
  - name: baseline
  - name: tuned
    dataset: {seed: 9}
    tools: {restic: {args: {backup: [--compression, max]}}}
"#;

/// A lab on the test's sshd (restic, seed 7, scale 0.001) with `variants`
/// appended.
fn lab_with_variants(
    dir: &Path,
    sshd: &Sshd,
    name: &str,
    cycles: u32,
    variants: &str,
) -> std::path::PathBuf {
    let lab = common::target_lab(
        dir,
        sshd,
        "lab.yaml",
        name,
        "dataset: {kind: synthetic, seed: 7, scale: 0.001}",
        cycles,
    );
    let mut text = std::fs::read_to_string(&lab).unwrap();
    text.push_str(variants);
    std::fs::write(&lab, text).unwrap();
    lab
}

fn manifest_digest(variant: &Path) -> String {
    let rec = records(variant)
        .into_iter()
        .find(|r| r["step"] == "generate" && r["tool"] == "")
        .expect("the dataset's generate record");
    rec.to_string()
}

#[test]
#[ignore = "runs real backup tools end to end over SSH, for minutes: `make test` runs it"]
fn every_variant_runs_as_a_run_of_its_own_and_is_compared() {
    let sshd = Sshd::start().expect("sshd");
    let dir = tempfile::tempdir().expect("tempdir");
    let lab = lab_with_variants(dir.path(), &sshd, "variants", 1, VARIANTS);
    let results = dir.path().join("results");

    let out = common::bench_ok(&lab, &results, "restic", &[], &sshd);
    assert!(
        out.contains("variant 2/2 `tuned`: dataset.seed 7 -> 9; tools.restic.args.backup - -> --compression max"),
        "{out}"
    );
    let run = only_run_dir(&results);
    let index: labrun_evidence::variant::VariantsIndex =
        serde_json::from_str(&std::fs::read_to_string(run.join("variants.json")).unwrap()).unwrap();
    let names: Vec<&str> = index.variants.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["baseline", "tuned"]);

    for name in names {
        let v = run.join("variants").join(name);
        // A complete run: every tool's timed steps and a passing restore.
        let recs = records(&v);
        for tool in ["restic"] {
            for step in [
                "init",
                "backup_full",
                "backup_incremental",
                "restore",
                "verify",
            ] {
                let r = recs
                    .iter()
                    .find(|r| r["tool"] == tool && r["step"] == step)
                    .unwrap_or_else(|| panic!("{name}: no {tool} {step} record"));
                assert_eq!(r["ok"], true, "{name} {tool} {step}: {r}");
            }
        }
        // Its evidence says what it changed, beside the records.
        let said: labrun_evidence::variant::VariantRecord =
            serde_json::from_str(&std::fs::read_to_string(v.join("raw/variant.json")).unwrap())
                .unwrap();
        assert_eq!(said.name, name);
        assert!(v.join("summary.md").is_file(), "{name}: no summary");
    }
    // The flags reached the tool: tuned's backups ran with them, the
    // baseline's did not.
    let argv_of = |variant: &str| {
        records(&run.join("variants").join(variant))
            .into_iter()
            .find(|r| r["tool"] == "restic" && r["step"] == "backup_full")
            .map(|r| r["argv"].to_string())
            .unwrap()
    };
    assert!(argv_of("tuned").contains(r#""--compression","max""#));
    assert!(!argv_of("baseline").contains("--compression"));
    // Another seed, other bytes.
    assert_ne!(
        manifest_digest(&run.join("variants/tuned")),
        manifest_digest(&run.join("variants/baseline"))
    );

    let md = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(md.contains("| Tool | baseline | tuned |"), "{md}");
    assert!(
        md.contains("`tools.restic.args.backup` - -> --compression max"),
        "{md}"
    );
    assert!(md.contains("No tool failed a step in any variant."), "{md}");

    // Re-made from raw evidence alone.
    std::fs::remove_file(run.join("summary.md")).unwrap();
    let report = std::process::Command::new(env!("CARGO_BIN_EXE_labrun"))
        .arg("report")
        .arg(&run)
        .output()
        .unwrap();
    assert!(report.status.success(), "{report:?}");
    assert_eq!(std::fs::read_to_string(run.join("summary.md")).unwrap(), md);
}

/// (variant, cycle) of each tool record's start, in the order they ran.
fn starts(run: &Path, names: &[&str]) -> Vec<(u64, String, u64)> {
    let mut out: Vec<(u64, String, u64)> = names
        .iter()
        .flat_map(|name| {
            records(&run.join("variants").join(name))
                .into_iter()
                .filter(|r| r["step"] == "init")
                .map(|r| {
                    (
                        r["started_unix_ms"].as_u64().unwrap(),
                        name.to_string(),
                        r["cycle"].as_u64().unwrap(),
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect();
    out.sort();
    out
}

#[test]
#[ignore = "runs real backup tools end to end over SSH, for minutes: `make test` runs it"]
fn variants_sharing_the_machine_run_cycle_by_cycle_and_generate_each_dataset_once() {
    let sshd = Sshd::start().expect("sshd");
    let dir = tempfile::tempdir().expect("tempdir");
    let lab = lab_with_variants(
        dir.path(),
        &sshd,
        "rounds",
        2,
        r#"variants:
  - name: baseline
  - name: tuned
    tools: {restic: {args: {backup: [--compression, max]}}}
  - name: other-data
    dataset: {seed: 9}
"#,
    );
    let results = dir.path().join("results");

    let out = common::bench_ok(&lab, &results, "restic", &[], &sshd);
    assert!(
        out.contains("3 variants share this machine: 6 rounds, cycle by cycle"),
        "{out}"
    );
    let run = only_run_dir(&results);
    let names = ["baseline", "tuned", "other-data"];
    // Cycle by cycle, the order rotated: no variant's cycle 2 began before
    // every variant's cycle 1, and cycle 2 began with the second variant.
    let order: Vec<(String, u64)> = starts(&run, &names)
        .into_iter()
        .map(|(_, name, cycle)| (name, cycle))
        .collect();
    let want: Vec<(String, u64)> = [
        ("baseline", 1),
        ("tuned", 1),
        ("other-data", 1),
        ("tuned", 2),
        ("other-data", 2),
        ("baseline", 2),
    ]
    .iter()
    .map(|(n, c)| (n.to_string(), *c))
    .collect();
    assert_eq!(order, want);

    // Each variant: one run of two cycles, all passed, summarized as such.
    for name in names {
        let v = run.join("variants").join(name);
        let recs = records(&v);
        assert!(
            recs.iter().all(|r| r["ok"] == true),
            "{name}: a step failed"
        );
        assert!(v.join("raw/done.json").is_file(), "{name}: not finished");
        let md = std::fs::read_to_string(v.join("summary.md")).unwrap();
        assert!(!md.contains("Cycles missing"), "{name}: {md}");
        let plan: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(v.join("raw/plan.json")).unwrap())
                .unwrap();
        assert_eq!(plan["round"]["run_cycles"], 2, "{name}: {plan}");
    }

    // Two datasets, each generated once: every other round moved the
    // kept one in (its argv says from where), and none is left behind.
    let dataset_steps: Vec<(String, String)> = names
        .iter()
        .flat_map(|name| {
            records(&run.join("variants").join(name))
                .into_iter()
                .filter(|r| r["step"] == "generate" && r["tool"] == "")
                .map(|r| {
                    (
                        name.to_string(),
                        r["argv"][0].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let generated = dataset_steps.iter().filter(|(_, a)| a != "mv").count();
    assert_eq!(generated, 2, "{dataset_steps:?}");
    assert_eq!(dataset_steps.len(), 6, "{dataset_steps:?}");
    let store = dir.path().join("remote/datasets");
    assert!(store.is_dir(), "the machine's dataset store was used");
    let left: Vec<_> = common::files_under(&store);
    assert!(left.is_empty(), "left in the dataset store: {left:?}");

    // The comparison as for variants run one after another.
    let md = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(
        md.contains("| Tool | baseline | tuned | other-data |"),
        "{md}"
    );
}
