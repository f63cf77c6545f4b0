use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "{path} is not a labrun results store ({detail}); point --db at another file, or move this one away to start a new store"
    )]
    Foreign { path: PathBuf, detail: String },
    #[error(
        "the results store {path} is at schema version {found}, newer than this labrun's {supported}; use a newer labrun, or point --db at another store"
    )]
    Newer {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error(
        "cannot import {path}: {detail}; check the run is finished and its pack is whole (`labrun pack` it again from its folder), then run `labrun import` again"
    )]
    BadRun { path: PathBuf, detail: String },
    #[error(
        "cannot import {path}: it is a variants run (several runs in one), which the store does not take yet; import each variant's run folder (variants/<name>/ inside it) instead"
    )]
    VariantsRun { path: PathBuf },
    #[error(
        "cannot import {path}: it is still running (no end recorded yet); wait for `labrun bench` to finish (or `labrun bench --attach` it), then run `labrun import` again"
    )]
    StillRunning { path: PathBuf },
    #[error(
        "the results store {path} failed: {source}; nothing of this run was imported (check free disk space and permissions, then run `labrun import` again)"
    )]
    Database {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error(
        "cannot keep the pack in {path}: {source}; nothing of this run was imported (check free disk space and permissions, then run `labrun import` again)"
    )]
    Keep {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
