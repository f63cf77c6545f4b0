//! Every lab the repository ships loads, validates, describes itself and
//! turns into a plan the agent accepts.

use labrun_artifact::{ArtifactSource, BuildRecipe};
use labrun_evidence::Plan;
use labrun_lab::{Lab, PlanOverrides};
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn shipped() -> Vec<PathBuf> {
    let root = repo_root();
    let mut labs = vec![root.join("lab.yaml")];
    for entry in std::fs::read_dir(root.join("labs")).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            labs.push(p);
        }
    }
    assert!(labs.len() >= 2, "expected lab.yaml and labs/*.yaml");
    labs
}

#[test]
fn every_shipped_lab_loads_and_validates() {
    for path in shipped() {
        let lab = Lab::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(lab.validate().is_empty(), "{}", path.display());
        assert_eq!(lab.digest().len(), 6);
        let text = lab.describe(Some(0.01));
        for t in &lab.tools {
            assert!(
                text.contains(&t.name) && text.contains(&t.artifact.sha256),
                "{text}"
            );
        }
    }
}

#[test]
fn plans_round_trip_through_json_and_keep_secrets_in_env_only() {
    for path in shipped() {
        let lab = Lab::load(&path).unwrap();
        let plan = lab
            .to_plan(&lab.run_id("20261129T1851Z"), &PlanOverrides::default())
            .unwrap();
        let json = serde_json::to_string(&plan).unwrap();
        // Plan refuses unknown fields: this is what the agent will read.
        let back: Plan = serde_json::from_str(&json).unwrap();
        assert_eq!(back, plan);
        assert_eq!(plan.cycles, lab.cycles);
        assert_eq!(plan.step_timeout_secs, Some(lab.timeouts.step.as_secs()));
        for tool in &plan.tools {
            assert!(
                !tool.secret_env.is_empty(),
                "{}: {} has no secret",
                path.display(),
                tool.name
            );
            assert!(tool.binary.starts_with('/'));
            for name in &tool.secret_env {
                let secret = &tool.env[name];
                // only in env: once in the JSON (its env value), never in a command
                assert_eq!(
                    json.matches(secret.as_str()).count(),
                    plan.tools
                        .iter()
                        .map(|t| t.env.values().filter(|v| *v == secret).count())
                        .sum::<usize>()
                );
                let cmds = serde_json::to_string(&tool.commands).unwrap();
                assert!(!cmds.contains(secret.as_str()));
                assert_eq!(tool.redacted().env[name], "<redacted>");
            }
        }
        // and the description never prints a secret
        let text = lab.describe(None);
        for t in &lab.tools {
            for s in &t.secret_env {
                assert!(!text.contains(&t.env[s]), "{text}");
            }
        }
    }
}

#[test]
fn overrides_change_scale_cycles_and_tools() {
    let lab = Lab::load(&repo_root().join("labs/restic-borg-kopia.yaml")).unwrap();
    let o = PlanOverrides {
        scale: Some(0.002),
        cycles: Some(1),
        tools: Some(vec!["kopia".into(), "restic".into()]),
    };
    let plan = lab.to_plan("r", &o).unwrap();
    assert_eq!(plan.cycles, 1);
    let labrun_evidence::DatasetPlan::Synthetic {
        scale, change_seed, ..
    } = plan.dataset
    else {
        panic!("restic-borg-kopia.yaml has the synthetic dataset")
    };
    assert_eq!(scale, 0.002);
    assert_eq!(change_seed, Some(2));
    // lab order, not command-line order
    let names: Vec<_> = plan.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["restic", "kopia"]);
    assert_eq!(plan.tools[1].binary, "/usr/local/bin/kopia");

    let err = lab
        .to_plan(
            "r",
            &PlanOverrides {
                tools: Some(vec!["resitc".into()]),
                ..Default::default()
            },
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no tool `resitc` (did you mean `restic`?)"),
        "{err}"
    );
    let err = lab
        .to_plan(
            "r",
            &PlanOverrides {
                scale: Some(200.0),
                ..Default::default()
            },
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("--scale: scale 200 is out of range: use a number from 0.0001 to 100"),
        "{err}"
    );
}

#[test]
fn the_default_lab_is_the_published_comparison() {
    let lab = Lab::load(&repo_root().join("lab.yaml")).unwrap();
    let tools: Vec<(&str, &str)> = lab
        .tools
        .iter()
        .map(|t| (t.name.as_str(), t.version.as_str()))
        .collect();
    assert_eq!(
        tools,
        [("restic", "0.19.1"), ("borg", "1.4.5"), ("kopia", "0.23.1")]
    );
    // restic and kopia from their Go modules at the release tags, borg from
    // sid's package, in a sid guest.
    for t in &lab.tools {
        match t.name.as_str() {
            "restic" | "kopia" => {
                let ArtifactSource::Build(BuildRecipe::Go(go)) = &t.artifact.source else {
                    panic!("{}: expected a Go module build", t.name)
                };
                assert_eq!(go.version, format!("v{}", t.version));
                assert_eq!(go.toolchain, "go1.26.8");
            }
            _ => {
                let ArtifactSource::Apt(apt) = &t.artifact.source else {
                    panic!("{}: expected an apt package", t.name)
                };
                assert_eq!(apt.suite.as_deref(), Some("sid"));
            }
        }
    }
    let labrun_lab::Machine::Vm(vm) = lab.machine() else {
        panic!("the default lab runs in a VM")
    };
    assert_eq!(vm.image.suite(), Some("sid"));
    assert!(lab.source.text.contains("--encryption=repokey-blake2"));
    let plan = lab.to_plan("r", &PlanOverrides::default()).unwrap();
    let bins: Vec<_> = plan.tools.iter().map(|t| t.binary.as_str()).collect();
    assert_eq!(
        bins,
        [
            "/usr/local/bin/restic",
            "/usr/bin/borg",
            "/usr/local/bin/kopia"
        ]
    );
}

#[test]
fn the_debian12_lab_uses_apt_and_installs_debs_where_needed() {
    let lab = Lab::load(&repo_root().join("labs/debian12.yaml")).unwrap();
    for t in &lab.tools {
        assert!(
            matches!(t.artifact.source, ArtifactSource::Apt(_)),
            "{} must come from apt",
            t.name
        );
    }
    let plan = lab.to_plan("r", &PlanOverrides::default()).unwrap();
    let bins: Vec<_> = plan.tools.iter().map(|t| t.binary.as_str()).collect();
    assert_eq!(
        bins,
        [
            "/usr/local/bin/restic",
            "/usr/bin/borg",
            "/usr/bin/duplicity"
        ]
    );
}

#[test]
fn the_slow_disk_lab_is_the_published_tools_on_hdd_and_unthrottled() {
    let root = repo_root();
    let published = Lab::load(&root.join("lab.yaml")).unwrap();
    let lab = Lab::load(&root.join("labs/slow-disk.yaml")).unwrap();
    let variants = lab.variants().unwrap();
    let got: Vec<(&str, labrun_lab::DiskProfile)> = variants
        .iter()
        .map(|v| {
            (
                v.record.name.as_str(),
                v.lab.vm.as_ref().unwrap().disk_profile,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("hdd", labrun_lab::DiskProfile::Hdd),
            ("unthrottled", labrun_lab::DiskProfile::Unthrottled)
        ]
    );
    // A boot each: the disk's speed is part of the machine.
    assert_eq!(variants[0].record.boot + 1, variants[1].record.boot);
    for v in &variants {
        // Everything else is the published lab's.
        assert_eq!(v.lab.tools, published.tools, "{}", v.record.name);
        assert_eq!(v.lab.protocol, published.protocol);
        assert_eq!(v.lab.dataset, published.dataset);
        let mut vm = v.lab.vm.clone().unwrap();
        vm.disk_profile = labrun_lab::DiskProfile::Unthrottled;
        assert_eq!(Some(vm), published.vm, "{}", v.record.name);
    }
}

#[test]
fn the_data_shapes_lab_runs_the_default_labs_tools_on_each_profile() {
    use labrun_evidence::{DatasetPlan, DatasetProfile};
    let lab = Lab::load(&repo_root().join("labs/data-shapes.yaml")).unwrap();
    let default = Lab::load(&repo_root().join("lab.yaml")).unwrap();
    assert!(lab.validate().is_empty(), "{:?}", lab.validate());
    // Same tools, pins and commands as the default lab; same VM.
    assert_eq!(lab.tools, default.tools);
    assert_eq!(lab.vm, default.vm);
    let variants = lab.variants().unwrap_or_else(|p| panic!("{p:?}"));
    let mut seen = Vec::new();
    for v in &variants {
        let plan = v.lab.to_plan("r", &PlanOverrides::default()).unwrap();
        let DatasetPlan::Synthetic { profile, scale, .. } = plan.dataset else {
            panic!("{}: a synthetic dataset", v.record.name)
        };
        assert_eq!(
            profile.as_str(),
            v.record.name,
            "the variant names its profile"
        );
        assert_eq!(scale, 0.1);
        let tools: Vec<_> = plan.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(tools, ["restic", "borg", "kopia"]);
        seen.push(profile);
    }
    assert_eq!(seen, DatasetProfile::ALL);
}

#[test]
fn the_restore_over_lab_restores_s2_over_s1_with_each_tools_own_mode() {
    let lab = Lab::load(&repo_root().join("labs/restore-over.yaml")).unwrap();
    let default = Lab::load(&repo_root().join("lab.yaml")).unwrap();
    assert!(lab.validate().is_empty(), "{:?}", lab.validate());
    assert_eq!(lab.vm, default.vm);
    let plan = lab.to_plan("r", &PlanOverrides::default()).unwrap();
    let over: Vec<_> = labrun_evidence::protocol::flat(&plan.protocol)
        .filter_map(|s| s.as_run())
        .filter(|r| r.over.is_some())
        .collect();
    assert_eq!(over.len(), 1, "{over:?}");
    assert_eq!(over[0].restores.as_deref(), Some("s2"));
    assert_eq!(over[0].over.as_deref(), Some("s1"));
    let tools: Vec<_> = plan.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["restic", "borg", "kopia"]);
    for (tool, pinned) in lab.tools.iter().zip(&default.tools) {
        // The default lab's pinned bytes, and a restore_over of its own.
        assert_eq!(tool.artifact, pinned.artifact, "{}", tool.name);
        assert!(tool.commands.contains_key("restore_over"), "{}", tool.name);
    }
    let text = lab.describe(None);
    assert!(text.contains("restores s2 over s1's tree"), "{text}");
    let restic = &lab.tools[0].commands["restore_over"];
    let argv = serde_json::to_string(restic).unwrap();
    assert!(
        argv.contains("--delete") && argv.contains("always"),
        "{argv}"
    );
}
