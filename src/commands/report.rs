//! `labrun report RUN`: re-makes a run's summary from its `raw/` folder
//! alone, writes the summary files, prints the table and the paths. RUN is a
//! run folder or a pack (`labrun pack`), which is checked against its
//! manifest first and never changed.

use crate::context::Context;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The run folder, e.g. `results/default-20261129T1851Z-3fa2c1` (the one
    /// holding `raw/`), or a pack of one made by `labrun pack` (checked
    /// against its manifest first).
    #[arg(value_name = "RUN")]
    pub run_dir: PathBuf,
    /// Where the summary files go. Default: the run folder itself; for a
    /// pack, which is never changed, a folder named after the pack file
    /// beside it (`results/<name>.tar.gz` -> `results/<name>/`), which gets
    /// the re-made summaries only, not raw/. A folder holding another run
    /// is refused.
    #[arg(long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
}

pub async fn run(_ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let opened = labrun_report::pack::open(&args.run_dir)?;
    let dir = opened.dir();
    // A run with variants: each variant's summary, then their comparison.
    let (table, written) = if labrun_report::variants::is_variants_run(dir) {
        let (comparison, written) = labrun_report::variants::make_report(dir)?;
        (
            labrun_report::variants::render_terminal(&comparison),
            written,
        )
    } else {
        let (summary, written) = labrun_report::make_report(dir)?;
        (labrun_report::render_terminal(&summary), written)
    };
    let out = args.out.unwrap_or_else(|| opened.default_output_dir());
    let written = opened.publish(&written, &out)?;
    safe_print!("{table}");
    safe_println!();
    if let (Some(pack), Some(digest)) = (opened.pack(), opened.manifest_sha256()) {
        safe_println!(
            "read {} (manifest sha256:{digest}, every file matches)",
            pack.display()
        );
    }
    for path in &written {
        safe_println!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context() -> Context {
        Context::for_tests()
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
                out: None,
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
                out: None,
            },
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("no raw evidence folder"), "{err}");
    }
}
