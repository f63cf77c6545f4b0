//! Reading a run's `raw/` folder: records, plan, environment, binary digests.
//! Outputs of other programs are read leniently (unknown fields ignored,
//! missing optional files become warnings); only damage that would make the
//! figures wrong is an error.

use crate::environment::{ENVIRONMENT_FILE, Environment};
use crate::error::{ReportError, Result};
use crate::evidence_file::{self, InMemory, Root};
use crate::warning::{Warning, WarningKind};
use labrun_evidence::{SCHEMA_VERSION, Step, StepRecord, files};
use serde::{Deserialize, Serialize};
use std::ops::ControlFlow;
use std::path::Path;

/// Folder inside a run folder that holds the evidence.
pub const RAW_DIR: &str = "raw";
/// Where each of the lab's tools came from and whether this run ran it,
/// written by `bench`.
pub const TOOL_SOURCES_FILE: &str = "tool-sources.json";

/// One tool of the lab in `tool-sources.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSource {
    pub name: String,
    #[serde(default)]
    pub version: Option<String>,
    /// The artifact's source in one line: download, apt package and suite,
    /// or the build with its toolchain and flags.
    #[serde(default)]
    pub source: String,
    /// False for a tool of the lab that this run left out (`--tools`).
    #[serde(default = "yes")]
    pub run: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256_source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary_sha256: Option<String>,
    /// For a binary built on the host: the build's own record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<serde_json::Value>,
    /// For a downloaded file: the URL asked for and every redirect that led
    /// to the bytes (`{"file", "url", "redirects": [...]}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub download: Option<serde_json::Value>,
}

fn yes() -> bool {
    true
}

/// Everything the summary is made from.
#[derive(Debug, Clone, Default)]
pub struct RawRun {
    /// Name of the run folder, used when neither plan nor records name the run.
    pub folder_name: String,
    pub records: Vec<StepRecord>,
    pub plan: Option<PlanView>,
    pub environment: Option<Environment>,
    pub binaries: Vec<BinaryDigest>,
    /// Empty for runs made before labrun wrote it.
    pub tool_sources: Vec<ToolSource>,
    /// Problems met while reading that do not stop the report.
    pub warnings: Vec<Warning>,
    /// The timed steps' tree samples, for the timeline chart.
    pub timelines: Vec<crate::timeline::StepTimeline>,
    /// What the lab asked to compare (`raw/compare-plan.json`), if anything.
    pub compare_plan: Option<labrun_evidence::compare::ComparePlan>,
    /// The pairs `--until-conclusive` added (`raw/added-pairs.json`).
    pub added_pairs: Option<labrun_evidence::compare::AddedPairs>,
}

/// The parts of `plan.json` a summary needs. Read leniently (the agent's own
/// `Plan` refuses unknown fields, which is right for an input but wrong for
/// evidence that a newer labrun may have written).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct PlanView {
    #[serde(default)]
    pub run_id: Option<String>,
    #[serde(default)]
    pub cycles: Option<u32>,
    #[serde(default)]
    pub tools: Vec<PlanTool>,
    /// The dataset as the plan gave it (`kind`, `seed`, `scale`, ...): kept
    /// as written, so runs of any dataset kind can be told apart.
    #[serde(default)]
    pub dataset: Option<serde_json::Value>,
    /// The steps of a tool cycle (plans since the protocol became data).
    #[serde(default)]
    pub protocol: Option<Vec<labrun_evidence::ProtocolStep>>,
    /// The timed steps alone (plans before that).
    #[serde(default)]
    pub timed_steps: Option<Vec<Step>>,
    /// Set when the run went in rounds interleaved with other runs: `cycles`
    /// is then the first round's, this the run's.
    #[serde(default)]
    pub round: Option<RoundView>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct RoundView {
    #[serde(default)]
    pub run_cycles: Option<u32>,
}

impl PlanView {
    /// The cycles the whole run planned.
    pub fn run_cycles(&self) -> Option<u32> {
        self.round
            .as_ref()
            .and_then(|r| r.run_cycles)
            .or(self.cycles)
    }

    /// The timed steps, in the protocol's order.
    pub fn timed_steps(&self) -> Vec<Step> {
        match (&self.protocol, &self.timed_steps) {
            (Some(steps), _) => labrun_evidence::protocol::timed_steps(steps),
            (None, Some(timed)) => timed.clone(),
            (None, None) => Self::published_timed_steps(),
        }
    }

    /// Those of the published cycle, for evidence without a plan.
    pub fn published_timed_steps() -> Vec<Step> {
        labrun_evidence::protocol::timed_steps(&labrun_evidence::protocol::published())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct PlanTool {
    pub name: String,
    #[serde(default)]
    pub version: Option<String>,
}

/// One line of `binary-sha256.txt`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BinaryDigest {
    pub path: String,
    pub sha256: String,
}

/// Reads `run_dir/raw`. Errors: no raw folder, no records, a damaged record
/// anywhere but on the last line, records from a newer schema.
pub fn load(run_dir: &Path) -> Result<RawRun> {
    let folder_name = run_dir
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    load_from(Root::Dir(run_dir), folder_name)
}

/// [`load`] of a pack's files held in memory ([`crate::pack::read_in_memory`]):
/// no folder is written, so a question over many stored runs reads each
/// without unpacking it. `name` stands for the run folder's name.
pub fn load_in_memory(files: &InMemory, name: &str) -> Result<RawRun> {
    load_from(Root::Memory(files), name.to_string())
}

fn load_from(root: Root, folder_name: String) -> Result<RawRun> {
    let run_dir = root.base();
    let raw = run_dir.join(RAW_DIR);
    if !root.is_dir(&raw) {
        let hint = if root.exists(&run_dir.join(files::RECORDS)) {
            " (this folder looks like raw/ itself: pass its parent)"
        } else {
            ""
        };
        return Err(ReportError::NoRawDir { path: raw, hint });
    }
    let mut run = RawRun {
        folder_name,
        ..RawRun::default()
    };
    run.records = read_records(root, &raw.join(files::RECORDS), &mut run.warnings)?;
    let (timelines, unreadable) = crate::timeline::load(root, &raw, &run.records);
    run.timelines = timelines;
    run.warnings.extend(unreadable);
    run.plan = read_optional_json(
        root,
        &raw.join(files::PLAN),
        WarningKind::MissingPlan,
        &mut run.warnings,
        "cycles missing from a cut-short run cannot be told apart",
    );
    run.environment = read_optional_json(
        root,
        &raw.join(ENVIRONMENT_FILE),
        WarningKind::MissingEnvironment,
        &mut run.warnings,
        "the machine, acceleration and tool versions of this run are unknown",
    );
    if let Some(versions) = read_quietly(root, &raw.join(files::TOOL_VERSIONS), &mut run.warnings)
        .and_then(|t| serde_json::from_str::<labrun_evidence::ToolVersions>(&t).ok())
    {
        run.environment
            .get_or_insert_with(Default::default)
            .tool_versions = versions;
    }
    let storage = raw.join(labrun_evidence::storage::STORAGE_FILE);
    if root.exists(&storage) {
        run.environment.get_or_insert_with(Default::default).storage = read_optional_json(
            root,
            &storage,
            WarningKind::StorageUnknown,
            &mut run.warnings,
            "where the repositories lived and the network's measured round trip are not shown",
        );
    }
    run.tool_sources = read_quietly(root, &raw.join(TOOL_SOURCES_FILE), &mut run.warnings)
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    run.compare_plan = read_json_if_present(
        root,
        &raw.join(labrun_evidence::compare::COMPARE_PLAN),
        &mut run.warnings,
        "the verdicts the lab asked for are not made",
    );
    run.added_pairs = read_json_if_present(
        root,
        &raw.join(labrun_evidence::compare::ADDED_PAIRS),
        &mut run.warnings,
        "how many pairs `--until-conclusive` added is unknown",
    );
    run.binaries = read_quietly(root, &raw.join(files::BINARY_DIGESTS), &mut run.warnings)
        .map(|text| parse_binary_digests(&text))
        .unwrap_or_default();
    Ok(run)
}

fn read_records(root: Root, path: &Path, warnings: &mut Vec<Warning>) -> Result<Vec<StepRecord>> {
    read_records_bounded(root, path, warnings, evidence_file::MAX_RECORDS)
}

/// [`read_records`], keeping at most `max_records` (tests use a small bound).
/// The file's size is bounded before a line is read, the records' number as
/// they are kept: the memory a report takes is bounded either way.
fn read_records_bounded(
    root: Root,
    path: &Path,
    warnings: &mut Vec<Warning>,
    max_records: usize,
) -> Result<Vec<StepRecord>> {
    // Links, FIFOs and devices are refused by the one reader; the size is
    // checked here, to say what the bound is for.
    let Some(size) = root.size(path)? else {
        return Err(ReportError::NoRecords {
            path: path.to_path_buf(),
        });
    };
    if size > evidence_file::MAX_RECORDS_FILE {
        return Err(ReportError::RecordsTooLarge {
            path: path.to_path_buf(),
            size,
            max: evidence_file::MAX_RECORDS_FILE,
            per: evidence_file::RECORD_MEMORY,
        });
    }
    let mut records = Vec::new();
    let mut seen = RecordLines::default();
    // A line that does not parse as a record: allowed only as the last
    // non-empty line (the agent appends and flushes one line per step, so
    // only the last can be half-written, by a run cut short).
    let mut damaged: Option<(usize, serde_json::Error)> = None;
    let mut failed: Option<ReportError> = None;
    // One line in memory at a time: the records, not the file, are kept.
    root.for_each_line(
        path,
        evidence_file::MAX_RECORDS_FILE,
        evidence_file::MAX_RECORD_LINE,
        |line, json| {
            if json.trim().is_empty() {
                return ControlFlow::Continue(());
            }
            if records.len() >= max_records {
                failed = Some(ReportError::TooManyRecords {
                    path: path.to_path_buf(),
                    max: max_records,
                    per: evidence_file::RECORD_MEMORY,
                });
                return ControlFlow::Break(());
            }
            let outcome = match damaged.take() {
                Some((at, source)) => Err(ReportError::BadRecord {
                    path: path.to_path_buf(),
                    line: at,
                    source,
                }),
                None => record_of(path, line, json, &mut seen).map(|parsed| match parsed {
                    Ok(r) => records.push(r),
                    Err(source) => damaged = Some((line, source)),
                }),
            };
            match outcome {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => {
                    failed = Some(e);
                    ControlFlow::Break(())
                }
            }
        },
    )?;
    if let Some(e) = failed {
        return Err(e);
    }
    match damaged {
        Some((line, source)) if source.is_eof() => warnings.push(Warning::new(
            WarningKind::TruncatedRecords,
            format!(
                "The last line of records.jsonl (line {line}) was cut short, as when a run stops while writing; it was skipped."
            ),
        )),
        Some((line, source)) => {
            return Err(ReportError::BadRecord {
                path: path.to_path_buf(),
                line,
                source,
            });
        }
        None => {}
    }
    if records.is_empty() {
        return Err(ReportError::NoRecords {
            path: path.to_path_buf(),
        });
    }
    Ok(records)
}

/// One line as a record: `Err` stops the report (a newer schema, a second
/// record of a step); `Ok(Err)` is a line that is not a record, which only
/// the last line may be.
fn record_of(
    path: &Path,
    line: usize,
    json: &str,
    seen: &mut RecordLines,
) -> Result<Result<StepRecord, serde_json::Error>> {
    match serde_json::from_str::<StepRecord>(json) {
        Ok(r) if r.schema_version > SCHEMA_VERSION => {
            Err(newer_schema(path, line, r.schema_version))
        }
        Ok(r) => {
            seen.check(path, line, &r)?;
            Ok(Ok(r))
        }
        Err(source) => match schema_version_of(json).filter(|v| *v > SCHEMA_VERSION) {
            Some(found) => Err(newer_schema(path, line, found)),
            None => Ok(Err(source)),
        },
    }
}

/// The line each step was first recorded on: a step (of a tool, cycle and,
/// in a git history, commit) is recorded once, and a second record would be
/// counted as a cycle of its own or replace a figure.
#[derive(Default)]
struct RecordLines(std::collections::HashMap<(String, String, u32, Step, Option<u32>), usize>);

impl RecordLines {
    fn check(&mut self, path: &Path, line: usize, r: &StepRecord) -> Result<()> {
        // The shared data (no tool) is made again, as cycle 0, by every
        // agent start of one run: each round of variants sharing a machine
        // and each cycle `--until-conclusive` adds. Its records are no
        // figure of any tool, so only a tool's steps must be recorded once.
        if r.tool.is_empty() {
            return Ok(());
        }
        let key = (
            r.run_id.clone(),
            r.tool.clone(),
            r.cycle,
            r.step.clone(),
            r.history.as_ref().map(|h| h.index),
        );
        match self.0.entry(key) {
            std::collections::hash_map::Entry::Occupied(first) => {
                Err(ReportError::DuplicateRecord {
                    path: path.to_path_buf(),
                    line,
                    first: *first.get(),
                    tool: r.tool.clone(),
                    cycle: r.cycle,
                    step: r.step.to_string(),
                })
            }
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(line);
                Ok(())
            }
        }
    }
}

fn newer_schema(path: &Path, line: usize, found: u32) -> ReportError {
    ReportError::NewerSchema {
        path: path.to_path_buf(),
        line,
        found,
        known: SCHEMA_VERSION,
    }
}

fn schema_version_of(json: &str) -> Option<u32> {
    #[derive(Deserialize)]
    struct Versioned {
        schema_version: u32,
    }
    serde_json::from_str::<Versioned>(json)
        .ok()
        .map(|v| v.schema_version)
}

/// An optional file whose absence or damage has no warning of its own
/// (older runs lack it); a refused one is still named.
fn read_quietly(root: Root, path: &Path, warnings: &mut Vec<Warning>) -> Option<String> {
    match root.read_to_string(path, evidence_file::MAX_SMALL_FILE) {
        Ok(text) => text,
        Err(refused) => {
            warnings.push(Warning::new(
                WarningKind::MissingEnvironment,
                format!("{refused}: it was not read."),
            ));
            None
        }
    }
}

/// A comparison's file, which most runs do not have: absent is no warning,
/// unreadable is.
fn read_json_if_present<T: serde::de::DeserializeOwned>(
    root: Root,
    path: &Path,
    warnings: &mut Vec<Warning>,
    consequence: &str,
) -> Option<T> {
    if !root.exists(path) {
        return None;
    }
    read_optional_json(
        root,
        path,
        WarningKind::ComparisonNotMade,
        warnings,
        consequence,
    )
}

fn read_optional_json<T: serde::de::DeserializeOwned>(
    root: Root,
    path: &Path,
    kind: WarningKind,
    warnings: &mut Vec<Warning>,
    consequence: &str,
) -> Option<T> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let text = match root.read_to_string(path, evidence_file::MAX_SMALL_FILE) {
        Ok(Some(t)) => t,
        Ok(None) => {
            warnings.push(Warning::new(kind, format!("No raw/{name}: {consequence}.")));
            return None;
        }
        Err(refused) => {
            warnings.push(Warning::new(
                kind,
                format!(
                    "raw/{name} was refused ({}): {consequence}.",
                    refused.reason
                ),
            ));
            return None;
        }
    };
    match serde_json::from_str(&text) {
        Ok(v) => Some(v),
        Err(e) => {
            warnings.push(Warning::new(
                kind,
                format!("raw/{name} is not valid ({e}): {consequence}."),
            ));
            None
        }
    }
}

/// `sha256sum` lines: `<64 hex>  <path>` (or `<hex> *<path>` in binary mode).
/// Lines of any other shape are ignored.
pub fn parse_binary_digests(text: &str) -> Vec<BinaryDigest> {
    text.lines()
        .filter_map(|line| {
            let (hex, rest) = line.trim().split_once(char::is_whitespace)?;
            let path = rest.trim_start().trim_start_matches('*');
            let is_digest = hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit());
            (is_digest && !path.is_empty()).then(|| BinaryDigest {
                path: path.to_string(),
                sha256: hex.to_ascii_lowercase(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` records of restic's backup_full, one a cycle.
    fn records(n: u32) -> String {
        (1..=n)
            .map(|cycle| {
                let r = StepRecord::blank("run", "restic", cycle, Step::BACKUP_FULL, 0);
                serde_json::to_string(&r).unwrap_or_default() + "\n"
            })
            .collect()
    }

    #[test]
    fn records_past_the_bound_stop_the_report_as_they_are_read() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("records.jsonl");
        std::fs::write(&path, records(4)).unwrap();
        let mut warnings = Vec::new();
        let kept = read_records_bounded(Root::Dir(tmp.path()), &path, &mut warnings, 4).unwrap();
        assert_eq!(kept.len(), 4);
        std::fs::write(&path, records(5)).unwrap();
        let err = read_records_bounded(Root::Dir(tmp.path()), &path, &mut warnings, 4).unwrap_err();
        assert!(
            matches!(err, ReportError::TooManyRecords { max: 4, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("in memory"), "{err}");
    }
}
