//! The results store: every finished run, imported once by its pack's
//! manifest digest, with its tools, dataset, environment and every sample of
//! every figure, so a comparison can be recomputed from the store alone.
//! The packs are kept content-addressed beside the database
//! (`packs/<digest>.tar.gz`), so the database can always be rebuilt.
//!
//! One run is one transaction: a failure leaves nothing of it behind, and
//! two imports of the same run keep one (the digest is the primary key).

mod error;
mod location;
mod migrations;

pub use error::StoreError;
pub use location::{DB_FILE, default_db_path};
pub use migrations::{MIGRATIONS, latest};

use labrun_report::Sample;
use rusqlite::{Connection, OptionalExtension, params};
use std::path::{Path, PathBuf};

/// SQLite's `application_id` for labrun stores: tells ours from any other
/// SQLite file ("LBRN").
const APPLICATION_ID: i32 = 0x4C42_524E;

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Imported {
    /// The run is new to the store.
    Added { digest: String, samples: usize },
    /// The store held it already; nothing changed.
    AlreadyPresent { digest: String },
}

/// One run as `labrun runs` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRun {
    pub digest: String,
    pub run_id: String,
    pub tools: Vec<String>,
    pub imported_at: String,
}

/// Which runs to list; `None` matches every run.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    pub tool: Option<String>,
    pub run_id_prefix: Option<String>,
}

pub struct Store {
    db_path: PathBuf,
    packs_dir: PathBuf,
    conn: Connection,
}

impl Store {
    /// Opens (or creates) the store whose database is `db_path`; packs go
    /// in `packs/` beside it.
    pub fn open(db_path: &Path) -> Result<Self, StoreError> {
        if let Some(parent) = db_path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| StoreError::Keep {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        let conn = Connection::open(db_path).map_err(|e| db_err(db_path, e))?;
        // Two importers at once wait for each other rather than fail.
        conn.busy_timeout(std::time::Duration::from_secs(30))
            .map_err(|e| db_err(db_path, e))?;
        let packs_dir = db_path
            .parent()
            .unwrap_or_else(|| Path::new("."))
            .join("packs");
        let mut store = Store {
            db_path: db_path.to_path_buf(),
            packs_dir,
            conn,
        };
        store.migrate()?;
        Ok(store)
    }

    fn migrate(&mut self) -> Result<(), StoreError> {
        let path = self.db_path.clone();
        let foreign = |detail: String| StoreError::Foreign {
            path: path.clone(),
            detail,
        };
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| foreign(e.to_string()))?;
        let app_id: i32 = tx
            .query_row("PRAGMA application_id", [], |r| r.get(0))
            .map_err(|e| foreign(e.to_string()))?;
        let tables: i64 = tx
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .map_err(|e| foreign(e.to_string()))?;
        if app_id != APPLICATION_ID && (app_id != 0 || tables != 0) {
            return Err(foreign("it is another program's SQLite file".into()));
        }
        let version: u32 = tx
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| db_err(&path, e))?;
        if version > latest() {
            return Err(StoreError::Newer {
                path,
                found: version,
                supported: latest(),
            });
        }
        for sql in &MIGRATIONS[version as usize..] {
            tx.execute_batch(sql).map_err(|e| db_err(&path, e))?;
        }
        // PRAGMAs take no parameters; both values are this crate's numbers.
        tx.execute_batch(&format!(
            "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {};",
            latest()
        ))
        .map_err(|e| db_err(&path, e))?;
        tx.commit().map_err(|e| db_err(&path, e))
    }

    /// Imports a finished run: a pack, or a run folder (packed first, so
    /// both get the same address).
    pub fn import(&mut self, run: &Path) -> Result<Imported, StoreError> {
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
        let plan = raw.plan.clone().unwrap_or_default();
        let run_id = plan
            .run_id
            .clone()
            .unwrap_or_else(|| raw.records[0].run_id.clone());
        let samples = labrun_report::sample::from_records(&raw.records);
        self.keep_pack(&pack_path, &digest)?;

        let path = self.db_path.clone();
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| db_err(&path, e))?;
        let dataset = plan.dataset.as_ref().map(|d| d.to_string());
        let environment = raw
            .environment
            .as_ref()
            .and_then(|e| serde_json::to_string(e).ok());
        let added = tx
            .execute(
                "INSERT INTO runs (digest, run_id, dataset, environment, imported_at) \
                 VALUES (?1, ?2, ?3, ?4, strftime('%Y-%m-%dT%H:%M:%SZ','now')) \
                 ON CONFLICT (digest) DO NOTHING",
                params![digest, run_id, dataset, environment],
            )
            .map_err(|e| db_err(&path, e))?;
        if added == 0 {
            return Ok(Imported::AlreadyPresent { digest });
        }
        for tool in &plan.tools {
            tx.execute(
                "INSERT INTO run_tools (digest, name, version) VALUES (?1, ?2, ?3) \
                 ON CONFLICT DO NOTHING",
                params![digest, tool.name, tool.version],
            )
            .map_err(|e| db_err(&path, e))?;
        }
        {
            let mut insert = tx
                .prepare(
                    "INSERT INTO samples (digest, seq, metric, value, unit, tool, cycle, step, ok, timed) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                )
                .map_err(|e| db_err(&path, e))?;
            for (seq, s) in samples.iter().enumerate() {
                let step =
                    serde_json::to_string(&s.metadata.step).map_err(|e| bad(e.to_string()))?;
                insert
                    .execute(params![
                        digest,
                        seq as i64,
                        s.metric,
                        s.value,
                        s.unit,
                        s.metadata.tool,
                        s.metadata.cycle,
                        step,
                        s.metadata.ok,
                        s.metadata.timed
                    ])
                    .map_err(|e| db_err(&path, e))?;
            }
        }
        tx.commit().map_err(|e| db_err(&path, e))?;
        Ok(Imported::Added {
            digest,
            samples: samples.len(),
        })
    }

    /// Copies the pack to `packs/<digest>.tar.gz` (beside, then renamed), so
    /// the store can be rebuilt from its packs.
    fn keep_pack(&self, pack: &Path, digest: &str) -> Result<(), StoreError> {
        let keep_err = |source| StoreError::Keep {
            path: self.packs_dir.clone(),
            source,
        };
        let target = self.packs_dir.join(format!("{digest}.tar.gz"));
        if target.is_file() {
            return Ok(());
        }
        std::fs::create_dir_all(&self.packs_dir).map_err(keep_err)?;
        let tmp = tempfile::NamedTempFile::new_in(&self.packs_dir).map_err(keep_err)?;
        std::fs::copy(pack, tmp.path()).map_err(keep_err)?;
        tmp.persist(&target).map_err(|e| keep_err(e.error))?;
        Ok(())
    }

    /// Where the pack of run `digest` is kept.
    pub fn pack_path(&self, digest: &str) -> PathBuf {
        self.packs_dir.join(format!("{digest}.tar.gz"))
    }

    /// Every sample of run `digest`, in the order the run recorded them.
    pub fn samples(&self, digest: &str) -> Result<Vec<Sample>, StoreError> {
        let path = &self.db_path;
        let mut q = self
            .conn
            .prepare(
                "SELECT s.metric, s.value, s.unit, s.tool, s.cycle, s.step, s.ok, s.timed, r.run_id \
                 FROM samples s JOIN runs r ON r.digest = s.digest \
                 WHERE s.digest = ?1 ORDER BY s.seq",
            )
            .map_err(|e| db_err(path, e))?;
        let rows = q
            .query_map(params![digest], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, f64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, u32>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, bool>(6)?,
                    r.get::<_, bool>(7)?,
                    r.get::<_, String>(8)?,
                ))
            })
            .map_err(|e| db_err(path, e))?;
        let mut samples = Vec::new();
        for row in rows {
            let (metric, value, unit, tool, cycle, step, ok, timed, run_id) =
                row.map_err(|e| db_err(path, e))?;
            let step = serde_json::from_str(&step).map_err(|e| StoreError::Foreign {
                path: path.clone(),
                detail: format!("a sample's step does not read: {e}"),
            })?;
            samples.push(Sample {
                metric,
                value,
                unit,
                metadata: labrun_report::SampleMetadata {
                    tool,
                    cycle,
                    step,
                    run_id,
                    ok,
                    timed,
                },
            });
        }
        Ok(samples)
    }

    /// The runs that match `filter`, oldest import first.
    pub fn runs(&self, filter: &RunFilter) -> Result<Vec<StoredRun>, StoreError> {
        let path = &self.db_path;
        // Filters are bound parameters: strings from packs are data, never SQL.
        let mut q = self
            .conn
            .prepare(
                "SELECT r.digest, r.run_id, r.imported_at FROM runs r \
                 WHERE (?1 IS NULL OR EXISTS (SELECT 1 FROM run_tools t WHERE t.digest = r.digest AND t.name = ?1)) \
                 AND (?2 IS NULL OR substr(r.run_id, 1, length(?2)) = ?2) \
                 ORDER BY r.imported_at, r.run_id, r.digest",
            )
            .map_err(|e| db_err(path, e))?;
        let rows: Vec<(String, String, String)> = q
            .query_map(params![filter.tool, filter.run_id_prefix], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .map_err(|e| db_err(path, e))?
            .collect::<Result<_, _>>()
            .map_err(|e| db_err(path, e))?;
        let mut tools_q = self
            .conn
            .prepare("SELECT name FROM run_tools WHERE digest = ?1 ORDER BY name")
            .map_err(|e| db_err(path, e))?;
        let mut out = Vec::with_capacity(rows.len());
        for (digest, run_id, imported_at) in rows {
            let tools = tools_q
                .query_map(params![digest], |r| r.get(0))
                .map_err(|e| db_err(path, e))?
                .collect::<Result<Vec<String>, _>>()
                .map_err(|e| db_err(path, e))?;
            out.push(StoredRun {
                digest,
                run_id,
                tools,
                imported_at,
            });
        }
        Ok(out)
    }

    /// Whether the store holds run `digest`.
    pub fn contains(&self, digest: &str) -> Result<bool, StoreError> {
        self.conn
            .query_row(
                "SELECT 1 FROM runs WHERE digest = ?1",
                params![digest],
                |_| Ok(()),
            )
            .optional()
            .map(|o| o.is_some())
            .map_err(|e| db_err(&self.db_path, e))
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

fn db_err(path: &Path, source: rusqlite::Error) -> StoreError {
    StoreError::Database {
        path: path.to_path_buf(),
        source,
    }
}
