//! `labrun report RUN_DIR`: re-makes a run's summary from its `raw/` folder
//! alone, writes the summary files beside it, prints the table and the paths.

use crate::context::Context;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The run folder, e.g. `results/default-20261129T1851Z-3fa2c1` (the one
    /// holding `raw/`).
    pub run_dir: PathBuf,
}

pub async fn run(_ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    // A run with variants: each variant's summary, then their comparison.
    let (table, written) = if labrun_report::variants::is_variants_run(&args.run_dir) {
        let (comparison, written) = labrun_report::variants::make_report(&args.run_dir)?;
        (
            labrun_report::variants::render_terminal(&comparison),
            written,
        )
    } else {
        let (summary, written) = labrun_report::make_report(&args.run_dir)?;
        (labrun_report::render_terminal(&summary), written)
    };
    safe_print!("{table}");
    safe_println!();
    for path in &written {
        safe_println!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context() -> Context {
        Context {
            lab_path: "lab.yaml".into(),
            mirror: None,
            cache_dir: "/nonexistent/cache".into(),
            state_root: "/nonexistent/state".into(),
            host: None,
            force_host: false,
        }
    }

    #[tokio::test]
    async fn writes_the_summary_beside_raw() {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("crates/report/tests/fixtures/two-tools/raw");
        let tmp = tempfile::tempdir().unwrap();
        let raw = tmp.path().join("raw");
        std::fs::create_dir(&raw).unwrap();
        for f in std::fs::read_dir(&fixture).unwrap() {
            let f = f.unwrap();
            std::fs::copy(f.path(), raw.join(f.file_name())).unwrap();
        }
        let code = run(
            &context(),
            Args {
                run_dir: tmp.path().into(),
            },
        )
        .await
        .unwrap();
        assert_eq!(code, ExitCode::SUCCESS);
        for name in [
            "summary.md",
            "summary.json",
            "summary.csv",
            "chart-time.svg",
        ] {
            assert!(tmp.path().join(name).is_file(), "{name}");
        }
    }

    #[tokio::test]
    async fn a_folder_without_raw_is_a_clear_error() {
        let tmp = tempfile::tempdir().unwrap();
        let err = run(
            &context(),
            Args {
                run_dir: tmp.path().into(),
            },
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("no raw evidence folder"), "{err}");
    }
}
