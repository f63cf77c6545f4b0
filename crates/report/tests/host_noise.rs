//! The host's noise sources recorded in environment.json reach the summary
//! as warnings, each with the command that removes it; a run recorded
//! before them reads as it did.

mod common;
use common::copy_dir;
use std::path::Path;

fn two_tools_with(noise: Option<serde_json::Value>) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("two-tools");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/two-tools"),
        &run,
    );
    if let Some(noise) = noise {
        let path = run.join("raw/environment.json");
        let mut env: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        env["noise"] = noise;
        std::fs::write(&path, serde_json::to_vec_pretty(&env).unwrap()).unwrap();
    }
    (tmp, run)
}

fn noise_warnings(run: &Path) -> Vec<String> {
    labrun_report::summarize(run)
        .unwrap()
        .warnings
        .into_iter()
        .filter(|w| w.kind == labrun_report::warning::WarningKind::HostNoise)
        .map(|w| w.message)
        .collect()
}

#[test]
fn each_noise_source_is_warned_about_with_its_fix() {
    let (_tmp, run) = two_tools_with(Some(serde_json::json!({
        "before": {
            "cores": [0, 1],
            "governors": {"0": "powersave", "1": "powersave"},
            "boost": {"on": true, "control": "intel_pstate_no_turbo"},
            "transparent_hugepages": "always"
        },
        "after": {
            "cores": [0, 1],
            "governors": {"0": "powersave", "1": "powersave"},
            "memory": {"swap_used_mib": 64}
        }
    })));
    let w = noise_warnings(&run);
    assert_eq!(w.len(), 4, "{w:#?}");
    assert!(
        w[0].starts_with(
            "Host noise before and after the run: cpufreq governor `powersave` on cores 0-1"
        ) && w[0].ends_with("to remove it: `cpupower frequency-set -g performance`."),
        "{}",
        w[0]
    );
    assert!(
        w[1].contains("turbo boost") && w[1].contains("intel_pstate/no_turbo"),
        "{}",
        w[1]
    );
    assert!(
        w[2].starts_with("Host noise before the run: transparent huge pages"),
        "{}",
        w[2]
    );
    assert!(
        w[3].starts_with("Host noise after the run: 64 MiB of swap")
            && w[3].contains("`swapoff -a`"),
        "{}",
        w[3]
    );

    let summary = labrun_report::summarize(&run).unwrap();
    let printed = labrun_report::render_terminal(&summary);
    assert!(
        printed.contains("cpupower frequency-set -g performance"),
        "{printed}"
    );
}

#[test]
fn a_run_recorded_before_the_noise_sources_has_no_such_warning() {
    let (_tmp, run) = two_tools_with(None);
    assert!(noise_warnings(&run).is_empty());
    let quiet = serde_json::json!({"before": {"transparent_hugepages": "never"}});
    let (_tmp2, run) = two_tools_with(Some(quiet));
    assert!(noise_warnings(&run).is_empty());
}
