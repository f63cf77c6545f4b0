//! The variants' `summary.md`: what each variant changed, then a table per
//! phase with the variants as columns, then where each tool failed.

use super::{VariantColumn, VariantsComparison};
use crate::export::cells::{self, NONE};
use crate::export::markdown::table;
use crate::format;
use crate::summary::PhaseSummary;
use labrun_evidence::Step;
use std::fmt::Write;

pub fn render(c: &VariantsComparison) -> String {
    labrun_evidence::printable::printable_text(&page(c)).into_owned()
}

fn page(c: &VariantsComparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# labrun variants: {}\n", c.run_id);
    let _ = writeln!(
        out,
        "{} variants of one lab, each a complete run with its own evidence and summary \
         (`variants/<name>/`). Each cell is that variant's median over cycles with its min-max \
         range; \"failed\" means the step failed in every cycle that reached it, \"{NONE}\" that the \
         variant has no such step. Variants that share a machine shape ran in one boot, one after \
         another; the boots are not timed.\n",
        c.variants.len()
    );

    out.push_str("## Variants\n\n");
    table(
        &mut out,
        &["Variant", "Boot", "What it changes", "Cycles finished"],
        c.variants.iter().map(|v| {
            vec![
                v.record.name.clone(),
                (v.record.boot + 1).to_string(),
                v.record.changes_text("`"),
                finished(v),
            ]
        }),
    );

    let names: Vec<&str> = c.variants.iter().map(|v| v.record.name.as_str()).collect();
    let mut header = vec!["Tool"];
    header.extend(&names);
    for step in &c.phases {
        let title = cells::phase_title(step);
        let _ = writeln!(out, "## {title}: time\n");
        table(
            &mut out,
            &header,
            rows(c, |v, tool| phase_cell(v, tool, step, Figure::Time)),
        );
        let _ = writeln!(out, "## {title}: peak memory, largest process (MiB)\n");
        table(
            &mut out,
            &header,
            rows(c, |v, tool| phase_cell(v, tool, step, Figure::Memory)),
        );
        if c.variants.iter().any(|v| has_tree_memory(v, step)) {
            let _ = writeln!(out, "## {title}: peak memory, whole process tree (MiB)\n");
            table(
                &mut out,
                &header,
                rows(c, |v, tool| phase_cell(v, tool, step, Figure::TreeMemory)),
            );
        }
    }
    out.push_str("## Repository size after the full backup\n\n");
    table(
        &mut out,
        &header,
        rows(c, |v, tool| {
            v.tool(tool)
                .and_then(|t| t.repo_size_after_full.as_ref())
                .map_or(NONE.into(), format::bytes_range)
        }),
    );

    out.push_str("## Failures by variant\n\n");
    if c.failures.iter().all(|f| f.failed.is_empty()) {
        out.push_str("No tool failed a step in any variant.\n\n");
    } else {
        table(
            &mut out,
            &[
                "Tool",
                "First failed in",
                "Every variant it failed in (first failed step)",
            ],
            c.failures.iter().filter(|f| !f.failed.is_empty()).map(|f| {
                vec![
                    f.tool.clone(),
                    f.first.clone().unwrap_or_else(|| NONE.into()),
                    f.failed
                        .iter()
                        .map(|x| {
                            format!(
                                "{}: {} cycle {}{}{}",
                                x.variant,
                                x.step.as_str(),
                                x.cycle,
                                if x.oom { ", **oom**" } else { "" },
                                x.error
                                    .as_deref()
                                    .map_or(String::new(), |e| format!(" ({e})"))
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("; "),
                ]
            }),
        );
    }
    for v in c.variants.iter().filter(|v| v.error.is_some()) {
        let _ = writeln!(
            out,
            "Variant `{}`: {}\n",
            v.record.name,
            v.error.as_deref().unwrap_or_default().trim()
        );
    }
    let _ = writeln!(
        out,
        "Re-make this page and every variant's summary from the raw evidence with `labrun report results/{}`.",
        c.run_id
    );
    out
}

#[derive(Clone, Copy)]
enum Figure {
    Time,
    Memory,
    TreeMemory,
}

fn rows<'a>(
    c: &'a VariantsComparison,
    cell: impl Fn(&VariantColumn, &str) -> String + 'a,
) -> impl Iterator<Item = Vec<String>> + 'a {
    c.tools.iter().map(move |tool| {
        let mut row = vec![tool.clone()];
        row.extend(c.variants.iter().map(|v| cell(v, tool)));
        row
    })
}

fn phase_cell(v: &VariantColumn, tool: &str, step: &Step, figure: Figure) -> String {
    let (Some(summary), Some(t)) = (v.summary.as_ref(), v.tool(tool)) else {
        return NONE.into();
    };
    let Some(p) = t.phase(step) else {
        return NONE.into();
    };
    if p.ok == 0 && p.recorded > 0 {
        return "failed".into();
    }
    match figure {
        Figure::Time => cells::phase_time(summary, t, step),
        Figure::Memory => cells::phase_memory(summary, p),
        Figure::TreeMemory => cells::phase_tree_memory(summary, p),
    }
}

fn has_tree_memory(v: &VariantColumn, step: &Step) -> bool {
    v.summary.as_ref().is_some_and(|s| {
        s.tools
            .iter()
            .filter_map(|t| t.phase(step))
            .any(|p: &PhaseSummary| p.tree_memory_mib.is_some())
    })
}

fn finished(v: &VariantColumn) -> String {
    match &v.summary {
        None => "no evidence".into(),
        Some(s) => {
            let planned = s
                .cycles_planned
                .map_or_else(|| "?".to_string(), |c| c.to_string());
            s.tools
                .iter()
                .map(|t| format!("{} {}/{planned}", t.tool, t.cycles_finished))
                .collect::<Vec<_>>()
                .join(", ")
        }
    }
}
