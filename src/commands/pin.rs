//! `labrun pin TOOL --version V`: take the digest from the upstream's own
//! checksum list (or apt's signed index) and write it into the lab file,
//! comments kept. The work is in `labrun-artifact`; this file checks that the
//! edited lab still loads, writes it and says what changed.

use crate::context::Context;
use crate::exit;
use labrun_artifact::{
    ArtifactSource, FetchOptions, Fetcher, ManualPin, NoProgress, PinRequest, write_lab,
};
use labrun_lab::Lab;
use std::process::ExitCode;

#[derive(clap::Args)]
// `--version` here is the version to pin, not labrun's own version flag.
#[command(disable_version_flag = true)]
pub struct Args {
    /// The tool's name in the lab file.
    pub tool: String,
    /// The version to pin (for an apt source, the Debian version, e.g.
    /// 0.14.0-1+b5). A tool built from source (`go:`, `crate:`) may leave it
    /// out: the version it builds now is pinned.
    #[arg(long)]
    pub version: Option<String>,
    /// Pin every version of the tool's `versions:` list (a release series):
    /// a build is built (or taken from the build cache) and its module hash
    /// and binary digest written; a download's digest is taken from its
    /// checksum list or apt's signed index.
    #[arg(long, conflicts_with_all = ["version", "url_template", "checksums", "sha256"])]
    pub series: bool,
    /// The artifact URL with `{version}` in it. Default: the current URL with
    /// the tool's current version replaced.
    #[arg(long, value_name = "URL")]
    pub url_template: Option<String>,
    /// The checksum list (`{version}` allowed). Default: SHA256SUMS,
    /// checksums.txt or <asset>.sha256 beside the artifact.
    #[arg(long, value_name = "URL", conflicts_with = "sha256")]
    pub checksums: Option<String>,
    /// For projects that publish no list: a digest checked by other means.
    #[arg(long, value_name = "HEX", requires = "sha256_source")]
    pub sha256: Option<String>,
    /// Where --sha256 was checked; written as `sha256_source`.
    #[arg(long, value_name = "TEXT", requires = "sha256")]
    pub sha256_source: Option<String>,
    /// Say what would change; write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let path = &ctx.lab_path;
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            safe_eprintln!(
                "labrun pin: cannot read {}: {e}; give the lab file with -f",
                path.display()
            );
            return Ok(ExitCode::from(exit::FAILED));
        }
    };
    if args.series {
        return super::pin_series::run(ctx, &args.tool, &text, args.dry_run).await;
    }
    let fetcher = Fetcher::new(FetchOptions::new(ctx.cache_dir.clone(), ctx.mirror.clone()))?;
    let written = labrun_lab::series::tool_as_written(&text, &args.tool);
    let outcome = match (&written, &args.version) {
        (Ok(t), version) if t.artifact.source.is_build() => {
            let ArtifactSource::Build(recipe) = &t.artifact.source else {
                unreachable!("is_build() says it is a build")
            };
            safe_println!(
                "{}: building it (or taking the build from the cache, by its inputs)",
                args.tool
            );
            fetcher
                .plan_build_pin(
                    path,
                    &text,
                    &args.tool,
                    version.as_deref(),
                    recipe,
                    &mut NoProgress,
                )
                .await
        }
        (_, None) => {
            safe_eprintln!(
                "labrun pin: give --version: only a tool built from source (`go:`, `crate:`) is pinned at the version it names"
            );
            return Ok(ExitCode::from(exit::NOTHING_DONE));
        }
        (_, Some(version)) => {
            let request = PinRequest {
                tool: args.tool.clone(),
                version: version.clone(),
                url_template: args.url_template.clone(),
                checksums: args.checksums.clone(),
                manual: args.sha256.clone().zip(args.sha256_source.clone()).map(
                    |(sha256, source)| ManualPin {
                        sha256: sha256.to_ascii_lowercase(),
                        source,
                    },
                ),
            };
            fetcher.plan_pin(path, &text, &request).await
        }
    };
    let version = args.version.clone().unwrap_or_else(|| {
        written
            .as_ref()
            .map(|t| t.version.clone())
            .unwrap_or_default()
    });
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            safe_eprintln!("labrun pin: {e}");
            return Ok(ExitCode::from(exit::FAILED));
        }
    };
    // The edit must leave a lab that loads; otherwise the file is left alone.
    if let Err(e) = Lab::from_text(&outcome.new_text, &path.display().to_string()) {
        safe_eprintln!(
            "labrun pin: the pinned lab would not load, so {} was left unchanged:\n{e}",
            path.display()
        );
        return Ok(ExitCode::from(exit::FAILED));
    }
    let old = outcome.old_sha256.as_deref().unwrap_or("(none)");
    safe_println!("{} {}:", args.tool, version);
    if let Some(url) = &outcome.url {
        safe_println!("  url            {url}");
    }
    safe_println!("  sha256         {old} -> {}", outcome.sha256);
    safe_println!("  sha256_source  {}", outcome.sha256_source);
    if args.dry_run {
        safe_println!("dry run: {} not written", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    if let Err(e) = write_lab(path, &text, &outcome.new_text) {
        safe_eprintln!("labrun pin: {e}");
        return Ok(ExitCode::from(exit::FAILED));
    }
    safe_println!(
        "ok: wrote {}; run `labrun fetch --tools {}` to verify the file",
        path.display(),
        args.tool
    );
    Ok(ExitCode::SUCCESS)
}
