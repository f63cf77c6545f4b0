//! The default store: an embedded SQLite file. Nothing to install or run.

use super::{Backend, Value};
use crate::{APPLICATION_ID, MIGRATIONS, StoreError, latest};
use rusqlite::Connection;
use rusqlite::types::ValueRef;
use std::path::{Path, PathBuf};

pub(crate) struct Sqlite {
    path: PathBuf,
    conn: Connection,
}

impl Sqlite {
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| StoreError::Keep {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        let err = |e| db_err(path, e);
        let conn = Connection::open(path).map_err(err)?;
        // Two importers at once wait for each other rather than fail.
        conn.busy_timeout(std::time::Duration::from_secs(30))
            .map_err(err)?;
        conn.execute_batch("PRAGMA foreign_keys = ON")
            .map_err(err)?;
        Ok(Sqlite {
            path: path.to_path_buf(),
            conn,
        })
    }

    fn err(&self, e: rusqlite::Error) -> StoreError {
        db_err(&self.path, e)
    }

    fn migrate_in_tx(&mut self) -> Result<(), StoreError> {
        let foreign = |detail: String| StoreError::Foreign {
            store: self.path.display().to_string(),
            detail,
        };
        let app_id: i32 = self
            .conn
            .query_row("PRAGMA application_id", [], |r| r.get(0))
            .map_err(|e| foreign(e.to_string()))?;
        let tables: i64 = self
            .conn
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .map_err(|e| foreign(e.to_string()))?;
        if app_id != APPLICATION_ID && (app_id != 0 || tables != 0) {
            return Err(foreign("it is another program's SQLite file".into()));
        }
        let version: u32 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        if version > latest() {
            return Err(StoreError::Newer {
                store: self.path.display().to_string(),
                found: version,
                supported: latest(),
            });
        }
        for sql in &MIGRATIONS[version as usize..] {
            self.conn.execute_batch(sql).map_err(|e| self.err(e))?;
        }
        // PRAGMAs take no parameters; both values are this crate's numbers.
        self.conn
            .execute_batch(&format!(
                "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {};",
                latest()
            ))
            .map_err(|e| self.err(e))
    }
}

impl Backend for Sqlite {
    fn migrate(&mut self) -> Result<(), StoreError> {
        // A file that is not SQLite fails as the first statement reads it.
        self.conn.execute_batch("BEGIN IMMEDIATE").map_err(|e| {
            if e.sqlite_error_code() == Some(rusqlite::ErrorCode::NotADatabase) {
                StoreError::Foreign {
                    store: self.path.display().to_string(),
                    detail: "it is not an SQLite file".into(),
                }
            } else {
                self.err(e)
            }
        })?;
        match self.migrate_in_tx() {
            // Only outside a transaction does this PRAGMA take effect.
            Ok(()) => self.commit().and_then(|()| {
                self.conn
                    .execute_batch("PRAGMA foreign_keys = ON")
                    .map_err(|e| self.err(e))
            }),
            Err(e) => {
                self.rollback();
                Err(e)
            }
        }
    }

    fn begin(&mut self) -> Result<(), StoreError> {
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(|e| self.err(e))
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        self.conn.execute_batch("COMMIT").map_err(|e| self.err(e))
    }

    fn rollback(&mut self) {
        // Nothing to do when the failure already ended the transaction.
        let _ = self.conn.execute_batch("ROLLBACK");
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(sql)
            .map_err(|e| db_err(&self.path, e))?;
        stmt.execute(rusqlite::params_from_iter(params.iter().map(to_sql)))
            .map(|n| n as u64)
            .map_err(|e| db_err(&self.path, e))
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(sql)
            .map_err(|e| db_err(&self.path, e))?;
        let columns = stmt.column_count();
        let mut rows = stmt
            .query(rusqlite::params_from_iter(params.iter().map(to_sql)))
            .map_err(|e| db_err(&self.path, e))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(|e| db_err(&self.path, e))? {
            let mut values = Vec::with_capacity(columns);
            for i in 0..columns {
                let v = row.get_ref(i).map_err(|e| db_err(&self.path, e))?;
                values.push(from_sql(v));
            }
            out.push(values);
        }
        Ok(out)
    }
}

fn to_sql(v: &Value) -> rusqlite::types::Value {
    use rusqlite::types::Value as V;
    match v {
        Value::Null => V::Null,
        Value::Int(i) => V::Integer(*i),
        Value::Real(r) => V::Real(*r),
        Value::Text(s) => V::Text(s.clone()),
        Value::Bool(b) => V::Integer(i64::from(*b)),
        Value::Bytes(b) => V::Blob(b.clone()),
    }
}

fn from_sql(v: ValueRef) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        ValueRef::Real(r) => Value::Real(r),
        ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::Bytes(b.to_vec()),
    }
}

fn db_err(path: &Path, source: rusqlite::Error) -> StoreError {
    StoreError::Database {
        store: path.display().to_string(),
        detail: source.to_string(),
    }
}
