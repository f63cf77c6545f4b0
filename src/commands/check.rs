//! `labrun check`: validate a lab file and say what it will do. The logic
//! lives in `labrun-lab`; this file only prints.

use crate::context::Context;
use labrun_lab::{Lab, LabError, check_scale};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Describe the dataset at this scale (0 < F <= 1) instead of the lab's.
    #[arg(long, value_name = "F")]
    pub scale: Option<f64>,
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    if let Some(s) = args.scale
        && let Err(msg) = check_scale(s)
    {
        eprintln!("labrun check: --scale: {msg}");
        return Ok(ExitCode::from(2));
    }
    match Lab::load(&ctx.lab_path) {
        Ok(lab) => {
            print!("{}", lab.describe(args.scale));
            println!("ok: {} is valid", ctx.lab_path.display());
            Ok(ExitCode::SUCCESS)
        }
        Err(e @ (LabError::Parse { .. } | LabError::Invalid { .. })) => {
            eprintln!("{e}");
            Ok(ExitCode::from(1))
        }
        Err(e) => {
            eprintln!("labrun check: {e}");
            Ok(ExitCode::from(1))
        }
    }
}
