//! One run of the list, read from its folder or pack: the plan, the run
//! facts `bench` wrote beside it, the records (tool and cycle only), the
//! status. Every file goes through the bounded evidence reader.

use super::status::{self, RunStatus, small_json};
use crate::environment::{ENVIRONMENT_FILE, Environment};
use crate::evidence::{PlanView, RAW_DIR, TOOL_SOURCES_FILE, ToolSource};
use crate::evidence_file;
use crate::pack::{self, OpenedRun};
use labrun_evidence::files;
use labrun_evidence::variant::{VARIANTS_DIR, VARIANTS_INDEX, VariantsIndex};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunEntry {
    pub id: String,
    /// The run folder or the pack.
    pub path: PathBuf,
    pub packed: bool,
    /// The lab's name, the part of the id before its time.
    pub lab: Option<String>,
    /// `2026-12-01T14:47:49Z`, from the id (when `bench` made it).
    pub started: Option<String>,
    pub tools: Vec<ToolVersion>,
    /// The cycles the plan asked for.
    pub cycles_planned: Option<u32>,
    /// The highest cycle every tool has a record of.
    pub cycles_recorded: u32,
    #[serde(flatten)]
    pub status: RunStatus,
    /// The dataset as the plan gave it, in words (`synthetic, scale 0.01, seed 1`).
    pub dataset: Option<String>,
    /// The machine QEMU ran on and how, as the report names its class.
    pub machine_class: Option<String>,
    /// A lab's variants, each a run of its own inside this one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<String>,
    /// Runs sharing a letter can be compared (`labrun compare A B`); None:
    /// none of the others compares with this one.
    pub group: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolVersion {
    pub name: String,
    pub version: Option<String>,
}

impl RunEntry {
    /// The id's time part, which sorts as time; runs without one last.
    pub fn started_sort_key(&self) -> &str {
        self.started.as_deref().unwrap_or("")
    }

    /// `borg 1.2.8, restic 0.17.3`.
    pub fn tools_text(&self) -> String {
        let tools: Vec<String> = self
            .tools
            .iter()
            .map(|t| match &t.version {
                Some(v) => format!("{} {v}", t.name),
                None => t.name.clone(),
            })
            .collect();
        tools.join(", ")
    }

    /// `3`; `1 of 3` for a run with fewer cycles recorded than planned;
    /// `4 (2 planned)` when cycles were added (`--until-conclusive`).
    pub fn cycles_text(&self) -> String {
        let done = self.cycles_recorded;
        match self.cycles_planned {
            Some(p) if p == done => p.to_string(),
            Some(p) if p > done => format!("{done} of {p}"),
            Some(p) => format!("{done} ({p} planned)"),
            None => done.to_string(),
        }
    }
}

/// A run read, with what grouping needs; a pack's unpacked folder lives as
/// long as this does.
pub(super) struct Opened {
    pub entry: RunEntry,
    /// Where the evidence is (the folder holding `raw/`); None for a run of
    /// variants, which is compared within itself, not with other runs.
    pub evidence_dir: Option<PathBuf>,
    pub plan: Option<PlanView>,
    pub environment: Option<Environment>,
    _run: OpenedRun,
}

/// Reads the run at `path` (a folder or a pack); Err: why it is not one.
pub(super) fn read(path: &Path, now: SystemTime) -> Result<Opened, String> {
    let run = pack::open(path).map_err(|e| e.to_string())?;
    let packed = run.pack().is_some();
    let dir = run.dir().to_path_buf();
    let index: Option<VariantsIndex> = small_json(&dir, &dir.join(VARIANTS_INDEX))?;
    if let Some(index) = index {
        return read_variants(path, packed, run, index, now);
    }
    if !dir.join(RAW_DIR).is_dir() {
        return Err(format!(
            "not a run: no {RAW_DIR}/ folder or {VARIANTS_INDEX} in it"
        ));
    }
    let one = read_one(&dir, !packed, now)?;
    let id = one
        .plan
        .as_ref()
        .and_then(|p| p.run_id.clone())
        .or_else(|| one.record_run_id.clone())
        .unwrap_or_else(|| folder_id(path));
    let (lab, started) = split_id(&id);
    Ok(Opened {
        entry: RunEntry {
            id,
            path: path.to_path_buf(),
            packed,
            lab,
            started,
            tools: one.tools,
            cycles_planned: one.plan.as_ref().and_then(PlanView::run_cycles),
            cycles_recorded: one.cycles_recorded,
            status: one.status,
            dataset: one
                .plan
                .as_ref()
                .and_then(|p| p.dataset.as_ref())
                .map(describe_dataset),
            machine_class: one.environment.as_ref().map(Environment::host_class),
            variants: Vec::new(),
            group: None,
        },
        evidence_dir: Some(dir),
        plan: one.plan,
        environment: one.environment,
        _run: run,
    })
}

/// A run of variants: one entry, its status the first variant's that did
/// not finish (or finished, when all did), its other facts the first
/// variant's.
fn read_variants(
    path: &Path,
    packed: bool,
    run: OpenedRun,
    index: VariantsIndex,
    now: SystemTime,
) -> Result<Opened, String> {
    let dir = run.dir().to_path_buf();
    let mut read = Vec::new();
    for v in &index.variants {
        if !labrun_evidence::variant::is_plain_name(&v.name) {
            return Err(format!("{VARIANTS_INDEX} names a variant {:?}", v.name));
        }
        let vdir = dir.join(VARIANTS_DIR).join(&v.name);
        if vdir.join(RAW_DIR).is_dir() {
            read.push(read_one(&vdir, !packed, now)?);
        }
    }
    let first = read.first();
    let status = read
        .iter()
        .map(|r| r.status.clone())
        .find(|s| !matches!(s, RunStatus::Finished { .. }))
        .or_else(|| {
            let failed = read.iter().map(|r| match r.status {
                RunStatus::Finished { failed_steps, .. } => failed_steps,
                _ => None,
            });
            let ok = read
                .iter()
                .all(|r| matches!(r.status, RunStatus::Finished { ok: true, .. }));
            (!read.is_empty()).then(|| RunStatus::Finished {
                ok,
                failed_steps: failed.sum(),
            })
        })
        .unwrap_or(RunStatus::Incomplete);
    let (lab, started) = split_id(&index.run_id);
    Ok(Opened {
        entry: RunEntry {
            id: index.run_id.clone(),
            path: path.to_path_buf(),
            packed,
            lab,
            started,
            tools: first.map(|r| r.tools.clone()).unwrap_or_default(),
            cycles_planned: first.and_then(|r| r.plan.as_ref()?.run_cycles()),
            cycles_recorded: read.iter().map(|r| r.cycles_recorded).min().unwrap_or(0),
            status,
            dataset: first
                .and_then(|r| r.plan.as_ref()?.dataset.as_ref())
                .map(describe_dataset),
            machine_class: first.and_then(|r| r.environment.as_ref().map(Environment::host_class)),
            variants: index.variants.iter().map(|v| v.name.clone()).collect(),
            group: None,
        },
        evidence_dir: None,
        plan: None,
        environment: None,
        _run: run,
    })
}

/// What one evidence folder (a run's, or a variant's) says.
struct OneRun {
    plan: Option<PlanView>,
    environment: Option<Environment>,
    tools: Vec<ToolVersion>,
    cycles_recorded: u32,
    record_run_id: Option<String>,
    status: RunStatus,
}

/// The fields of a record the list needs; the rest is skipped.
#[derive(Deserialize)]
struct RecordKey {
    #[serde(default)]
    run_id: Option<String>,
    tool: String,
    cycle: u32,
}

fn read_one(dir: &Path, live: bool, now: SystemTime) -> Result<OneRun, String> {
    let raw = dir.join(RAW_DIR);
    let plan: Option<PlanView> = small_json(dir, &raw.join(files::PLAN))?;
    let environment: Option<Environment> = small_json(dir, &raw.join(ENVIRONMENT_FILE))?;
    let sources: Option<Vec<ToolSource>> = small_json(dir, &raw.join(TOOL_SOURCES_FILE))?;
    // Per tool, the highest cycle it has a record of.
    let mut cycles: BTreeMap<String, u32> = BTreeMap::new();
    let mut record_run_id = None;
    let mut damaged = None;
    evidence_file::for_each_line(
        dir,
        &raw.join(files::RECORDS),
        evidence_file::MAX_RECORDS_FILE,
        evidence_file::MAX_RECORD_LINE,
        |number, line| {
            if line.trim().is_empty() {
                return ControlFlow::Continue(());
            }
            match serde_json::from_str::<RecordKey>(line) {
                Ok(r) => {
                    record_run_id = record_run_id.take().or(r.run_id);
                    let c = cycles.entry(r.tool).or_default();
                    *c = (*c).max(r.cycle);
                }
                // A last line cut short by a crash is not damage.
                Err(e) => damaged = Some((number, e.to_string())),
            }
            ControlFlow::Continue(())
        },
    )
    .map_err(|e| e.to_string())?;
    let status = status::status(dir, live, now)?;
    if let Some((line, e)) = damaged
        && matches!(status, RunStatus::Finished { .. })
    {
        return Err(format!(
            "{RAW_DIR}/{} line {line} is damaged: {e}",
            files::RECORDS
        ));
    }
    let tools = tool_versions(
        plan.as_ref(),
        sources.as_deref(),
        environment.as_ref(),
        &cycles,
    );
    // The cycle every tool reached; the dataset's shared cycle 0 is no tool's.
    let planned_tools: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let cycles_recorded = planned_tools
        .iter()
        .map(|t| cycles.get(*t).copied().unwrap_or(0))
        .min()
        .unwrap_or(0);
    Ok(OneRun {
        plan,
        environment,
        tools,
        cycles_recorded,
        record_run_id,
        status,
    })
}

/// The run's tools with their versions: the plan's, else the lab's tools
/// this run ran (`tool-sources.json`), else whatever tools have records.
fn tool_versions(
    plan: Option<&PlanView>,
    sources: Option<&[ToolSource]>,
    environment: Option<&Environment>,
    cycles: &BTreeMap<String, u32>,
) -> Vec<ToolVersion> {
    if let Some(plan) = plan.filter(|p| !p.tools.is_empty()) {
        return plan
            .tools
            .iter()
            .map(|t| ToolVersion {
                name: t.name.clone(),
                version: t.version.clone(),
            })
            .collect();
    }
    if let Some(sources) = sources.filter(|s| s.iter().any(|t| t.run)) {
        return sources
            .iter()
            .filter(|t| t.run)
            .map(|t| ToolVersion {
                name: t.name.clone(),
                version: t.version.clone(),
            })
            .collect();
    }
    let reported = environment.map(|e| &e.tool_versions);
    cycles
        .keys()
        .filter(|t| reported.is_some_and(|r| r.contains_key(*t)) || cycles[*t] > 0)
        .map(|t| ToolVersion {
            name: t.clone(),
            version: None,
        })
        .collect()
}

/// `synthetic, scale 0.01, seed 1, change_seed 2`: the kind, then every
/// other field as written.
fn describe_dataset(dataset: &serde_json::Value) -> String {
    let Some(fields) = dataset.as_object() else {
        return dataset.to_string();
    };
    let text = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut parts: Vec<String> = fields.get("kind").map(text).into_iter().collect();
    parts.extend(
        fields
            .iter()
            .filter(|(k, _)| k.as_str() != "kind")
            .map(|(k, v)| format!("{k} {}", text(v))),
    );
    parts.join(", ")
}

/// `default-20261201T144749Z-2ab023` -> lab `default`, started
/// `2026-12-01T14:47:49Z`; an id of another shape has neither.
fn split_id(id: &str) -> (Option<String>, Option<String>) {
    let mut parts = id.rsplitn(3, '-');
    let (Some(_digest), Some(stamp), Some(lab)) = (parts.next(), parts.next(), parts.next()) else {
        return (None, None);
    };
    let b = stamp.as_bytes();
    let shaped = b.len() == 16
        && b[8] == b'T'
        && b[15] == b'Z'
        && b[..8].iter().chain(&b[9..15]).all(u8::is_ascii_digit);
    if !shaped {
        return (None, None);
    }
    let started = format!(
        "{}-{}-{}T{}:{}:{}Z",
        &stamp[..4],
        &stamp[4..6],
        &stamp[6..8],
        &stamp[9..11],
        &stamp[11..13],
        &stamp[13..15]
    );
    (Some(lab.to_string()), Some(started))
}

/// The folder's or pack's name without `.tar.gz`.
fn folder_id(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.strip_suffix(".tar.gz")
        .map(str::to_string)
        .unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_gives_its_lab_and_start() {
        assert_eq!(
            split_id("full-restore-20261201T190906Z-2568d7"),
            (
                Some("full-restore".into()),
                Some("2026-12-01T19:09:06Z".into())
            )
        );
        assert_eq!(split_id("after"), (None, None));
        assert_eq!(split_id("a-2026120T190906Z-2568d7"), (None, None));
    }

    #[test]
    fn a_dataset_reads_kind_first() {
        let d = serde_json::json!({"kind": "synthetic", "seed": 1, "scale": 0.01});
        assert_eq!(describe_dataset(&d), "synthetic, scale 0.01, seed 1");
    }
}
