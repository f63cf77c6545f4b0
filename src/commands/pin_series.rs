//! `labrun pin TOOL --series`: every version of a tool's `versions:` list
//! pinned in one command. A build is built (once; cached by its inputs) and
//! its module hash and binary digest written; a download's digest comes from
//! the upstream's checksum list, an apt package's from apt's signed index.
//! Each entry is edited in the lab's text, comments kept; the file is
//! written once, and only when the edited lab loads.

use crate::context::Context;
use crate::exit;
use labrun_artifact::lab_edit::{SeriesPinEdit, apply_series_pin};
use labrun_artifact::{ArtifactSource, FetchOptions, Fetcher, NoProgress, write_lab};
use labrun_lab::Lab;
use std::process::ExitCode;

pub async fn run(ctx: &Context, tool: &str, text: &str, dry_run: bool) -> anyhow::Result<ExitCode> {
    let path = &ctx.lab_path;
    let template = match labrun_lab::series::template(text, tool) {
        Ok(t) => t,
        Err(e) => {
            safe_eprintln!("labrun pin: {}: {e}", path.display());
            return Ok(ExitCode::from(exit::FAILED));
        }
    };
    let fetcher = Fetcher::new(FetchOptions::new(ctx.cache_dir.clone(), ctx.mirror.clone()))?;
    let mut edited = text.to_string();
    for v in &template.versions {
        let member = match template.series_member(v) {
            Ok(m) => m,
            Err(e) => {
                safe_eprintln!("labrun pin: {tool} {}: {e}", v.version);
                return Ok(ExitCode::from(exit::FAILED));
            }
        };
        safe_println!(
            "{}: pinning ({})",
            member.name,
            member.artifact.source.key()
        );
        let pinned = match &member.artifact.source {
            ArtifactSource::Build(recipe) => fetcher
                .pin_build(&member.name, recipe, &mut NoProgress)
                .await
                .map(|p| (p.sum, p.sha256, "the binary labrun built".to_string())),
            ArtifactSource::Apt(pkg) => {
                labrun_artifact::apt::index_sha256(pkg, fetcher.cache().root())
                    .await
                    .map(|sha| (None, sha, "apt's signed index".to_string()))
            }
            ArtifactSource::Url(url) => fetcher
                .published_sha256(url, None)
                .await
                .map(|p| (None, p.sha256, format!("checksum list {}", p.list_url))),
            ArtifactSource::File(_) => {
                safe_eprintln!(
                    "labrun pin: {}: a `file:` artifact has no upstream to pin from: write its sha256 by hand",
                    member.name
                );
                return Ok(ExitCode::from(exit::FAILED));
            }
        };
        let (sum, sha256, from) = match pinned {
            Ok(p) => p,
            Err(e) => {
                safe_eprintln!("labrun pin: {}: {e}", member.name);
                return Ok(ExitCode::from(exit::FAILED));
            }
        };
        if let Some(s) = &sum {
            safe_println!("  sum     {} -> {s}", v.sum.as_deref().unwrap_or("(none)"));
        }
        safe_println!(
            "  sha256  {} -> {sha256} ({from})",
            v.sha256.as_deref().unwrap_or("(none)")
        );
        let edit = SeriesPinEdit {
            tool: tool.to_string(),
            version: v.version.clone(),
            sum,
            sha256,
        };
        edited = match apply_series_pin(&edited, &edit) {
            Ok(t) => t,
            Err(e) => {
                safe_eprintln!("labrun pin: {}: {e}", path.display());
                return Ok(ExitCode::from(exit::FAILED));
            }
        };
    }
    // The edit must leave a lab that loads; otherwise the file is left alone.
    if let Err(e) = Lab::from_text(&edited, &path.display().to_string()) {
        safe_eprintln!(
            "labrun pin: the pinned lab would not load, so {} was left unchanged:\n{e}",
            path.display()
        );
        return Ok(ExitCode::from(exit::FAILED));
    }
    if dry_run {
        safe_println!("dry run: {} not written", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    if let Err(e) = write_lab(path, text, &edited) {
        safe_eprintln!("labrun pin: {e}");
        return Ok(ExitCode::from(exit::FAILED));
    }
    safe_println!(
        "ok: wrote {} ({} versions of {tool}); `labrun -f {} check` to review",
        path.display(),
        template.versions.len(),
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}
