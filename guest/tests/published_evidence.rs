//! The published cycle's evidence, pinned: the records, events and evidence
//! files of a run of the default protocol, with what differs from run to
//! run (times, sizes, the temporary folder) taken out. The snapshot was
//! made by the agent before the protocol became data (commit 07fef4e) and
//! must not change while the default protocol is the published one; after a
//! deliberate change re-run with `UPDATE_SNAPSHOTS=1` and review the diff.

mod common;

use common::{Lab, base_plan, sh_tool};
use serde_json::{Value, json};

const SNAPSHOT: &str = "tests/snapshots/published_evidence.txt";

fn normalized(lab: &Lab) -> String {
    let tmp = lab
        .path("")
        .to_string_lossy()
        .trim_end_matches('/')
        .to_string();
    let mut out = String::new();
    for r in lab.records() {
        let v = json!({
            "tool": r.tool,
            "cycle": r.cycle,
            "step": r.step,
            "order": r.order,
            "argv": r.argv.iter().map(|a| a.replace(&tmp, "<tmp>")).collect::<Vec<_>>(),
            "timed": r.timed,
            "cache_dropped": r.cache_dropped,
            "ok": r.ok,
            "snapshot": r.snapshot,
            "repo_size": r.repo_size_bytes.is_some(),
            "stdout": r.stdout_path,
            "stderr": r.stderr_path,
            "tree": r.tree.is_some(),
            "verify": r.verify.as_ref().map(|v| (v.passed, v.files_checked, v.bytes_checked)),
            "files": r.files,
            "bytes": r.bytes,
            "error": r.error,
        });
        out.push_str(&serde_json::to_string(&v).unwrap());
        out.push('\n');
    }
    for e in lab.events() {
        let v = serde_json::to_value(&e).unwrap();
        let kind = v
            .get("event")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string();
        let step = v.get("step").and_then(Value::as_str).unwrap_or("");
        let tool = v.get("tool").and_then(Value::as_str).unwrap_or("");
        if kind != "dataset_progress" {
            out.push_str(&format!("event {kind} {tool} {step}\n"));
        }
    }
    let evidence = lab.evidence().to_string_lossy().into_owned();
    let mut files: Vec<String> = lab
        .evidence_files()
        .into_iter()
        .map(|(p, bytes)| {
            let name = p.to_string_lossy().replace(&evidence, "<evidence>");
            // The dataset is seeded: its manifests are the same bytes.
            if name.contains("/manifests/") {
                let digest = <sha2::Sha256 as sha2::Digest>::digest(&bytes);
                format!("{name} {}", hex::encode(digest))
            } else {
                name
            }
        })
        .collect();
    files.sort();
    for f in files {
        out.push_str(&format!("file {f}\n"));
    }
    out
}

#[test]
fn the_published_cycle_leaves_the_same_evidence() {
    let lab = Lab::new();
    let plan = base_plan(
        "pinned-1",
        2,
        vec![sh_tool("alpha", json!({})), sh_tool("beta", json!({}))],
    );
    let out = lab.run(&plan);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let got = normalized(&lab);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(SNAPSHOT, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(SNAPSHOT).expect("the snapshot file");
    assert_eq!(got, want, "the published cycle's evidence changed");
}
