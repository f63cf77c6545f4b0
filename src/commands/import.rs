//! `labrun import PACK|RUN_DIR... [--db FILE|URL] [--from ORIGIN]`: finished
//! runs into the results store, each once (by its pack's manifest digest).
//! The store's own crate does the work ([`labrun_store`]); this file only
//! prints.

use crate::context::Context;
use crate::store_location::DbArg;
use labrun_store::Imported;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Packs (`*.tar.gz`) or run folders (the ones holding `raw/`); a
    /// variants run is imported as each of its variants' runs.
    #[arg(required = true, value_name = "PACK|RUN_DIR")]
    pub runs: Vec<PathBuf>,
    #[command(flatten)]
    pub db: DbArg,
    /// Where the runs came from (e.g. who sent the packs, or their
    /// machine's name), kept with each; default: this machine's host name.
    #[arg(long = "from", value_name = "ORIGIN")]
    pub origin: Option<String>,
}

pub async fn run(_ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let location = args.db.location()?;
    let (runs, origin) = (args.runs, args.origin);
    let mut store = crate::store_location::open(location.clone()).await?;
    let results = tokio::task::spawn_blocking(move || {
        runs.iter()
            .flat_map(|r| store.import_all(r, origin.as_deref()))
            .collect::<Vec<_>>()
    })
    .await?;
    let mut failed = 0;
    for (run, result) in results {
        match result {
            Ok(Imported::Added { digest, samples }) => safe_println!(
                "imported {run} ({samples} samples) as sha256:{digest} into {location}"
            ),
            Ok(Imported::AlreadyPresent { digest }) => {
                safe_println!("{run} is in the store already (sha256:{digest})")
            }
            Err(e) => {
                failed += 1;
                safe_eprintln!("labrun: error: {e}");
            }
        }
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
