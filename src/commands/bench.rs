//! `labrun bench`: the command line turned into a [`BenchRequest`] and
//! handed to `crate::bench` (a new run, or `--attach`); `--up` and `--down`
//! around it. Everything else lives in `crate::bench`.

use crate::bench::progress::Mode;
use crate::bench::request::{BenchRequest, Machines};
use crate::context::Context;
use futures::FutureExt as _;
use futures::future::LocalBoxFuture;
use labrun_lab::{Lab, PlanOverrides};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Shrink the dataset (1.0 = 6.10 GB), e.g. 0.01 for a quick look.
    #[arg(long)]
    pub scale: Option<f64>,
    /// Cycles per tool (the lab's default is 3).
    #[arg(long)]
    pub cycles: Option<u32>,
    /// Run only these tools, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// Bring the VM up first (`labrun up`).
    #[arg(long)]
    pub up: bool,
    /// Take the VM down afterwards, whatever happened (`labrun down`).
    #[arg(long)]
    pub down: bool,
    /// Reconnect to a run in progress (the newest one, or RUN_ID) and finish it.
    #[arg(long, value_name = "RUN_ID", num_args = 0..=1, default_missing_value = "")]
    pub attach: Option<String>,
    /// Where run folders are written.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// The static guest agent to push (default: beside `labrun`, else the
    /// `make agent` output).
    #[arg(long, env = "LABRUN_AGENT")]
    pub agent: Option<PathBuf>,
    /// While a comparison the lab asks for (`compare:`) has an inconclusive
    /// row, or (in a lab with no `compare:` pairs) a series' trend
    /// (`versions:`) an inconclusive step, add one more cycle of its two
    /// tools (one more pair), up to as
    /// many as the noise of the lab's own pairs needs (at most 50), and at
    /// most N when given (0: no number). Judged by the sequential rule.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "0")]
    pub until_conclusive: Option<u32>,
    /// Leave the run out of the results store (by default it is imported
    /// when the run ends; `labrun import` adds it later).
    #[arg(long)]
    pub no_import: bool,
    #[command(flatten)]
    pub db: crate::store_location::DbArg,
    /// Print only warnings and the summary.
    #[arg(long, conflicts_with = "plain")]
    pub quiet: bool,
    /// One line per event, no live display (the default when not a terminal).
    #[arg(long)]
    pub plain: bool,
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let mut display = Mode::choose(args.quiet, args.plain).display();
    if args.up {
        let code = crate::commands::up::bring_up(ctx, args.tools.as_deref()).await?;
        if code != ExitCode::SUCCESS {
            return Ok(code);
        }
    }
    let req = request(ctx, &args);
    let before = crate::bench::store_import::run_folders(&args.results);
    let result = match &args.attach {
        Some(id) => crate::bench::attach::attach(&req, id, display.as_mut()).await,
        None => crate::bench::start::start(&req, display.as_mut()).await,
    };
    if result.is_ok() && !args.no_import {
        import_at_end(&args, &before).await;
    }
    if args.down
        && let Err(e) = crate::commands::down::take_down(ctx).await
    {
        safe_eprintln!("labrun: warning: `--down` failed: {e:#}; run `labrun down`");
    }
    result
}

/// The runs this `bench` wrote, into the results store; a failure is a
/// warning and the run stays in its folder.
async fn import_at_end(args: &Args, before: &std::collections::BTreeSet<PathBuf>) {
    let db = match args.db.location() {
        Ok(db) => db,
        Err(e) => {
            safe_eprintln!("labrun: warning: runs not imported: {e:#}");
            return;
        }
    };
    let (results, before, store) = (args.results.clone(), before.clone(), db.clone());
    let outcome = tokio::task::spawn_blocking(move || {
        crate::bench::store_import::import_new(&store, &results, &before)
    })
    .await
    .unwrap_or_else(|e| crate::bench::store_import::Outcome {
        warnings: vec![format!("not imported: {e}")],
        ..Default::default()
    });
    for line in &outcome.imported {
        safe_println!("{line}");
    }
    if !outcome.imported.is_empty() {
        safe_println!(
            "the dashboard of every run in it: `labrun site OUT --db '{db}'` (then open OUT/index.html)"
        );
    }
    for w in outcome.warnings {
        safe_eprintln!("labrun: warning: {w}");
    }
}

/// What the run needs from the command line.
fn request(ctx: &Context, args: &Args) -> BenchRequest {
    BenchRequest {
        ctx: ctx.clone(),
        overrides: PlanOverrides {
            scale: args.scale,
            cycles: args.cycles,
            tools: args.tools.clone(),
        },
        results: args.results.clone(),
        agent: args.agent.clone(),
        until_conclusive: args.until_conclusive,
        machines: &UpAndDown,
    }
}

/// A variant's VM brought up and taken down as `labrun up` and `labrun
/// down` do.
struct UpAndDown;

impl Machines for UpAndDown {
    fn up<'a>(
        &'a self,
        ctx: &'a Context,
        lab: &'a Lab,
        tools: Option<&'a [String]>,
    ) -> LocalBoxFuture<'a, anyhow::Result<ExitCode>> {
        crate::commands::up::bring_up_lab(ctx, lab, tools).boxed_local()
    }

    fn down<'a>(&'a self, ctx: &'a Context) -> LocalBoxFuture<'a, anyhow::Result<()>> {
        async move {
            crate::commands::down::take_down(ctx).await?;
            Ok(())
        }
        .boxed_local()
    }
}
