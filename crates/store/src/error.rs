use std::path::PathBuf;

/// `store` is the SQLite file's path or the PostgreSQL URL (which never
/// holds a password: one is refused).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "{store} is not a labrun results store ({detail}); point --db at another store, or move this one away to start a new one"
    )]
    Foreign { store: String, detail: String },
    #[error(
        "the results store {store} is at schema version {found}, newer than this labrun's {supported}; use a newer labrun, or point --db at another store"
    )]
    Newer {
        store: String,
        found: u32,
        supported: u32,
    },
    #[error(
        "cannot import {path}: {detail}; check the run is finished and its pack is whole (`labrun pack` it again from its folder), then run `labrun import` again"
    )]
    BadRun { path: PathBuf, detail: String },
    #[error(
        "cannot import {path} as one run: it is a variants run (several runs in one); `labrun import` takes it as each variant's run"
    )]
    VariantsRun { path: PathBuf },
    #[error(
        "cannot import {path}: it is still running (no end recorded yet); wait for `labrun bench` to finish (or `labrun bench --attach` it), then run `labrun import` again"
    )]
    StillRunning { path: PathBuf },
    #[error(
        "the results store {store} failed: {detail}; nothing of this run was imported (check free disk space and permissions, then run `labrun import` again)"
    )]
    Database { store: String, detail: String },
    #[error(
        "cannot use {path} for the results store: {source}; check free disk space and permissions, or point --db elsewhere"
    )]
    Keep {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the store URL {url} cannot be used: {detail}")]
    BadUrl { url: String, detail: String },
    #[error(
        "cannot reach the PostgreSQL server of {url}: {detail}; check that it runs and that the URL's host and port are right (e.g. postgres://USER@HOST:5432/DB)"
    )]
    Unreachable { url: String, detail: String },
    #[error(
        "the PostgreSQL server of {url} has no database {database}; create it (`createdb -h HOST -U USER {database}`) or name another in the URL"
    )]
    NoDatabase { url: String, database: String },
    #[error(
        "the PostgreSQL server of {url} refused user {user}: {detail}; put the password in PGPASSWORD or the pgpass file (~/.pgpass, mode 0600), never in the URL"
    )]
    Refused {
        url: String,
        user: String,
        detail: String,
    },
    #[error(
        "the results store {store} holds no pack of run sha256:{digest}{why}; import the run again from its pack or folder"
    )]
    NoPack {
        store: String,
        digest: String,
        why: &'static str,
    },
}
