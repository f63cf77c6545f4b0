//! Each dataset profile through a whole run with the real restic (Debian's,
//! installed by scripts/host-setup.sh): two cycles, so the second tool cycle
//! starts from a source reset after the first one's change, and every
//! restore is verified against its manifest.

mod common;

use common::*;
use labrun_dataset::{DatasetParams, DatasetProfile};
use labrun_evidence::{Manifest, Step};
use serde_json::json;

const RESTIC: &str = "/usr/bin/restic";

fn restic() -> serde_json::Value {
    json!({
        "name": "restic", "version": "0.14", "binary": RESTIC,
        "env": {"RESTIC_PASSWORD": PASSWORD, "RESTIC_CACHE_DIR": "{work}/cache"},
        "secret_env": ["RESTIC_PASSWORD"],
        "commands": {
            "init": {"argv": ["{bin}", "init", "-r", "{repo}"]},
            "backup": {"argv": ["{bin}", "backup", "-r", "{repo}", "."], "cwd": "{source}"},
            // Debian's restic 0.14 has no --sparse: the vm-image restore
            // fills its holes with zeros, which verify (content) accepts.
            "restore": {"argv": ["{bin}", "restore", "latest", "-r", "{repo}", "--target", "{target}"]}
        }
    })
}

fn run_profile(profile: DatasetProfile, scale: f64) {
    assert!(
        std::path::Path::new(RESTIC).exists(),
        "{RESTIC} is missing: run scripts/host-setup.sh (installs restic)"
    );
    let lab = Lab::new();
    let mut plan = base_plan("shapes", 2, vec![restic()]);
    plan["dataset"] = json!({
        "kind": "synthetic", "seed": 11, "scale": scale, "profile": profile.as_str()
    });
    let out = lab.run(&plan);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{profile}: {}\n{}",
        stderr(&out),
        lab.failures()
    );
    let records = lab.records();
    assert!(
        records.iter().all(|r| r.ok),
        "{profile}: {}",
        lab.failures()
    );
    for cycle in 1..=2 {
        assert_eq!(steps_of(&records, "restic", cycle), full_cycle());
        let verify = records
            .iter()
            .find(|r| r.cycle == cycle && r.step == Step::VERIFY)
            .and_then(|r| r.verify.clone())
            .unwrap_or_else(|| panic!("{profile}: no verify in cycle {cycle}"));
        assert!(verify.passed, "{profile} c{cycle}: {verify:?}");
    }

    // The generated tree is the profile's, and the change made another one.
    let read = |name: &str| -> Manifest {
        let path = lab.evidence().join(format!("manifests/{name}.jsonl"));
        Manifest::read_from(std::io::BufReader::new(std::fs::File::open(path).unwrap())).unwrap()
    };
    let (generated, changed) = (read("generated"), read("changed"));
    let fp = labrun_dataset::footprint(&DatasetParams {
        seed: 11,
        scale,
        profile,
    });
    assert_eq!(generated.total_file_bytes(), fp.bytes, "{profile}");
    assert_ne!(generated, changed, "{profile}");
    assert_eq!(records[0].files, Some(fp.files), "{profile}");
}

#[test]
fn a_run_of_tiny_files_restores_and_verifies() {
    run_profile(DatasetProfile::TinyFiles, 0.002);
}

#[test]
fn a_run_of_media_restores_and_verifies() {
    run_profile(DatasetProfile::Media, 0.001);
}

#[test]
fn a_run_of_a_vm_image_restores_and_verifies() {
    run_profile(DatasetProfile::VmImage, 0.001);
}

#[test]
fn gen_change_verify_take_a_profile() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("disk");
    let agent = |args: &[&str]| {
        let o = std::process::Command::new(AGENT)
            .args(args)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        (o.status.success(), text)
    };
    let dir = src.to_str().unwrap();
    let manifest = tmp.path().join("disk.manifest.jsonl");
    let m = manifest.to_str().unwrap();
    let common = ["--profile", "vm-image", "--scale", "0.001", "--seed", "2"];
    let (ok, text) = agent(&[&["gen", "--out", dir][..], &common].concat());
    assert!(ok, "{text}");
    assert!(
        text.contains("sparse disk image") && text.contains("allocated on disk"),
        "{text}"
    );
    let (ok, text) = agent(&["verify", "--dir", dir, "--manifest", m]);
    assert!(ok, "{text}");
    let (ok, text) = agent(&[&["change", "--dir", dir][..], &common].concat());
    assert!(ok, "{text}");
    assert!(
        text.contains("vm-image") && text.contains("regions"),
        "{text}"
    );
    let (ok, text) = agent(&["verify", "--dir", dir, "--manifest", m]);
    assert!(ok, "{text}");
    let (ok, text) = agent(&["gen", "--out", dir, "--profile", "photos"]);
    assert!(
        !ok && text.contains("tiny-files, media, vm-image"),
        "{text}"
    );
}
