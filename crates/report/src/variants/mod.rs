//! A run with variants, set side by side: `results/<run>/variants.json`
//! names them, each `variants/<name>/` is a complete run with its own
//! summary; this module reads those summaries (made from raw evidence, as
//! always) and writes the comparison beside them: `summary.md` (a table per
//! phase, variants as columns), `summary.json`, `report.html` (the same on
//! one self-contained page, linking each variant's own), and charts grouped
//! by variant.

mod chart;
mod html;
mod markdown;
mod tables;

use crate::error::{ReportError, Result};
use crate::summary::{Summary, ToolSummary};
use labrun_evidence::Step;
use labrun_evidence::variant::{VARIANTS_DIR, VARIANTS_INDEX, VariantRecord, VariantsIndex};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Written into the run folder (the variants' own summaries are in theirs).
pub const COMPARISON_JSON: &str = "summary.json";
pub const COMPARISON_MD: &str = "summary.md";
pub const COMPARISON_HTML: &str = "report.html";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VariantsComparison {
    pub run_id: String,
    /// In the lab's order.
    pub variants: Vec<VariantColumn>,
    /// Every tool any variant ran, in the order they first appear.
    pub tools: Vec<String>,
    /// Every timed phase any variant ran, in protocol order.
    pub phases: Vec<Step>,
    /// Per tool, the variants where it failed, in the lab's order.
    pub failures: Vec<ToolFailures>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VariantColumn {
    pub record: VariantRecord,
    /// None when the variant left no evidence (see `error`).
    pub summary: Option<Summary>,
    /// Why there is no summary, or what `bench` said went wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolFailures {
    pub tool: String,
    /// The first variant (in the lab's order) where a step of the tool
    /// failed: on a memory ladder written from large to small, the largest
    /// size it failed at; from small to large, the smallest it got through
    /// is the one after the last failure.
    pub first: Option<String>,
    pub failed: Vec<VariantFailure>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VariantFailure {
    pub variant: String,
    /// The first failed step, its cycle and what the record said.
    pub step: Step,
    pub cycle: u32,
    pub error: Option<String>,
    /// The kernel's OOM killer ended it ([`crate::FailedStep::oom`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub oom: bool,
}

impl VariantsComparison {
    pub fn column(&self, name: &str) -> Option<&VariantColumn> {
        self.variants.iter().find(|v| v.record.name == name)
    }

    /// The steps' roles: the variants of a lab run one protocol, so the
    /// first variant with evidence says them.
    pub fn roles(&self) -> crate::roles::Roles {
        self.variants
            .iter()
            .find_map(|v| v.summary.as_ref())
            .map(|s| s.roles.clone())
            .unwrap_or_default()
    }
}

impl VariantColumn {
    pub fn tool(&self, name: &str) -> Option<&ToolSummary> {
        self.summary.as_ref()?.tools.iter().find(|t| t.tool == name)
    }
}

/// Whether `run_dir` is a run with variants.
pub fn is_variants_run(run_dir: &Path) -> bool {
    run_dir.join(VARIANTS_INDEX).is_file()
}

/// Summarizes every variant (writing each one's summary files into its own
/// folder), then the comparison into `run_dir`. Returns the comparison and
/// every path written.
pub fn make_report(run_dir: &Path) -> Result<(VariantsComparison, Vec<PathBuf>)> {
    let index_path = run_dir.join(VARIANTS_INDEX);
    let text = crate::evidence_file::read_to_string(
        run_dir,
        &index_path,
        crate::evidence_file::MAX_SMALL_FILE,
    )?
    .ok_or_else(|| ReportError::Read {
        path: index_path.clone(),
        source: std::io::ErrorKind::NotFound.into(),
    })?;
    let index: VariantsIndex =
        serde_json::from_str(&text).map_err(|source| ReportError::BadVariantsIndex {
            path: index_path.clone(),
            source,
        })?;
    let mut written = Vec::new();
    let mut columns = Vec::new();
    for record in index.variants {
        let dir = run_dir.join(VARIANTS_DIR).join(&record.name);
        let bench_error = crate::evidence_file::read_to_string(
            run_dir,
            &dir.join(crate::RAW_DIR)
                .join(labrun_evidence::variant::BENCH_ERROR_FILE),
            crate::evidence_file::MAX_SMALL_FILE,
        )
        .unwrap_or_else(|refused| Some(refused.to_string()));
        match crate::make_report(&dir) {
            Ok((summary, mut files)) => {
                written.append(&mut files);
                columns.push(VariantColumn {
                    record,
                    summary: Some(summary),
                    error: bench_error,
                });
            }
            Err(e) => columns.push(VariantColumn {
                record,
                summary: None,
                error: Some(bench_error.unwrap_or_else(|| e.to_string())),
            }),
        }
    }
    let comparison = compare(index.run_id, columns);
    for (name, bytes) in [
        (COMPARISON_MD, markdown::render(&comparison).into_bytes()),
        (COMPARISON_HTML, html::render(&comparison)?.into_bytes()),
        (
            COMPARISON_JSON,
            serde_json::to_vec_pretty(&comparison).map_err(|e| ReportError::Render {
                what: COMPARISON_JSON,
                message: e.to_string(),
            })?,
        ),
    ] {
        let path = run_dir.join(name);
        crate::export::write_atomically(&path, &bytes)?;
        written.push(path);
    }
    for (name, bytes) in chart::render_all(&comparison)? {
        let path = run_dir.join(name);
        crate::export::write_atomically(&path, &bytes)?;
        written.push(path);
    }
    Ok((comparison, written))
}

/// The comparison of summaries already made. Pure.
pub fn compare(run_id: String, variants: Vec<VariantColumn>) -> VariantsComparison {
    let mut tools: Vec<String> = Vec::new();
    let mut phases: Vec<Step> = Vec::new();
    for s in variants.iter().filter_map(|v| v.summary.as_ref()) {
        for t in &s.tools {
            if !tools.contains(&t.tool) {
                tools.push(t.tool.clone());
            }
        }
        for p in s.phase_steps() {
            if !phases.contains(&p) {
                phases.push(p);
            }
        }
    }
    let failures = tools
        .iter()
        .map(|tool| {
            let failed: Vec<VariantFailure> = variants
                .iter()
                .filter_map(|v| {
                    let s = v.summary.as_ref()?;
                    let f = s
                        .failed_steps
                        .iter()
                        .find(|f| f.tool == *tool && !f.allowed)?;
                    Some(VariantFailure {
                        variant: v.record.name.clone(),
                        step: f.step.clone(),
                        cycle: f.cycle,
                        error: f.error.clone(),
                        oom: f.oom,
                    })
                })
                .collect();
            ToolFailures {
                tool: tool.clone(),
                first: failed.first().map(|f| f.variant.clone()),
                failed,
            }
        })
        .collect();
    VariantsComparison {
        run_id,
        variants,
        tools,
        phases,
        failures,
    }
}

/// The comparison's Markdown, for the terminal.
pub fn render_terminal(c: &VariantsComparison) -> String {
    markdown::render(c)
}
