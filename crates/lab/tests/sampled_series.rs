//! A series of real trees may be sampled (issue 31's quick look at big
//! trees, for a series): the plan carries the sample to the agent, `check`
//! says it, and a fraction that is no share of the files is refused where
//! it was written.

use labrun_evidence::{DatasetPlan, HistorySource, Sample};
use labrun_lab::{Lab, PlanOverrides};

fn series(sample: &str) -> String {
    format!(
        r#"name: sampled
vm: {{vcpus: 1, memory: 1GiB, disk: 4GiB}}
dataset:
  kind: trees
  public: true
{sample}  trees:
    - files: /srv/v1
    - files: /srv/v2
cycles: 1
tools:
  - name: restic
    version: "0.14.0"
    artifact:
      url: "https://example.invalid/restic.bz2"
      sha256: 9d7e8c210736f3f15ed7cf425ab56aa5259b07d8422b958494bfd4359b5024d1
      extract: bz2
    env: {{RESTIC_PASSWORD: x}}
    commands:
      init: ["{{bin}}", init, -r, "{{repo}}"]
      backup: ["{{bin}}", backup, -r, "{{repo}}", --tag, "{{snapshot}}", "{{source}}"]
      restore: ["{{bin}}", restore, latest, --tag, "{{snapshot}}", -r, "{{repo}}", --target, "{{target}}"]
"#
    )
}

#[test]
fn the_plan_carries_the_sample_of_a_series() {
    let lab = Lab::from_text(
        &series("  sample: {fraction: 0.2, seed: 5}\n"),
        "sampled.yaml",
    )
    .expect("a valid lab");
    let plan = lab.to_plan("r", &PlanOverrides::default()).unwrap();
    let DatasetPlan::GitHistory {
        source: HistorySource::Trees { trees, sample, .. },
    } = plan.dataset
    else {
        panic!("a series plans the history study: {:?}", plan.dataset);
    };
    assert_eq!(trees.len(), 2);
    assert_eq!(
        sample,
        Some(Sample {
            fraction: 0.2,
            seed: 5
        })
    );
    let said = lab.describe(None);
    assert!(
        said.contains("a seeded 20% of each one's files (the same paths in each) (seed 5)"),
        "{said}"
    );

    // Without one, none.
    let whole = Lab::from_text(&series(""), "whole.yaml").expect("a valid lab");
    let plan = whole.to_plan("r", &PlanOverrides::default()).unwrap();
    assert!(
        matches!(
            plan.dataset,
            DatasetPlan::GitHistory {
                source: HistorySource::Trees { sample: None, .. }
            }
        ),
        "{:?}",
        plan.dataset
    );
}

#[test]
fn a_sample_of_no_files_is_refused_where_it_is_written() {
    for fraction in ["0", "1.5", "-0.1"] {
        let text = series(&format!("  sample: {{fraction: {fraction}}}\n"));
        let err = Lab::from_text(&text, "sampled.yaml")
            .expect_err("no share of the files")
            .to_string();
        assert!(
            err.contains("dataset.sample.fraction") && err.contains("above 0 and at most 1"),
            "{fraction}: {err}"
        );
    }
}
