//! `compare:` pairs that ask about one phase or figure: checked against the
//! lab's protocol and the figures' names, and said by `labrun check`.

use labrun_lab::Lab;

const BASE: &str = r#"name: mini
dataset: {kind: synthetic, seed: 7, scale: 0.01}
tools:
  - &restic
    name: restic
    version: 0.19.1
    artifact:
      url: https://example.invalid/restic_0.19.1_linux_amd64.bz2
      sha256: f415415624dcc452f2a02b8c33641791a8c6d6d3b65bbb3543fcf9a25151585c
      extract: bz2
    env: {RESTIC_PASSWORD: pw-not-secret}
    commands:
      init: ["{bin}", init, -r, "{repo}"]
      backup: ["{bin}", backup, -r, "{repo}", "{source}"]
      restore: ["{bin}", restore, latest, -r, "{repo}", --target, "{target}"]
  - <<: *restic
    name: restic@0.14.0
    version: 0.14.0
compare:
  pairs:
"#;

fn lab(pair: &str) -> Result<Lab, String> {
    Lab::from_text(&format!("{BASE}    - {pair}\n"), "lab.yaml").map_err(|e| e.to_string())
}

#[test]
fn a_pair_may_ask_about_one_phase_and_figure() {
    let l = lab("{baseline: restic@0.14.0, candidate: restic, phase: restore, figure: wall_time}")
        .unwrap();
    let text = l.describe(None);
    assert!(
        text.contains("restic against restic@0.14.0 (baseline), only wall_time of restore"),
        "{text}"
    );
}

#[test]
fn a_phase_the_protocol_does_not_time_is_refused_with_the_list() {
    let err = lab("{baseline: restic@0.14.0, candidate: restic, phase: restor}").unwrap_err();
    assert!(err.contains("compare.pairs[0].phase"), "{err}");
    assert!(err.contains("`restor` is not a timed step"), "{err}");
    assert!(err.contains("backup_full"), "{err}");
}

#[test]
fn an_unknown_figure_is_refused_naming_the_figures() {
    let err = lab("{baseline: restic@0.14.0, candidate: restic, figure: walltime}").unwrap_err();
    assert!(err.contains("walltime"), "{err}");
    assert!(err.contains("wall_time"), "{err}");
}
