use crate::context::Context;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {}

pub async fn run(_ctx: &Context, _args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`labrun up` is not built yet (issue #4)")
}
