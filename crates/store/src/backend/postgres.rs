//! A team's store: a PostgreSQL server (`--db postgres://user@host:port/db`).
//! The same schema and queries as SQLite's; the password comes from
//! PGPASSWORD or the pgpass file, never from the URL (a URL is on a command
//! line, in a shell's history, in logs).

use super::{Backend, Value};
use crate::{MIGRATIONS, StoreError, latest};
use postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use postgres::{Client, Config, NoTls};

/// The lock two labruns take while migrating one server ("LBRN").
const MIGRATION_LOCK: i64 = 0x4C42_524E;

/// The tables a labrun store holds; a database with any of them but no
/// `labrun_schema` is someone else's.
const OUR_TABLES: &[&str] = &["runs", "run_tools", "samples", "packs"];

pub(crate) struct Postgres {
    /// The URL as given (it holds no password), for messages.
    url: String,
    client: Client,
}

impl Postgres {
    pub fn connect(url: &str) -> Result<Self, StoreError> {
        let bad_url = |detail: String| StoreError::BadUrl {
            url: redacted(url),
            detail,
        };
        let mut config: Config = url.parse().map_err(|e| bad_url(format!("{e}")))?;
        if config.get_password().is_some() {
            return Err(bad_url(
                "it holds a password; leave it out of the URL and put it in PGPASSWORD or the pgpass file (~/.pgpass, mode 0600)"
                    .into(),
            ));
        }
        let user = config
            .get_user()
            .map(str::to_string)
            .or_else(|| std::env::var("PGUSER").ok())
            .or_else(|| std::env::var("USER").ok())
            .ok_or_else(|| {
                bad_url("it names no user, and neither PGUSER nor USER is set".into())
            })?;
        config.user(&user);
        if config.get_dbname().is_none() {
            config.dbname(&user);
        }
        if let Some(password) = crate::pgpass::password_for(&config) {
            config.password(password);
        }
        let database = config.get_dbname().unwrap_or_default().to_string();
        let client = config
            .connect(NoTls)
            .map_err(|e| connect_err(url, &user, &database, e))?;
        Ok(Postgres {
            url: url.to_string(),
            client,
        })
    }

    fn err(&self, e: postgres::Error) -> StoreError {
        StoreError::Database {
            store: self.url.clone(),
            detail: detail_of(&e),
        }
    }

    fn migrate_in_tx(&mut self) -> Result<(), StoreError> {
        let url = self.url.clone();
        self.execute(
            "SELECT pg_advisory_xact_lock($1)",
            &[Value::Int(MIGRATION_LOCK)],
        )?;
        let has = |this: &mut Self, table: &str| -> Result<bool, StoreError> {
            let rows = this.query(
                "SELECT to_regclass(CAST($1 AS TEXT)) IS NOT NULL",
                &[Value::from(table)],
            )?;
            Ok(rows
                .first()
                .and_then(|r| r.first())
                .and_then(Value::bool)
                .unwrap_or(false))
        };
        let version = if has(self, "labrun_schema")? {
            let rows = self.query("SELECT version FROM labrun_schema", &[])?;
            let found = rows.first().and_then(|r| r.first()).and_then(Value::int);
            let Some(found) = found else {
                return Err(StoreError::Foreign {
                    store: url,
                    detail: "its labrun_schema table is empty".into(),
                });
            };
            found as u32
        } else {
            for table in OUR_TABLES {
                if has(self, table)? {
                    return Err(StoreError::Foreign {
                        store: url,
                        detail: format!(
                            "it has a table `{table}` but no labrun_schema: another program's database"
                        ),
                    });
                }
            }
            self.execute("CREATE TABLE labrun_schema (version BIGINT NOT NULL)", &[])?;
            self.execute("INSERT INTO labrun_schema (version) VALUES (0)", &[])?;
            0
        };
        if version > latest() {
            return Err(StoreError::Newer {
                store: url,
                found: version,
                supported: latest(),
            });
        }
        for sql in &MIGRATIONS[version as usize..] {
            self.client.batch_execute(sql).map_err(|e| self.err(e))?;
        }
        self.execute(
            "UPDATE labrun_schema SET version = $1",
            &[Value::Int(i64::from(latest()))],
        )?;
        Ok(())
    }
}

impl Backend for Postgres {
    fn migrate(&mut self) -> Result<(), StoreError> {
        self.begin()?;
        match self.migrate_in_tx() {
            Ok(()) => self.commit(),
            Err(e) => {
                self.rollback();
                Err(e)
            }
        }
    }

    fn begin(&mut self) -> Result<(), StoreError> {
        // A row lock or the unique key makes a second importer of one run
        // wait for the first, then find the run there.
        self.client.batch_execute("BEGIN").map_err(|e| self.err(e))
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        self.client.batch_execute("COMMIT").map_err(|e| self.err(e))
    }

    fn rollback(&mut self) {
        // Nothing to do when the failure already ended the transaction.
        let _ = self.client.batch_execute("ROLLBACK");
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, StoreError> {
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
        self.client.execute(sql, &refs).map_err(|e| self.err(e))
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, StoreError> {
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
        let rows = self.client.query(sql, &refs).map_err(|e| self.err(e))?;
        rows.iter()
            .map(|row| {
                (0..row.len())
                    .map(|i| from_row(row, i))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| self.err(e))
            })
            .collect()
    }
}

fn from_row(row: &postgres::Row, i: usize) -> Result<Value, postgres::Error> {
    let ty = row.columns()[i].type_().clone();
    Ok(if ty == Type::INT8 {
        row.try_get::<_, Option<i64>>(i)?
            .map_or(Value::Null, Value::Int)
    } else if ty == Type::INT4 {
        row.try_get::<_, Option<i32>>(i)?
            .map_or(Value::Null, |v| Value::Int(v.into()))
    } else if ty == Type::INT2 {
        row.try_get::<_, Option<i16>>(i)?
            .map_or(Value::Null, |v| Value::Int(v.into()))
    } else if ty == Type::FLOAT8 {
        row.try_get::<_, Option<f64>>(i)?
            .map_or(Value::Null, Value::Real)
    } else if ty == Type::BOOL {
        row.try_get::<_, Option<bool>>(i)?
            .map_or(Value::Null, Value::Bool)
    } else if ty == Type::BYTEA {
        row.try_get::<_, Option<Vec<u8>>>(i)?
            .map_or(Value::Null, Value::Bytes)
    } else {
        row.try_get::<_, Option<String>>(i)?
            .map_or(Value::Null, Value::Text)
    })
}

impl ToSql for Value {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut postgres::types::private::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Value::Null => Ok(IsNull::Yes),
            // The server says which integer width the column has.
            Value::Int(i) if *ty == Type::INT4 => i32::try_from(*i)?.to_sql(ty, out),
            Value::Int(i) if *ty == Type::INT2 => i16::try_from(*i)?.to_sql(ty, out),
            Value::Int(i) => i.to_sql(ty, out),
            Value::Real(r) => r.to_sql(ty, out),
            Value::Text(s) => s.to_sql(ty, out),
            Value::Bool(b) => b.to_sql(ty, out),
            Value::Bytes(b) => b.to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// `url` with any password replaced by `***`, for a message.
fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) if userinfo.contains(':') => {
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{scheme}://{user}:***@{host}{tail}")
        }
        _ => url.to_string(),
    }
}

/// A refused login and an unreachable server each get their own message.
fn connect_err(url: &str, user: &str, database: &str, e: postgres::Error) -> StoreError {
    use postgres::error::SqlState;
    let code = e.code().cloned();
    if code == Some(SqlState::INVALID_CATALOG_NAME) {
        return StoreError::NoDatabase {
            url: url.to_string(),
            database: database.to_string(),
        };
    }
    let refused = [
        SqlState::INVALID_PASSWORD,
        SqlState::INVALID_AUTHORIZATION_SPECIFICATION,
    ];
    if code.as_ref().is_some_and(|c| refused.contains(c)) || detail_of(&e).contains("password") {
        StoreError::Refused {
            url: url.to_string(),
            user: user.to_string(),
            detail: detail_of(&e),
        }
    } else {
        StoreError::Unreachable {
            url: url.to_string(),
            detail: detail_of(&e),
        }
    }
}

/// The server's own message when there is one (`postgres::Error`'s Display
/// says only "db error").
fn detail_of(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => {
            let mut s = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(inner) = source {
                s.push_str(": ");
                s.push_str(&inner.to_string());
                source = inner.source();
            }
            s
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_password_never_reaches_a_message() {
        assert_eq!(
            super::redacted("postgres://me:s3cr@t@db:5432/x?sslmode=disable"),
            "postgres://me:***@db:5432/x?sslmode=disable"
        );
        assert_eq!(super::redacted("postgres://me@db/x"), "postgres://me@db/x");
        assert_eq!(super::redacted("postgres:///x"), "postgres:///x");
    }
}
