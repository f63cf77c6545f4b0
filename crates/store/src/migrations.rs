//! The schema as data: numbered SQL files, applied in order, each once, the
//! same on SQLite and PostgreSQL (plain SQL both accept). The store records
//! the version it reached, so a store written by a newer labrun is refused
//! rather than misread.

/// Every migration, in order; the store's version is the count applied.
pub const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/0001_runs_and_samples.sql"),
    include_str!("../migrations/0002_run_facts_and_packs.sql"),
];

/// The version this labrun writes and reads.
pub fn latest() -> u32 {
    MIGRATIONS.len() as u32
}
