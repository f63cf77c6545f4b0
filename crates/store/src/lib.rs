//! The results store: every finished run, imported once by its pack's
//! manifest digest, with its lab, tools, dataset, machine class and every
//! sample of every figure, so a comparison can be recomputed from the store
//! alone; and the pack itself, so the store can always be rebuilt.
//!
//! One interface, two databases ([`backend`]): an SQLite file by default
//! (nothing to set up), a PostgreSQL server for a team (`--db
//! postgres://...`). The same schema ([`migrations`]) and the same
//! statements ([`queries`]) on both.
//!
//! One run is one transaction: a failure leaves nothing of it behind, and
//! two imports of the same run keep one (the digest is the primary key).

mod backend;
mod error;
mod location;
mod migrations;
mod pgpass;
mod queries;
mod run_facts;
#[cfg(feature = "test-postgres")]
pub mod test_support;

pub use error::StoreError;
pub use location::{DB_FILE, Location, default_db_path};
pub use migrations::{MIGRATIONS, latest};

use backend::{Backend, Value};
use labrun_report::Sample;
use run_facts::RunFacts;
use std::path::{Path, PathBuf};

/// SQLite's `application_id` for labrun stores: tells ours from any other
/// SQLite file ("LBRN").
pub(crate) const APPLICATION_ID: i32 = 0x4C42_524E;

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Imported {
    /// The run is new to the store.
    Added { digest: String, samples: usize },
    /// The store held it already; nothing changed.
    AlreadyPresent { digest: String },
}

impl Imported {
    pub fn digest(&self) -> &str {
        match self {
            Imported::Added { digest, .. } | Imported::AlreadyPresent { digest } => digest,
        }
    }
}

/// One tool of a stored run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredTool {
    pub name: String,
    pub version: Option<String>,
}

/// One run as the store keeps it (without its samples).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRun {
    pub digest: String,
    pub run_id: String,
    pub tools: Vec<StoredTool>,
    pub imported_at: String,
    pub lab: Option<String>,
    pub lab_digest: Option<String>,
    /// The plan's dataset, as JSON.
    pub dataset: Option<String>,
    /// [`labrun_report::MachineClass`]'s key.
    pub machine_class: Option<String>,
    pub acceleration: Option<String>,
    pub finished_at: Option<String>,
    /// Where the run came from (`labrun import --from`, else the machine
    /// that imported it).
    pub origin: Option<String>,
}

/// Which runs to list; each `None` matches every run.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    pub tool: Option<String>,
    pub run_id_prefix: Option<String>,
    pub lab: Option<String>,
    /// A part of the dataset's description (e.g. `synthetic`, `"seed":7`).
    pub dataset: Option<String>,
    /// A part of the machine class (e.g. `tcg`, `4 vCPU`).
    pub machine: Option<String>,
    /// Finished at or after (RFC 3339 or a prefix of it: `2026-12-01`).
    pub since: Option<String>,
    /// Finished before.
    pub until: Option<String>,
    pub digest_prefix: Option<String>,
}

pub struct Store {
    location: Location,
    backend: Box<dyn Backend>,
}

impl Store {
    /// Opens (or creates) the SQLite store `db_path`.
    pub fn open(db_path: &Path) -> Result<Self, StoreError> {
        Self::connect(&Location::Sqlite(db_path.to_path_buf()))
    }

    /// Opens the store at `location`, bringing its schema up to date.
    pub fn connect(location: &Location) -> Result<Self, StoreError> {
        let backend: Box<dyn Backend> = match location {
            Location::Sqlite(path) => Box::new(backend::sqlite::Sqlite::open(path)?),
            Location::Postgres(url) => Box::new(backend::postgres::Postgres::connect(url)?),
        };
        let mut store = Store {
            location: location.clone(),
            backend,
        };
        store.backend.migrate()?;
        Ok(store)
    }

    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Imports a finished run as [`Store::import`] does, and a variants run
    /// (several runs in one folder or pack) as each of its variants' runs.
    /// One result per run, labelled with the path and, for a variant, its
    /// name; each run is its own transaction.
    pub fn import_all(
        &mut self,
        run: &Path,
        origin: Option<&str>,
    ) -> Vec<(String, Result<Imported, StoreError>)> {
        let label = run.display().to_string();
        let opened_pack = if run.is_dir() {
            None
        } else {
            match labrun_report::pack::open(run) {
                Ok(o) => Some(o),
                Err(e) => {
                    let err = StoreError::BadRun {
                        path: run.to_path_buf(),
                        detail: e.to_string(),
                    };
                    return vec![(label, Err(err))];
                }
            }
        };
        let dir = opened_pack.as_ref().map_or(run, |o| o.dir());
        if !labrun_report::variants::is_variants_run(dir) {
            // A pack opened here is imported as opened, not opened again.
            let result = match &opened_pack {
                Some(o) => self.import_opened(run, run, o, origin),
                None => self.import(run, origin),
            };
            return vec![(label, result)];
        }
        let variants = dir.join("variants");
        let mut names: Vec<PathBuf> = std::fs::read_dir(&variants)
            .into_iter()
            .flatten()
            .flatten()
            // A variant is a plain folder with its own evidence; links are
            // not followed out of the folder we were given.
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .filter(|p| p.join(labrun_report::RAW_DIR).is_dir())
            .collect();
        names.sort();
        if names.is_empty() {
            let err = StoreError::BadRun {
                path: run.to_path_buf(),
                detail: "it is a variants run whose variants/ holds no run".into(),
            };
            return vec![(label, Err(err))];
        }
        names
            .into_iter()
            .map(|variant| {
                let name = variant
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                (
                    format!("{label} (variant {name})"),
                    self.import(&variant, origin),
                )
            })
            .collect()
    }

    /// Imports a finished run: a pack, or a run folder (packed first, so
    /// both get the same address). `origin` says where it came from. A
    /// variants run is refused: [`Store::import_all`] takes it.
    pub fn import(&mut self, run: &Path, origin: Option<&str>) -> Result<Imported, StoreError> {
        let bad = |detail: String| StoreError::BadRun {
            path: run.to_path_buf(),
            detail,
        };
        if run.is_dir() && still_running(run).map_err(bad)? {
            return Err(StoreError::StillRunning {
                path: run.to_path_buf(),
            });
        }
        let scratch = tempfile::tempdir().map_err(|e| bad(e.to_string()))?;
        let pack_path = if run.is_dir() {
            let out = scratch.path().join("run.tar.gz");
            labrun_report::pack::write(run, &out).map_err(|e| bad(e.to_string()))?;
            out
        } else {
            run.to_path_buf()
        };
        let opened = labrun_report::pack::open(&pack_path).map_err(|e| bad(e.to_string()))?;
        self.import_opened(run, &pack_path, &opened, origin)
    }

    /// Imports the run `run` names, already packed at `pack_path` and
    /// opened (checked against its manifest) as `opened`.
    fn import_opened(
        &mut self,
        run: &Path,
        pack_path: &Path,
        opened: &labrun_report::pack::OpenedRun,
        origin: Option<&str>,
    ) -> Result<Imported, StoreError> {
        let bad = |detail: String| StoreError::BadRun {
            path: run.to_path_buf(),
            detail,
        };
        let digest = opened
            .manifest_sha256()
            .ok_or_else(|| bad("it is neither a run folder nor a pack".into()))?
            .to_string();
        if labrun_report::variants::is_variants_run(opened.dir()) {
            return Err(StoreError::VariantsRun {
                path: run.to_path_buf(),
            });
        }
        let raw = labrun_report::evidence::load(opened.dir()).map_err(|e| bad(e.to_string()))?;
        if raw.records.is_empty() {
            return Err(bad("it holds no step records".into()));
        }
        let facts = RunFacts::read(opened.dir(), &raw);
        let samples = labrun_report::sample::from_records(&raw.records);
        // The pack was opened and checked from this file; its bytes go in
        // the same transaction as its rows.
        let pack = std::fs::read(pack_path).map_err(|e| bad(e.to_string()))?;
        let origin = origin.map(str::to_string).or_else(this_machine);

        self.backend.begin()?;
        let result = self.insert(&digest, &facts, &samples, pack, origin);
        match result {
            Ok(imported) => {
                self.backend.commit()?;
                Ok(imported)
            }
            Err(e) => {
                self.backend.rollback();
                Err(e)
            }
        }
    }

    fn insert(
        &mut self,
        digest: &str,
        facts: &RunFacts,
        samples: &[Sample],
        pack: Vec<u8>,
        origin: Option<String>,
    ) -> Result<Imported, StoreError> {
        let db = &mut self.backend;
        let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
        let added = db.execute(
            queries::INSERT_RUN,
            &[
                digest.into(),
                facts.run_id.clone().into(),
                facts.dataset.clone().into(),
                facts.environment.clone().into(),
                now.into(),
                facts.lab.clone().into(),
                facts.lab_digest.clone().into(),
                facts.machine_class.clone().into(),
                facts.acceleration.clone().into(),
                facts.finished_at.clone().into(),
                origin.into(),
            ],
        )?;
        db.execute(queries::INSERT_PACK, &[digest.into(), Value::Bytes(pack)])?;
        if added == 0 {
            return Ok(Imported::AlreadyPresent {
                digest: digest.to_string(),
            });
        }
        for (name, version) in &facts.tools {
            db.execute(
                queries::INSERT_TOOL,
                &[digest.into(), name.clone().into(), version.clone().into()],
            )?;
        }
        for (seq, s) in samples.iter().enumerate() {
            let step = serde_json::to_string(&s.metadata.step).map_err(|e| StoreError::BadRun {
                path: PathBuf::from(&facts.run_id),
                detail: e.to_string(),
            })?;
            db.execute(
                queries::INSERT_SAMPLE,
                &[
                    digest.into(),
                    Value::Int(seq as i64),
                    s.metric.clone().into(),
                    s.value.into(),
                    s.unit.clone().into(),
                    s.metadata.tool.clone().into(),
                    Value::Int(i64::from(s.metadata.cycle)),
                    step.into(),
                    s.metadata.ok.into(),
                    s.metadata.timed.into(),
                ],
            )?;
        }
        Ok(Imported::Added {
            digest: digest.to_string(),
            samples: samples.len(),
        })
    }

    /// The pack of run `digest`, byte for byte as imported.
    pub fn pack(&mut self, digest: &str) -> Result<Vec<u8>, StoreError> {
        let store = self.location.to_string();
        let no_pack = |why| StoreError::NoPack {
            store: store.clone(),
            digest: digest.to_string(),
            why,
        };
        let rows = self.backend.query(queries::PACK, &[digest.into()])?;
        match rows.into_iter().next().and_then(|r| r.into_iter().next()) {
            Some(v) => v.bytes().ok_or_else(|| no_pack(" (its pack is not bytes)")),
            None if self.contains(digest)? => Err(no_pack(
                " (it was imported by an older labrun, which kept packs beside the database)",
            )),
            None => Err(no_pack("")),
        }
    }

    /// Writes the pack of run `digest` into `dir` as `<digest>.tar.gz`.
    pub fn write_pack(&mut self, digest: &str, dir: &Path) -> Result<PathBuf, StoreError> {
        let bytes = self.pack(digest)?;
        let path = dir.join(format!("{digest}.tar.gz"));
        std::fs::write(&path, bytes).map_err(|source| StoreError::Keep {
            path: path.clone(),
            source,
        })?;
        Ok(path)
    }

    /// Every sample of run `digest`, in the order the run recorded them.
    pub fn samples(&mut self, digest: &str) -> Result<Vec<Sample>, StoreError> {
        let store = self.location.to_string();
        let unreadable = |what: &str| StoreError::Foreign {
            store: store.clone(),
            detail: format!("a sample's {what} does not read"),
        };
        let rows = self.backend.query(queries::SAMPLES, &[digest.into()])?;
        let mut samples = Vec::with_capacity(rows.len());
        for row in rows {
            let [metric, value, unit, tool, cycle, step, ok, timed, run_id] =
                <[Value; 9]>::try_from(row).map_err(|_| unreadable("row"))?;
            let step = step.text().ok_or_else(|| unreadable("step"))?;
            samples.push(Sample {
                metric: metric.text().ok_or_else(|| unreadable("metric"))?,
                value: value.real().ok_or_else(|| unreadable("value"))?,
                unit: unit.text().ok_or_else(|| unreadable("unit"))?,
                metadata: labrun_report::SampleMetadata {
                    tool: tool.text().ok_or_else(|| unreadable("tool"))?,
                    cycle: cycle
                        .int()
                        .and_then(|c| u32::try_from(c).ok())
                        .ok_or_else(|| unreadable("cycle"))?,
                    step: serde_json::from_str(&step).map_err(|_| unreadable("step"))?,
                    run_id: run_id.text().ok_or_else(|| unreadable("run id"))?,
                    ok: ok.bool().ok_or_else(|| unreadable("ok"))?,
                    timed: timed.bool().ok_or_else(|| unreadable("timed"))?,
                },
            });
        }
        Ok(samples)
    }

    /// The runs that match `filter`, oldest import first.
    pub fn runs(&mut self, filter: &RunFilter) -> Result<Vec<StoredRun>, StoreError> {
        // Filters are bound parameters: strings from users and packs are
        // data, never SQL.
        let params: Vec<Value> = [
            &filter.tool,
            &filter.run_id_prefix,
            &filter.lab,
            &filter.dataset,
            &filter.machine,
            &filter.since,
            &filter.until,
            &filter.digest_prefix,
        ]
        .into_iter()
        .map(|f| f.clone().filter(|s| !s.is_empty()).into())
        .collect();
        let rows = self.backend.query(queries::RUNS, &params)?;
        // Every run's tools in one query (not one per run: a server is a
        // round trip away), then handed to their runs.
        let mut tools_of: std::collections::HashMap<String, Vec<StoredTool>> =
            std::collections::HashMap::new();
        for t in self.backend.query(queries::TOOLS, &[])? {
            let mut t = t.into_iter().map(Value::text);
            let digest = t.next().flatten().unwrap_or_default();
            tools_of.entry(digest).or_default().push(StoredTool {
                name: t.next().flatten().unwrap_or_default(),
                version: t.next().flatten(),
            });
        }
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let mut v = row.into_iter().map(Value::text);
            let mut next = || v.next().flatten();
            let digest = next().unwrap_or_default();
            let run_id = next().unwrap_or_default();
            let imported_at = next().unwrap_or_default();
            let tools = tools_of.remove(&digest).unwrap_or_default();
            out.push(StoredRun {
                digest,
                run_id,
                tools,
                imported_at,
                lab: next(),
                lab_digest: next(),
                dataset: next(),
                machine_class: next(),
                acceleration: next(),
                finished_at: next(),
                origin: next(),
            });
        }
        Ok(out)
    }

    /// The one run `id` names: a digest or its prefix (`sha256:` optional),
    /// or a run id. Several or none is an error that lists what matched.
    pub fn resolve(&mut self, id: &str) -> Result<StoredRun, String> {
        let id = id.strip_prefix("sha256:").unwrap_or(id);
        let by = |filter: RunFilter, this: &mut Self| this.runs(&filter).map_err(|e| e.to_string());
        let mut found = by(
            RunFilter {
                digest_prefix: Some(id.to_string()),
                ..RunFilter::default()
            },
            self,
        )?;
        if found.is_empty() {
            found = by(
                RunFilter {
                    run_id_prefix: Some(id.to_string()),
                    ..RunFilter::default()
                },
                self,
            )?
            .into_iter()
            .filter(|r| r.run_id == id)
            .collect();
        }
        match found.len() {
            1 => Ok(found.remove(0)),
            0 => Err(format!(
                "no run in the store {} is {id}; `labrun runs --db ...` lists them",
                self.location
            )),
            n => Err(format!(
                "{n} runs in the store {} match {id} ({}); give more of the digest",
                self.location,
                found
                    .iter()
                    .map(|r| format!("sha256:{}", &r.digest[..r.digest.len().min(12)]))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    /// Whether the store holds run `digest`.
    pub fn contains(&mut self, digest: &str) -> Result<bool, StoreError> {
        Ok(!self
            .backend
            .query(queries::HAS_RUN, &[digest.into()])?
            .is_empty())
    }
}

/// A run folder `bench` may still be writing is not imported: its samples
/// would be a part of the run's, kept as if whole.
fn still_running(run: &Path) -> Result<bool, String> {
    use labrun_report::runs::RunStatus;
    Ok(matches!(
        labrun_report::runs::status(run, true, std::time::SystemTime::now())?,
        RunStatus::Running | RunStatus::LostConnection
    ))
}

/// This machine's host name: a run's origin when the importer names none.
fn this_machine() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
}
