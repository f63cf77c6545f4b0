//! `labrun trend TOOL [--db FILE|URL]`: one tool across every run of the
//! results store, one trend per dataset and machine class, each step judged
//! by compare's rule; its series and tracked branches chained through their
//! anchors. The store's views do the work ([`labrun_site::trend`]);
//! this file only prints.

use crate::context::Context;
use crate::exit;
use crate::store_location::DbArg;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The tool's name as the runs name it, e.g. `restic`.
    #[arg(value_name = "TOOL")]
    pub tool: String,
    #[command(flatten)]
    pub db: DbArg,
}

pub async fn run(_ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let db = args.db.location()?;
    let mut store = crate::store_location::open_existing(db.clone()).await?;
    let tool = args.tool.clone();
    let text = tokio::task::spawn_blocking(move || labrun_site::trend(&mut store, &tool)).await??;
    match text {
        Some(text) => {
            safe_print!("{text}");
            Ok(ExitCode::SUCCESS)
        }
        None => {
            safe_eprintln!(
                "labrun: error: no run in the store {db} measured {}; `labrun runs --db` lists what it holds",
                args.tool
            );
            Ok(ExitCode::from(exit::NOTHING_DONE))
        }
    }
}
