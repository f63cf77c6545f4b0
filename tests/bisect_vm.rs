//! Verdicts that decide on this noisy host, in the VM (guests under TCG):
//! the toy backup tool of `toy_repo`, its restore made about 2.2x slower at
//! a known commit, bisected with `labrun bisect`'s defaults (3 pairs a
//! probe, up to 3 more while open, a 5% margin), each probe a run in the
//! lab's VM. The bisection must name the planted commit within
//! ceil(log2 n) + 1 probes, and its bad end's run, judged on the full
//! backup, must say that is not slower. Then an A/A pair (one binary under two
//! names, `noise_floor:`) with pairs added one at a time under the
//! sequential rule must never say slower or faster.

mod run_output;
mod toy_repo;
#[path = "common/vm_lab.rs"]
mod vm_lab;

use toy_repo::Plant;
use vm_lab::{Lab, ONE_VM_AT_A_TIME, ensure_image, require_vm_host};

/// The default lab's `vm:` block: the image every VM test boots (one
/// cached build).
fn default_machine() -> String {
    let shipped = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/lab.yaml"))
        .expect("lab.yaml");
    let start = shipped
        .find("\nvm:\n")
        .expect("the default lab's vm: block");
    let end = shipped[start..]
        .find("\ndataset:")
        .expect("dataset: after vm:");
    shipped[start + 1..start + end].to_string()
}

/// The toy's repository (restore planted) under a scratch folder, and a
/// VM lab `name` of it whose image is ready.
struct ToyInVm {
    _scratch: tempfile::TempDir,
    repo: std::path::PathBuf,
    ids: Vec<String>,
    lab: Lab,
}

fn toy_in_vm(name: &str) -> ToyInVm {
    require_vm_host();
    let scratch = tempfile::tempdir().expect("tempdir");
    let repo = scratch.path().join("toy");
    let ids = toy_repo::write_planted(&repo, Plant::Restore);
    let lab = Lab::with_yaml(
        name,
        &toy_repo::vm_lab(name, &default_machine(), &repo, &ids[0]),
    );
    ensure_image(&lab);
    ToyInVm {
        _scratch: scratch,
        repo,
        ids,
        lab,
    }
}

/// `labrun COMMAND toy ... --phase PHASE --results <lab root>/<folder>`
/// with every other option at its default; its output, and the folder.
fn toy_command(
    lab: &Lab,
    command: &[&str],
    phase: &str,
    folder: &str,
) -> (std::process::Output, std::path::PathBuf) {
    let results = lab.root.join(folder);
    let mut args = command.to_vec();
    args.extend(["--phase", phase, "--results"]);
    args.push(results.to_str().expect("utf-8 path"));
    (lab.run(&args), results)
}

fn text(out: &std::process::Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
#[ignore = "needs root, libvirtd, QEMU and Go builds; boots a VM per probe for tens of minutes: `make test` runs it"]
fn bisect_in_the_vm_names_the_planted_restore_step_with_the_defaults() {
    let _one = ONE_VM_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let toy = toy_in_vm("vmtest-bisect");
    let (lab, ids) = (&toy.lab, &toy.ids);
    let bisect = ["bisect", "toy", "--good", "v1", "--bad", "v3"];

    // Restore, with every default of `bisect`.
    let (out, results) = toy_command(lab, &bisect, "restore", "restore");
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    let slow = &ids[toy_repo::SLOW_COMMIT];
    assert!(said.contains(&format!("first bad commit {slow}")), "{said}");
    let folder = run_output::only_run_dir(&results);
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("bisect.json")).expect("bisect.json"),
    )
    .expect("json");
    let probes = state["outcomes"]
        .as_array()
        .expect("outcomes")
        .iter()
        .filter(|o| !o.is_null())
        .count();
    // 8 commits from v1 to v3: the bad end, then ceil(log2 7) = 3 halvings.
    assert!((2..=4).contains(&probes), "{probes} probes\n{said}");
    let md = std::fs::read_to_string(folder.join("bisect.md")).expect("bisect.md");
    assert!(md.contains(&slow[..12]), "{md}");
    // Each probe was a run of its own in the VM, and nothing is left up.
    for run in std::fs::read_dir(folder.join("runs")).expect("runs") {
        let run = run.expect("run").path();
        let env = std::fs::read_to_string(run.join("raw/environment.json")).expect("environment");
        assert!(env.to_lowercase().contains("\"tcg\""), "{env}");
    }
    lab.assert_nothing_left();

    // The full backup did not change: the bad end's probe, which ran both
    // ends through the whole protocol, says its backup is not slower (and
    // its restore slower), by `labrun compare`'s paired statistics.
    let bad_end = state["outcomes"][ids.len() - 1]["run"]
        .as_str()
        .unwrap_or_else(|| panic!("the bad end's run in {state}"))
        .to_string();
    let (good, bad) = (
        format!("toy@{}", ids[0]),
        format!("toy@{}", ids[ids.len() - 1]),
    );
    let out = lab.run(&[
        "compare",
        &bad_end,
        "--baseline",
        &good,
        "--candidate",
        &bad,
        "--json",
    ]);
    let comparison: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    let verdict = |phase: &str| {
        comparison["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .find(|r| r["phase"] == phase && r["figure"] == "wall_time")
            .unwrap_or_else(|| panic!("no {phase} wall time in {comparison}"))["verdict"]
            .clone()
    };
    assert_eq!(verdict("restore"), "worse", "{comparison}");
    assert_ne!(verdict("backup_full"), "worse", "{comparison}");

    // A/A in the VM: the first commit's binary under two names, pairs
    // added under the sequential rule while a row is open.
    let series = toy_repo::vm_lab("vmtest-aa", &default_machine(), &toy.repo, &ids[0]);
    let head = &series[..series.find("tools:\n").expect("tools")];
    let commands = &series[series.find("    commands:\n").expect("commands")..];
    let aa_yaml = format!(
        "{head}noise_floor: {{tool: toy}}\ntools:\n  - name: toy\n    version: \"0.0\"\n    artifact:\n      source:\n        git: {{repo: \"file://{}\", commit: \"{}\"}}\n        build:\n          go: {{package: ., binary: toy, toolchain: go1.26.8}}\n      sha256: \"{}\"\n{commands}",
        toy.repo.display(),
        ids[0],
        "0".repeat(64)
    );
    let aa = Lab::with_yaml("vmtest-aa", &aa_yaml);
    let out = aa.run(&["pin", "toy"]);
    assert!(out.status.success(), "{}", text(&out));
    let aa_results = aa.root.join("results");
    let out = aa.run(&[
        "bench",
        "--up",
        "--down",
        "--plain",
        "--until-conclusive",
        "3",
        "--results",
        aa_results.to_str().expect("utf-8 path"),
    ]);
    let said = text(&out);
    // An A/A pair is never worse: bench's exit status is 0.
    assert_eq!(out.status.code(), Some(0), "{said}");
    let run = run_output::only_run_dir(&aa_results);
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(run.join("summary.json")).expect("summary.json"),
    )
    .expect("json");
    let records = run_output::records(&run);
    assert!(
        records.iter().any(|r| r["tool"] == "toy@aa"),
        "the copy ran in every cycle beside the tool"
    );
    let comparisons = summary["comparisons"].as_array().expect("comparisons");
    let aa_pair = comparisons
        .iter()
        .find(|c| c["candidate"]["tool"] == "toy@aa")
        .unwrap_or_else(|| panic!("the A/A pair in {summary}"));
    for row in aa_pair["rows"].as_array().expect("rows") {
        assert!(
            row["verdict"] != "worse" && row["verdict"] != "better",
            "an A/A row decided a difference: {row}"
        );
    }
    // The sequential rule judged it: its looks were fixed beforehand.
    let added: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(run.join("raw/added-pairs.json")).expect("added-pairs.json"),
    )
    .expect("json");
    assert!(added["looks"].as_u64().is_some_and(|l| l >= 1), "{added}");
    println!("A/A in the VM: {}", aa_pair["rows"]);
    aa.assert_nothing_left();
}

/// `labrun track` in the VM: every third commit of the toy's branch run
/// paired with its anchor (the first commit) as a run of its own in the
/// lab's VM, each imported into the store; the restore step lies between
/// two points three commits apart, so it is flagged and bisected, and the
/// planted commit is named.
#[test]
#[ignore = "needs root, libvirtd, QEMU and Go builds; boots a VM per run for tens of minutes: `make test` runs it"]
fn track_in_the_vm_flags_the_restore_step_and_names_the_planted_commit() {
    let _one = ONE_VM_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let toy = toy_in_vm("vmtest-track");
    let (lab, ids) = (&toy.lab, &toy.ids);
    let (out, results) = toy_command(lab, &["track", "toy", "--every", "3"], "restore", "results");
    let said = text(&out);
    // Exit 1: a new step slower.
    assert_eq!(out.status.code(), Some(1), "{said}");
    let slow = &ids[toy_repo::SLOW_COMMIT];
    assert!(said.contains(&format!("first bad commit {slow}")), "{said}");
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(results.join("track-toy-main/track.json")).expect("track.json"),
    )
    .expect("json");
    let points: Vec<&str> = state["points"]
        .as_array()
        .expect("points")
        .iter()
        .filter_map(|p| p["commit"].as_str())
        .collect();
    assert_eq!(
        points,
        [&ids[3], &ids[6], &ids[7]].map(String::as_str),
        "{state}"
    );
    assert_eq!(
        state["steps"][0]["found"]["commit"],
        slow.as_str(),
        "{state}"
    );
    for p in state["points"].as_array().expect("points") {
        assert!(
            p["stored"]
                .as_str()
                .is_some_and(|d| d.starts_with("sha256:")),
            "every run imported: {p}"
        );
    }
    lab.assert_nothing_left();
}
