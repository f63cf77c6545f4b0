//! One file per subcommand. Each has its `Args` and an async `run`.

pub mod bench;
pub mod bisect;
pub mod check;
pub mod compare;
pub mod doctor;
pub mod down;
pub mod fetch;
pub mod fetch_dataset;
pub mod generate;
pub mod image;
pub mod import;
pub mod pack;
pub mod pin;
pub mod pin_series;
pub mod report;
pub mod runs;
pub mod site;
pub mod ssh;
pub mod status;
pub mod track;
pub mod trend;
pub mod up;

use crate::cli::Command;
use crate::context::Context;
use std::process::ExitCode;

pub async fn dispatch(ctx: &Context, command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Check(a) => check::run(ctx, a).await,
        Command::Doctor(a) => doctor::run(ctx, a).await,
        Command::Fetch(a) => fetch::run(ctx, a).await,
        Command::Pin(a) => pin::run(ctx, a).await,
        Command::Image(a) => image::run(ctx, a).await,
        Command::Up(a) => up::run(ctx, a).await,
        Command::Down(a) => down::run(ctx, a).await,
        Command::Status(a) => status::run(ctx, a).await,
        Command::Ssh(a) => ssh::run(ctx, a).await,
        Command::Bench(a) => bench::run(ctx, a).await,
        Command::Bisect(a) => bisect::run(ctx, a).await,
        Command::Report(a) => report::run(ctx, a).await,
        Command::Compare(a) => compare::run(ctx, a).await,
        Command::Pack(a) => pack::run(ctx, a).await,
        Command::Runs(a) => runs::run(ctx, a).await,
        Command::Import(a) => import::run(ctx, a).await,
        Command::Site(a) => site::run(ctx, a).await,
        Command::Trend(a) => trend::run(ctx, a).await,
        Command::Track(a) => track::run(ctx, a).await,
        Command::Generate(a) => generate::run(a),
    }
}
