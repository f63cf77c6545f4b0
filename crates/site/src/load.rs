//! The store's runs as the site shows them: each read from its kept pack
//! as `labrun report` reads it (the pack checked against its manifest, the
//! evidence loaded, the summary made), in memory, with its dataset and
//! its machine class ([`MachineClass::of`], the one rule).

use labrun_report::evidence::RawRun;
use labrun_report::{MachineClass, Summary};
use labrun_store::{RunFilter, Store, StoredRun};

/// One run of the store, read.
pub struct SiteRun {
    /// The pack's manifest digest (hex): the run's identity and its folder
    /// in the site (`runs/<digest>/`).
    pub digest: String,
    pub run_id: String,
    /// When its first step started (the records' clock), if recorded.
    pub started_unix_ms: Option<u64>,
    /// The dataset as the plan gave it, one line: runs of different
    /// datasets are never put in one line or verdict.
    pub dataset: String,
    pub class: MachineClass,
    pub summary: Summary,
    /// The evidence itself: compare's rule reads it.
    pub raw: RawRun,
}

/// A run of the store the site could not show, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub digest: String,
    pub reason: String,
}

/// Every run of the store, read; the ones that do not read are left out,
/// each with its reason (the store and its packs are never changed).
pub fn all(store: &mut Store) -> Result<(Vec<SiteRun>, Vec<Skipped>), labrun_store::StoreError> {
    matching(store, &RunFilter::default())
}

/// The runs of the store `filter` selects, read as [`all`] reads them.
pub fn matching(
    store: &mut Store,
    filter: &RunFilter,
) -> Result<(Vec<SiteRun>, Vec<Skipped>), labrun_store::StoreError> {
    let stored = store.runs(filter)?;
    Ok(read(store, stored))
}

/// `stored` (runs the store listed), read as [`all`] reads them, in the
/// order given. The packs come from the store one at a time (one
/// connection); checking and summarizing them, most of a question's time,
/// runs on every core, a batch at a time so that only a few packs are held
/// in memory at once.
pub fn read(store: &mut Store, stored: Vec<StoredRun>) -> (Vec<SiteRun>, Vec<Skipped>) {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut runs = Vec::new();
    let mut skipped = Vec::new();
    let mut pending = stored.into_iter().peekable();
    while pending.peek().is_some() {
        let batch: Vec<(StoredRun, Result<Vec<u8>, String>)> = pending
            .by_ref()
            .take(workers * BATCH_PER_WORKER)
            .map(|stored| {
                let bytes = fetch(store, &stored);
                (stored, bytes)
            })
            .collect();
        let read = read_side_by_side(&batch, workers);
        for ((stored, _), read) in batch.into_iter().zip(read) {
            match read {
                Ok(run) => runs.push(run),
                Err(reason) => skipped.push(Skipped {
                    digest: stored.digest,
                    reason,
                }),
            }
        }
    }
    (runs, skipped)
}

/// Packs a worker reads per batch: enough to even out packs of different
/// sizes, few enough that a batch of large runs fits in memory.
const BATCH_PER_WORKER: usize = 4;

/// `batch` read on up to `workers` threads, each a contiguous part of it,
/// the results in the batch's order.
fn read_side_by_side(
    batch: &[(StoredRun, Result<Vec<u8>, String>)],
    workers: usize,
) -> Vec<Result<SiteRun, String>> {
    let per_worker = batch.len().div_ceil(workers.max(1)).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = batch
            .chunks(per_worker)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|(stored, bytes)| match bytes {
                            Ok(b) => one(stored, b),
                            Err(why) => Err(why.clone()),
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| match h.join() {
                Ok(read) => read,
                // A reader that panicked is a bug in labrun, not in the
                // run: carry the panic on rather than drop its runs.
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    })
}

/// The run's kept pack, from the store.
fn fetch(store: &mut Store, stored: &StoredRun) -> Result<Vec<u8>, String> {
    // The digest names a folder of the site: only a SHA-256 in hex may.
    if stored.digest.len() != 64 || !stored.digest.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("its identity is not a SHA-256 digest".into());
    }
    store.pack(&stored.digest).map_err(|e| e.to_string())
}

fn one(stored: &StoredRun, bytes: &[u8]) -> Result<SiteRun, String> {
    // The pack is read from the store into memory and checked against its
    // manifest file by file, as `labrun report` checks any pack; nothing
    // is unpacked to disk (a folder per run was most of the time a
    // question over many runs took).
    let name = std::path::PathBuf::from(format!("the store's pack sha256:{}", stored.digest));
    let pack = labrun_report::pack::read_in_memory(&name, bytes).map_err(|e| {
        format!("its kept pack does not read ({e}); import the run again to keep it")
    })?;
    let raw = labrun_report::evidence::load_in_memory(&pack.files, &pack.run)
        .map_err(|e| e.to_string())?;
    let summary = labrun_report::summarize_raw(raw.clone());
    let dataset = raw
        .plan
        .as_ref()
        .and_then(|p| p.dataset.as_ref())
        .map_or_else(|| "dataset not recorded".to_string(), dataset_label);
    let class = raw
        .environment
        .as_ref()
        .map(MachineClass::of)
        .unwrap_or_default();
    let started_unix_ms = raw
        .records
        .iter()
        .map(|r| r.started_unix_ms)
        .filter(|&ms| ms > 0)
        .min();
    Ok(SiteRun {
        digest: stored.digest.clone(),
        run_id: summary.run_id.clone(),
        started_unix_ms,
        dataset,
        class,
        summary,
        raw,
    })
}

/// The plan's dataset as one line: `key=value` pairs in the plan's key
/// order, or the value itself.
pub fn dataset_label(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Object(map) => map
            .iter()
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect::<Vec<_>>()
            .join(", "),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl SiteRun {
    /// The version the run's plan gave `tool`, if any.
    pub fn version_of(&self, tool: &str) -> Option<&str> {
        self.summary
            .tools
            .iter()
            .find(|t| t.tool == tool)
            .and_then(|t| t.version.as_deref())
            .filter(|v| !v.is_empty())
    }

    /// The tools the run measured (a noise floor's A/A copy is not one).
    pub fn tools(&self) -> impl Iterator<Item = &str> {
        self.summary
            .tools
            .iter()
            .filter(|t| t.noise_floor_of.is_none())
            .map(|t| t.tool.as_str())
    }

    /// `2026-12-01T14:47:49Z`, or `-` when the records have no clock.
    pub fn date(&self) -> String {
        self.started_unix_ms.map_or_else(
            || "-".to_string(),
            |ms| {
                let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
                humantime::format_rfc3339_seconds(t).to_string()
            },
        )
    }
}
