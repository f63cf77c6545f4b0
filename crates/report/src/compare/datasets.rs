//! Two runs are comparable only when they measured the same work: the same
//! dataset (kind, profile, seed, scale, ..., and the same generated data,
//! by its manifest's SHA-256) and the same protocol. The counterpart of
//! [`super::machines`].

use crate::evidence::{PlanView, RAW_DIR};
use crate::evidence_file;
use labrun_evidence::files;
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The manifest of the data the run generated, relative to the run folder.
const GENERATED_MANIFEST: &str = "generated.jsonl";
/// A manifest of a few million entries is far below this.
const MAX_MANIFEST: u64 = 4 << 30;

/// Each difference of dataset or protocol in words, e.g. `dataset scale:
/// 0.001 in the baseline run, 0.01 in the candidate run`. What a run does
/// not record (an old plan, no manifest) is not taken for a difference.
pub fn differences(
    a_dir: &Path,
    a: Option<&PlanView>,
    b_dir: &Path,
    b: Option<&PlanView>,
) -> Vec<String> {
    let mut out = Vec::new();
    if let (Some(a), Some(b)) = (a, b) {
        if let (Some(x), Some(y)) = (&a.dataset, &b.dataset) {
            out.extend(dataset_differences(x, y));
        }
        let (x, y) = (protocol_of(a), protocol_of(b));
        if x != y {
            out.push(format!(
                "protocol: {} in the baseline run, {} in the candidate run",
                x.described, y.described
            ));
        }
    }
    match (manifest_digest(a_dir), manifest_digest(b_dir)) {
        (Ok(Some(x)), Ok(Some(y))) if x != y => out.push(format!(
            "the data's manifest (raw/{}/{GENERATED_MANIFEST}): sha256 {} in the baseline run, {} in the candidate run",
            files::MANIFESTS_DIR,
            short(&x),
            short(&y)
        )),
        (Err(e), _) | (_, Err(e)) => out.push(format!(
            "the data's manifest cannot be checked: {e}"
        )),
        _ => {}
    }
    out
}

/// The fields of the two datasets that differ, a missing `profile` read as
/// `published` (plans leave the published one out).
fn dataset_differences(a: &serde_json::Value, b: &serde_json::Value) -> Vec<String> {
    let fields = |v: &serde_json::Value| -> std::collections::BTreeMap<String, String> {
        let mut map: std::collections::BTreeMap<String, String> = match v.as_object() {
            Some(o) => o.iter().map(|(k, v)| (k.clone(), v.to_string())).collect(),
            None => [("dataset".to_string(), v.to_string())].into(),
        };
        if map.get("kind").map(String::as_str) == Some("\"synthetic\"") {
            map.entry("profile".into())
                .or_insert_with(|| "\"published\"".into());
        }
        map
    };
    let (a, b) = (fields(a), fields(b));
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| {
            let shown = |m: &std::collections::BTreeMap<String, String>| {
                m.get(k).cloned().unwrap_or_else(|| "unset".into())
            };
            format!(
                "dataset {k}: {} in the baseline run, {} in the candidate run",
                shown(&a),
                shown(&b)
            )
        })
        .collect()
}

#[derive(PartialEq)]
struct Protocol {
    /// The steps in full, as the plan holds them.
    exact: String,
    /// What a reader is shown: the steps' names, in order.
    described: String,
}

fn protocol_of(plan: &PlanView) -> Protocol {
    match &plan.protocol {
        Some(steps) => Protocol {
            exact: serde_json::to_string(steps).unwrap_or_default(),
            described: format!(
                "steps {}",
                steps
                    .iter()
                    .map(|s| s.name().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
        None => {
            let timed: Vec<String> = plan.timed_steps().iter().map(|s| s.to_string()).collect();
            Protocol {
                exact: timed.join(","),
                described: format!("timed steps {}", timed.join(", ")),
            }
        }
    }
}

/// The SHA-256 of `raw/manifests/generated.jsonl`, read through the bounded
/// evidence reader; `None` when the run has none.
fn manifest_digest(run_dir: &Path) -> Result<Option<String>, evidence_file::Refused> {
    let path: PathBuf = run_dir
        .join(RAW_DIR)
        .join(files::MANIFESTS_DIR)
        .join(GENERATED_MANIFEST);
    let Some(file) = evidence_file::open(run_dir, &path, MAX_MANIFEST)? else {
        return Ok(None);
    };
    let mut hasher = Sha256::new();
    let mut reader = file.take(MAX_MANIFEST);
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = reader.read(&mut buf).map_err(|e| evidence_file::Refused {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(Some(hex::encode(hasher.finalize())))
}

fn short(hex: &str) -> &str {
    hex.get(..16).unwrap_or(hex)
}
