//! `labrun site OUT [--db FILE]`: a static site of the results store. The
//! site's own crate does the work ([`labrun_site`]); this file only reads
//! the arguments and prints.

use crate::context::Context;
use crate::store_location::DbArg;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The folder to write the site into: new, empty, or a site an earlier
    /// `labrun site` wrote (replaced whole). Any other folder is refused.
    #[arg(value_name = "OUT")]
    pub out: PathBuf,
    #[command(flatten)]
    pub db: DbArg,
}

pub async fn run(_ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let db = args.db.location()?;
    let mut store = crate::store_location::open_existing(db).await?;
    let out = args.out;
    let built = tokio::task::spawn_blocking(move || labrun_site::build(&mut store, &out)).await??;
    for s in &built.skipped {
        safe_eprintln!(
            "warning: run sha256:{} left out of the site: {}",
            s.digest,
            s.reason
        );
    }
    safe_println!(
        "wrote {} pages of {} runs to {}",
        built.pages.len(),
        built.runs,
        built.out.display()
    );
    safe_println!(
        "open {}",
        built.out.join(labrun_site::names::INDEX).display()
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context() -> Context {
        Context::for_tests()
    }

    #[tokio::test]
    async fn a_store_that_does_not_exist_is_not_made_and_the_error_says_to_import() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("runs.sqlite");
        let out = tmp.path().join("site");
        let err = run(
            &context(),
            Args {
                out: out.clone(),
                db: DbArg {
                    db: Some(db.display().to_string()),
                },
            },
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("import runs first"), "{err}");
        assert!(!db.exists(), "no empty store is made");
        assert!(!out.exists(), "no site is written");
    }
}
