//! `labrun import PACK|RUN_DIR... [--db FILE]`: finished runs into the
//! results store, each once (by its pack's manifest digest). The store's
//! own crate does the work ([`labrun_store`]); this file only prints.

use crate::context::Context;
use labrun_store::{Imported, Store};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Packs (`*.tar.gz`) or run folders (the ones holding `raw/`).
    #[arg(required = true, value_name = "PACK|RUN_DIR")]
    pub runs: Vec<PathBuf>,
    #[command(flatten)]
    pub db: DbArg,
}

/// The store to use: shared by every command that reads or writes it.
#[derive(clap::Args, Clone)]
pub struct DbArg {
    /// The results store's SQLite file. Default: the data folder's
    /// (`/var/lib/labrun/runs.sqlite` for root, else
    /// `$XDG_DATA_HOME/labrun/runs.sqlite`).
    #[arg(long = "db", env = "LABRUN_DB", value_name = "FILE")]
    pub db: Option<PathBuf>,
}

impl DbArg {
    pub fn path(&self) -> anyhow::Result<PathBuf> {
        match &self.db {
            Some(p) => Ok(p.clone()),
            None => labrun_store::default_db_path().ok_or_else(|| {
                anyhow::anyhow!(
                    "no folder for the results store: neither HOME nor XDG_DATA_HOME is set; pass --db FILE or set LABRUN_DB"
                )
            }),
        }
    }
}

pub async fn run(_ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let db = args.db.path()?;
    let runs = args.runs;
    let results = tokio::task::spawn_blocking(move || -> anyhow::Result<Vec<_>> {
        let mut store = Store::open(&db)?;
        Ok(runs
            .into_iter()
            .map(|r| {
                let result = store.import(&r);
                (r, result)
            })
            .collect())
    })
    .await??;
    let mut failed = 0;
    for (run, result) in results {
        match result {
            Ok(Imported::Added { digest, samples }) => safe_println!(
                "imported {} ({samples} samples) as sha256:{digest}",
                run.display()
            ),
            Ok(Imported::AlreadyPresent { digest }) => safe_println!(
                "{} is in the store already (sha256:{digest})",
                run.display()
            ),
            Err(e) => {
                failed += 1;
                safe_eprintln!("{e}");
            }
        }
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
