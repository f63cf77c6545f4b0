//! Every YAML example of the user guide (`docs/guide/*.md`) is a lab that
//! loads, validates and turns into a plan, checked as the shipped labs are
//! (`shipped_labs.rs`). A block whose first line is `# fragment` is part of
//! a lab: its top-level keys replace those of a minimal lab (or are added to
//! it), and the result is checked the same way. Any other block must be a
//! whole lab: an example that is neither fails here, so the guide cannot
//! show YAML that labrun would refuse.

use labrun_evidence::Plan;
use labrun_lab::{Lab, PlanOverrides};
use std::path::{Path, PathBuf};

const FRAGMENT: &str = "# fragment";

/// The lab a fragment completes: one tool, the default VM, a small dataset.
const MINIMAL_LAB: &str = r#"name: guide
dataset: {kind: synthetic, seed: 1, scale: 0.01}
tools:
  - name: restic
    version: 0.14.0
    artifact:
      apt: {package: restic, version: 0.14.0-1+b5}
      sha256: 9d7e8c210736f3f15ed7cf425ab56aa5259b07d8422b958494bfd4359b5024d1
      extract: {deb-member: usr/bin/restic}
    env: {RESTIC_PASSWORD: lab-only-not-a-secret}
    secret_env: [RESTIC_PASSWORD]
    commands:
      version: ["{bin}", version]
      init: ["{bin}", init, -r, "{repo}"]
      backup: {argv: ["{bin}", backup, -r, "{repo}", --tag, "{snapshot}", .], cwd: "{source}"}
      restore: ["{bin}", restore, latest, --tag, "{snapshot}", -r, "{repo}", --target, "{target}"]
"#;

fn guide_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/guide")
}

/// A fenced ```yaml block: the page, its first line's number, its text.
struct Example {
    page: String,
    line: usize,
    text: String,
}

impl Example {
    fn at(&self) -> String {
        format!("docs/guide/{}:{}", self.page, self.line)
    }
}

fn examples() -> Vec<Example> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(guide_dir())
        .expect("docs/guide/")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    let mut out = Vec::new();
    for page in pages {
        let name = page.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&page).unwrap();
        let mut open: Option<Example> = None;
        for (i, line) in text.lines().enumerate() {
            let fence = line.trim_start();
            match open.take() {
                None if fence.starts_with("```yaml") || fence.starts_with("```yml") => {
                    open = Some(Example {
                        page: name.clone(),
                        line: i + 2,
                        text: String::new(),
                    });
                }
                None => {}
                Some(ex) if fence.starts_with("```") => out.push(ex),
                Some(mut ex) => {
                    ex.text.push_str(line);
                    ex.text.push('\n');
                    open = Some(ex);
                }
            }
        }
        assert!(open.is_none(), "{name}: a ```yaml block is never closed");
    }
    out
}

/// A YAML mapping's top-level entries as (key, text), in order; comments
/// and blank lines before an entry stay with it.
fn top_level(text: &str) -> Vec<(String, String)> {
    let mut entries: Vec<(String, String)> = Vec::new();
    let mut pending = String::new();
    for line in text.lines() {
        let line = format!("{line}\n");
        let nested = line.starts_with([' ', '-']);
        if !nested && !line.starts_with('#') && line.contains(':') {
            let key = line[..line.find(':').unwrap()].trim().to_string();
            entries.push((key, std::mem::take(&mut pending) + &line));
        } else if let (true, Some((_, body))) = (nested, entries.last_mut()) {
            body.push_str(&std::mem::take(&mut pending));
            body.push_str(&line);
        } else {
            pending.push_str(&line);
        }
    }
    entries
}

/// The minimal lab with the fragment's top-level keys in place of its own.
fn complete(fragment: &str) -> String {
    let mut lab = top_level(MINIMAL_LAB);
    for (key, text) in top_level(fragment) {
        match lab.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = text,
            None => lab.push((key, text)),
        }
    }
    lab.into_iter().map(|(_, text)| text).collect()
}

/// What `shipped_labs.rs` asks of every shipped lab.
fn check_as_shipped(lab_text: &str, at: &str) {
    let lab = Lab::from_text(lab_text, at).unwrap_or_else(|e| panic!("{e}\n---\n{lab_text}"));
    assert!(lab.validate().is_empty(), "{at}");
    assert_eq!(lab.digest().len(), 6);
    let text = lab.describe(Some(0.01));
    for t in &lab.tools {
        assert!(
            text.contains(&t.name) && text.contains(&t.artifact.sha256),
            "{at}: {text}"
        );
    }
    let plan = lab
        .to_plan(&lab.run_id("20261203T1600Z"), &PlanOverrides::default())
        .unwrap_or_else(|e| panic!("{at}: {e}"));
    let json = serde_json::to_string(&plan).unwrap();
    let back: Plan = serde_json::from_str(&json).unwrap();
    assert_eq!(back, plan, "{at}");
}

#[test]
fn every_yaml_example_of_the_guide_is_a_valid_lab() {
    let examples = examples();
    let (mut whole, mut fragments) = (0, 0);
    for ex in &examples {
        let first = ex.text.lines().next().unwrap_or("").trim();
        if first.starts_with(FRAGMENT) {
            check_as_shipped(&complete(&ex.text), &ex.at());
            fragments += 1;
        } else {
            check_as_shipped(&ex.text, &ex.at());
            whole += 1;
        }
    }
    // The guide holds both kinds; finding none would check nothing.
    assert!(
        whole >= 1 && fragments >= 5,
        "found {whole} whole labs and {fragments} fragments in docs/guide/"
    );
}

#[test]
fn a_fragment_replaces_the_minimal_labs_keys_and_keeps_the_rest() {
    let lab = complete("# fragment\ncycles: 5\ndataset:\n  kind: synthetic\n  scale: 0.5\n");
    let lab = Lab::from_text(&lab, "fragment").unwrap();
    assert_eq!(lab.cycles, 5);
    assert!(matches!(
        lab.dataset,
        labrun_lab::DatasetSpec::Synthetic { scale, .. } if scale == 0.5
    ));
    assert_eq!(lab.tools[0].name, "restic");
}

#[test]
fn a_block_that_is_not_a_lab_fails_the_check() {
    // A fragment without its mark is checked as a whole lab and refused.
    let unmarked = "cycles: 5\n";
    let refused = std::panic::catch_unwind(|| check_as_shipped(unmarked, "unmarked"));
    assert!(refused.is_err(), "a lab without tools was accepted");
    // A marked fragment with a wrong key is refused after completion too.
    let typo = complete("# fragment\ncycels: 5\n");
    assert!(Lab::from_text(&typo, "typo").is_err());
}
