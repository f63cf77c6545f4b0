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

fn manifest_digest(variant: &Path) -> String {
    let rec = records(variant)
        .into_iter()
        .find(|r| r["step"] == "generate" && r["tool"] == "")
        .expect("the dataset's generate record");
    rec.to_string()
}

#[test]
fn every_variant_runs_as_a_run_of_its_own_and_is_compared() {
    let sshd = Sshd::start().expect("sshd");
    let dir = tempfile::tempdir().expect("tempdir");
    let lab = common::target_lab(
        dir.path(),
        &sshd,
        "lab.yaml",
        "variants",
        "dataset: {kind: synthetic, seed: 7, scale: 0.001}",
        1,
    );
    let mut text = std::fs::read_to_string(&lab).unwrap();
    text.push_str(VARIANTS);
    std::fs::write(&lab, text).unwrap();
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
