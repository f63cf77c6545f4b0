//! Which results store a command uses: `--db FILE|URL` or `LABRUN_DB`, else
//! the default SQLite file in the data folder. One argument for every
//! command that reads or writes the store.

use labrun_store::Location;

#[derive(clap::Args, Clone, Debug)]
pub struct DbArg {
    /// The results store: an SQLite file, or a PostgreSQL server as
    /// `postgres://USER@HOST:PORT/DB` (the password from PGPASSWORD or
    /// ~/.pgpass, never in the URL). Default: the data folder's SQLite file
    /// (`/var/lib/labrun/runs.sqlite` for root, else
    /// `$XDG_DATA_HOME/labrun/runs.sqlite`).
    #[arg(long = "db", env = "LABRUN_DB", value_name = "FILE|URL")]
    pub db: Option<String>,
}

impl DbArg {
    pub fn location(&self) -> anyhow::Result<Location> {
        location_of(self.db.as_deref())
    }
}

/// `value` as a store; empty or absent: LABRUN_DB's, else the default
/// store (`--db` given without a value).
pub fn location_of(value: Option<&str>) -> anyhow::Result<Location> {
    let from_env = std::env::var("LABRUN_DB").ok();
    match value
        .filter(|v| !v.is_empty())
        .or(from_env.as_deref().filter(|v| !v.is_empty()))
    {
        Some(v) => Ok(Location::parse(v)),
        None => Location::default_sqlite().ok_or_else(|| {
            anyhow::anyhow!(
                "no folder for the results store: neither HOME nor XDG_DATA_HOME is set; pass --db FILE|URL or set LABRUN_DB"
            )
        }),
    }
}

/// Opens the store off the async runtime (a server may take a while).
pub async fn open(location: Location) -> anyhow::Result<labrun_store::Store> {
    Ok(tokio::task::spawn_blocking(move || labrun_store::Store::connect(&location)).await??)
}

/// Opens a store a command only reads: a missing SQLite file is refused
/// (opening would make an empty store and answer about nothing).
pub async fn open_existing(location: Location) -> anyhow::Result<labrun_store::Store> {
    if let Location::Sqlite(file) = &location
        && !file.is_file()
    {
        anyhow::bail!(
            "no results store at {}: import runs first (`labrun import PACK|RUN_DIR --db {}`), or pass the store with --db FILE|URL or LABRUN_DB",
            file.display(),
            file.display()
        );
    }
    open(location).await
}
