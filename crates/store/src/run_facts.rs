//! What the store keeps of a run besides its samples, read from the run's
//! own evidence: the lab and its digest, tools and versions, the dataset,
//! the machine class, and when it finished.

use labrun_report::evidence::RawRun;
use sha2::{Digest, Sha256};
use std::path::Path;

/// A run's facts, as one `runs` row and its `run_tools` rows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunFacts {
    pub run_id: String,
    pub lab: Option<String>,
    /// The SHA-256 of the lab file as the run kept it (`raw/lab.yaml`).
    pub lab_digest: Option<String>,
    pub dataset: Option<String>,
    pub environment: Option<String>,
    pub machine_class: Option<String>,
    pub acceleration: Option<String>,
    /// RFC 3339 UTC, from the agent's `done.json`.
    pub finished_at: Option<String>,
    pub tools: Vec<(String, Option<String>)>,
}

impl RunFacts {
    pub fn read(dir: &Path, raw: &RawRun) -> Self {
        let plan = raw.plan.clone().unwrap_or_default();
        let run_id = plan
            .run_id
            .clone()
            .or_else(|| raw.records.first().map(|r| r.run_id.clone()))
            .unwrap_or_else(|| raw.folder_name.clone());
        let raw_dir = dir.join(labrun_report::RAW_DIR);
        let lab_digest = std::fs::read(raw_dir.join("lab.yaml"))
            .ok()
            .map(|bytes| hex::encode(Sha256::digest(&bytes)));
        RunFacts {
            lab: lab_of(&run_id),
            lab_digest,
            dataset: plan.dataset.as_ref().map(|d| d.to_string()),
            environment: raw
                .environment
                .as_ref()
                .and_then(|e| serde_json::to_string(e).ok()),
            machine_class: raw
                .environment
                .as_ref()
                .map(|e| labrun_report::MachineClass::of(e).key()),
            acceleration: raw
                .environment
                .as_ref()
                .and_then(|e| e.acceleration)
                .map(|a| a.as_str().to_string()),
            finished_at: finished_at(&raw_dir.join("done.json")),
            tools: tools_of(raw, &plan),
            run_id,
        }
    }
}

/// The plan's tools; a run whose plan names none (an older one) by its
/// records, with the version each printed.
fn tools_of(
    raw: &RawRun,
    plan: &labrun_report::evidence::PlanView,
) -> Vec<(String, Option<String>)> {
    if !plan.tools.is_empty() {
        return plan
            .tools
            .iter()
            .map(|t| (t.name.clone(), t.version.clone()))
            .collect();
    }
    let printed = raw.environment.as_ref().map(|e| &e.tool_versions);
    // A step of no tool (the dataset's) has an empty name.
    let mut names: Vec<&str> = raw
        .records
        .iter()
        .map(|r| r.tool.as_str())
        .filter(|n| !n.is_empty())
        .collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .map(|n| {
            let version = printed.and_then(|p| p.get(n)).map(|v| v.to_string());
            (n.to_string(), version)
        })
        .collect()
}

/// The lab's name from a run id `NAME-YYYYMMDDTHHMMSSZ-HEX6` (`Lab::run_id`);
/// `None` for an id of another shape.
pub(crate) fn lab_of(run_id: &str) -> Option<String> {
    // A variant's run is `RUN.VARIANT` (a lab's name has no `.`).
    let run_id = run_id.split_once('.').map_or(run_id, |(run, _)| run);
    let mut parts = run_id.rsplitn(3, '-');
    let (hex6, stamp, name) = (parts.next()?, parts.next()?, parts.next()?);
    let stamp_ok = stamp.len() == 16
        && stamp.ends_with('Z')
        && stamp.as_bytes()[8] == b'T'
        && stamp.as_bytes()[..8]
            .iter()
            .chain(&stamp.as_bytes()[9..15])
            .all(u8::is_ascii_digit);
    let hex_ok = hex6.len() == 6 && hex6.bytes().all(|b| b.is_ascii_hexdigit());
    (stamp_ok && hex_ok && !name.is_empty()).then(|| name.to_string())
}

fn finished_at(done: &Path) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Done {
        finished_unix_ms: u64,
    }
    let text = std::fs::read(done).ok()?;
    let done: Done = serde_json::from_slice(&text).ok()?;
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(done.finished_unix_ms);
    Some(humantime::format_rfc3339_seconds(at).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lab_is_read_from_a_run_id_of_labruns_shape_only() {
        assert_eq!(
            lab_of("default-20261201T144749Z-2ab023").as_deref(),
            Some("default")
        );
        assert_eq!(
            lab_of("restic-series-20261201T144749Z-2ab023").as_deref(),
            Some("restic-series")
        );
        assert_eq!(
            lab_of("data-shapes-20261202T124302Z-bf7b19.media").as_deref(),
            Some("data-shapes")
        );
        assert_eq!(
            lab_of("network-20261202T082714Z-f68979.rest-25ms").as_deref(),
            Some("network")
        );
        assert_eq!(lab_of("hand-made"), None);
        assert_eq!(lab_of("x-2026120XT144749Z-2ab023"), None);
        assert_eq!(lab_of("x-20261201T144749Z-2ab02g"), None);
        assert_eq!(lab_of("-20261201T144749Z-2ab023"), None);
    }
}
