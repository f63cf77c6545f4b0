//! How a run ended, from what its evidence says: the agent's `done.json`
//! (written last, only when the whole plan ran), its `run_finished` event
//! (with the reason when it stopped early), and, for a run with neither,
//! whether `bench` is still writing into the folder.

use crate::evidence_file;
use labrun_evidence::{Event, files};
use serde::{Deserialize, Serialize};
use std::ops::ControlFlow;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// `bench` writes `session.json` before it starts the agent and keeps it;
/// a run with it and no end went that far.
pub const SESSION_FILE: &str = "session.json";

/// `bench`'s estimate of the run's length (a run fact), `{"secs": ...}`.
pub const ESTIMATE_FILE: &str = "estimate.json";

/// How long after its last write a run with no recorded end still counts as
/// running: the host appends every event as it comes (dataset progress, step
/// starts and ends). A long step writes nothing, so a run also counts as
/// running until twice its estimate has passed since it started.
const QUIET_WHILE_RUNNING: Duration = Duration::from_secs(30 * 60);

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RunStatus {
    /// The agent ran the whole plan (`done.json`, or `run_finished` without
    /// a reason to stop). Steps may still have failed.
    /// `failed_steps`: None when the run said only that some failed.
    Finished { ok: bool, failed_steps: Option<u64> },
    /// The run stopped early and said why (a signal, Ctrl-C, a full disk).
    Stopped { because: String },
    /// No end recorded and nothing written for a while: `bench` lost the
    /// guest (the run may have gone on there: `bench --attach`).
    LostConnection,
    /// No end recorded yet, and the folder was written to lately.
    Running,
    /// No end recorded and no session to attach to: cut short before the
    /// agent started, or a copy that left the end out.
    Incomplete,
}

impl RunStatus {
    /// One or two words for a table.
    pub fn describe(&self) -> String {
        match self {
            RunStatus::Finished { ok: true, .. } => "finished".into(),
            RunStatus::Finished {
                failed_steps: Some(n),
                ..
            } => format!(
                "finished, {n} failed step{}",
                if *n == 1 { "" } else { "s" }
            ),
            RunStatus::Finished { .. } => "finished, some steps failed".into(),
            RunStatus::Stopped { because } => format!("stopped ({because})"),
            RunStatus::LostConnection => "lost connection".into(),
            RunStatus::Running => "running".into(),
            RunStatus::Incomplete => "incomplete (no end recorded)".into(),
        }
    }
}

/// The parts of `done.json` the status needs.
#[derive(Deserialize)]
struct Done {
    ok: bool,
    #[serde(default)]
    failed_steps: u64,
}

/// The parts of `session.json` the status needs.
#[derive(Deserialize)]
struct Session {
    started_unix: u64,
}

#[derive(Deserialize)]
struct Estimate {
    secs: f64,
}

/// The status of the run in `run_dir` (the folder holding `raw/`).
/// `live`: the folder is where `bench` writes, not an unpacked pack, so a
/// run without an end may still be going on.
pub fn status(run_dir: &Path, live: bool, now: SystemTime) -> Result<RunStatus, String> {
    let raw = run_dir.join(crate::RAW_DIR);
    let done: Option<Done> = small_json(run_dir, &raw.join(files::DONE))?;
    if let Some(done) = done {
        return Ok(RunStatus::Finished {
            ok: done.ok && done.failed_steps == 0,
            failed_steps: Some(done.failed_steps),
        });
    }
    if let Some(end) = last_run_finished(run_dir, &raw)? {
        return Ok(end);
    }
    let session: Option<Session> = small_json(run_dir, &run_dir.join(SESSION_FILE))?;
    let Some(session) = session.filter(|_| live) else {
        return Ok(RunStatus::Incomplete);
    };
    let quiet = newest_write(&raw)
        .and_then(|t| now.duration_since(t).ok())
        .unwrap_or(Duration::MAX);
    let estimate: Option<Estimate> = small_json(run_dir, &raw.join(ESTIMATE_FILE))?;
    let expected_end = estimate
        .filter(|e| e.secs.is_finite() && e.secs > 0.0)
        .map(|e| {
            SystemTime::UNIX_EPOCH
                + Duration::from_secs(session.started_unix)
                + Duration::from_secs_f64((2.0 * e.secs).min(1e9))
        });
    Ok(
        if quiet <= QUIET_WHILE_RUNNING || expected_end.is_some_and(|end| now < end) {
            RunStatus::Running
        } else {
            RunStatus::LostConnection
        },
    )
}

/// A small JSON file of the run (through the bounded reader), None when
/// absent; Err names it relative to the run.
pub(super) fn small_json<T: serde::de::DeserializeOwned>(
    run_dir: &Path,
    path: &Path,
) -> Result<Option<T>, String> {
    let Some(text) = evidence_file::read_to_string(run_dir, path, evidence_file::MAX_SMALL_FILE)
        .map_err(|e| e.to_string())?
    else {
        return Ok(None);
    };
    let shown = path.strip_prefix(run_dir).unwrap_or(path);
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| format!("{} is damaged: {e}", shown.display()))
}

/// The last `run_finished` event of `raw/events.jsonl`, as a status.
fn last_run_finished(run_dir: &Path, raw: &Path) -> Result<Option<RunStatus>, String> {
    let mut end = None;
    evidence_file::for_each_line(
        run_dir,
        &raw.join(files::EVENTS),
        evidence_file::MAX_RECORDS_FILE,
        evidence_file::MAX_RECORD_LINE,
        |_, line| {
            // Only the rare end line is parsed; the rest is skipped unread.
            if line.contains("\"run_finished\"")
                && let Ok(Event::RunFinished {
                    ok,
                    stopped_because,
                }) = serde_json::from_str::<Event>(line)
            {
                end = Some(match stopped_because {
                    Some(because) => RunStatus::Stopped { because },
                    None => RunStatus::Finished {
                        ok,
                        failed_steps: ok.then_some(0),
                    },
                });
            }
            ControlFlow::Continue(())
        },
    )
    .map_err(|e| e.to_string())?;
    Ok(end)
}

/// When anything directly under `raw/` was last written.
fn newest_write(raw: &Path) -> Option<SystemTime> {
    std::fs::read_dir(raw)
        .ok()?
        .filter_map(|e| e.ok()?.metadata().ok()?.modified().ok())
        .max()
}
