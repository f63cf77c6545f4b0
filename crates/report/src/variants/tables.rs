//! The comparison's content, once: what each variant changed, a table per
//! phase with the variants as columns, repository sizes, where each tool
//! failed. The Markdown and HTML pages render the same tables.

use super::{VariantColumn, VariantsComparison};
use crate::export::cells::{self, NONE};
use crate::figures::{self, Figure};
use crate::format;
use crate::summary::PhaseSummary;
use labrun_evidence::Step;

pub struct Table {
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// What the page is, in words (its first paragraph).
pub fn intro(c: &VariantsComparison) -> String {
    format!(
        "{} variants of one lab, each a complete run with its own evidence and summary \
         (`variants/NAME/`). Each cell is that variant's median over cycles with its min-max \
         range; \"failed\" means the step failed in every cycle that reached it, \"{NONE}\" that the \
         variant has no such step. Variants that share a machine shape ran in one boot (cycle by \
         cycle when their `raw/plan.json` names a `round`); the boots are not timed.",
        c.variants.len()
    )
}

/// Every table, in page order; `quote` wraps a setting's name (a
/// backtick in Markdown, nothing on the HTML page).
pub fn tables(c: &VariantsComparison, quote: &str) -> Vec<Table> {
    let pooled = c.variants.iter().any(|v| host(v).is_some());
    let mut header = ["Variant", "Boot", "What it changes", "Cycles finished"]
        .map(String::from)
        .to_vec();
    if pooled {
        header.insert(1, "Host".into());
    }
    let mut out = vec![Table {
        title: "Variants".into(),
        header,
        rows: c
            .variants
            .iter()
            .map(|v| {
                let mut row = vec![
                    v.record.name.clone(),
                    (v.record.boot + 1).to_string(),
                    v.record.changes_text(quote),
                    finished(v),
                ];
                if pooled {
                    row.insert(1, host(v).unwrap_or(NONE).to_string());
                }
                row
            })
            .collect(),
    }];
    let classes = host_classes(c);
    if pooled {
        out.push(Table {
            title: "Hosts".into(),
            header: ["Host class", "Machine", "Variants"]
                .map(String::from)
                .to_vec(),
            rows: classes
                .iter()
                .enumerate()
                .map(|(i, (class, members))| {
                    vec![
                        (i + 1).to_string(),
                        class.clone(),
                        members
                            .iter()
                            .map(|&m| {
                                let v = &c.variants[m];
                                format!("{} (on {})", v.record.name, host(v).unwrap_or(NONE))
                            })
                            .collect::<Vec<_>>()
                            .join(", "),
                    ]
                })
                .collect(),
        });
    }
    // Columns grouped by host class: figures are compared within a class.
    let order: Vec<usize> = if pooled {
        classes.iter().flat_map(|(_, m)| m.clone()).collect()
    } else {
        (0..c.variants.len()).collect()
    };
    let mut header = vec!["Tool".to_string()];
    header.extend(order.iter().map(|&i| {
        let v = &c.variants[i];
        match (pooled && classes.len() > 1, host(v)) {
            (true, Some(h)) => format!("{} ({h})", v.record.name),
            _ => v.record.name.clone(),
        }
    }));
    let rows = |cell: &dyn Fn(&VariantColumn, &str) -> String| rows(c, &order, cell);
    for step in &c.phases {
        let title = cells::phase_title(step);
        let mut figures = vec![
            (format!("{title}: time"), &figures::WALL_TIME),
            (
                format!("{title}: peak memory, largest process (MiB)"),
                &figures::PEAK_MEMORY,
            ),
        ];
        if c.variants.iter().any(|v| has_tree_memory(v, step)) {
            figures.push((
                format!("{title}: peak memory, whole process tree (MiB)"),
                &figures::TREE_MEMORY,
            ));
        }
        for (title, figure) in figures {
            out.push(Table {
                title,
                header: header.clone(),
                rows: rows(&|v, tool| phase_cell(v, tool, step, figure)),
            });
        }
    }
    out.push(Table {
        title: "Repository size after the full backup".into(),
        header: header.clone(),
        rows: rows(&|v, tool| {
            v.tool(tool)
                .and_then(|t| t.repo_size_after_full.as_ref())
                .map_or(NONE.into(), format::bytes_range)
        }),
    });
    if c.failures.iter().any(|f| !f.failed.is_empty()) {
        out.push(Table {
            title: "Failures by variant".into(),
            header: [
                "Tool",
                "First failed in",
                "Every variant it failed in (first failed step)",
            ]
            .map(String::from)
            .to_vec(),
            rows: c
                .failures
                .iter()
                .filter(|f| !f.failed.is_empty())
                .map(|f| {
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
                                    if x.oom { ", oom" } else { "" },
                                    x.error
                                        .as_deref()
                                        .map_or(String::new(), |e| format!(" ({e})"))
                                )
                            })
                            .collect::<Vec<_>>()
                            .join("; "),
                    ]
                })
                .collect(),
        });
    }
    out
}

/// What the tables do not say: that nothing failed, and why a variant has
/// no evidence.
pub fn notes(c: &VariantsComparison) -> Vec<String> {
    let mut out = Vec::new();
    if c.failures.iter().all(|f| f.failed.is_empty()) {
        out.push("No tool failed a step in any variant.".to_string());
    }
    let classes = host_classes(c);
    if classes.len() > 1 && c.variants.iter().any(|v| host(v).is_some()) {
        out.push(format!(
            "The variants ran on {} classes of host (the Hosts table): compare figures only within one class; the tables' columns are grouped by class.",
            classes.len()
        ));
    }
    for v in c.variants.iter().filter(|v| v.error.is_some()) {
        out.push(format!(
            "Variant `{}`: {}",
            v.record.name,
            v.error.as_deref().unwrap_or_default().trim()
        ));
    }
    out
}

fn rows(
    c: &VariantsComparison,
    order: &[usize],
    cell: &dyn Fn(&VariantColumn, &str) -> String,
) -> Vec<Vec<String>> {
    c.tools
        .iter()
        .map(|tool| {
            let mut row = vec![tool.clone()];
            row.extend(order.iter().map(|&i| cell(&c.variants[i], tool)));
            row
        })
        .collect()
}

/// The pool host a variant ran on (absent: a lab without `hosts:`).
fn host(v: &VariantColumn) -> Option<&str> {
    v.summary
        .as_ref()?
        .environment
        .as_ref()?
        .hypervisor
        .as_deref()
}

/// What makes two hosts' figures comparable, in words
/// ([`crate::Environment::host_class`]). Variants without evidence share an
/// "unknown" class.
fn host_class(v: &VariantColumn) -> String {
    match v.summary.as_ref().and_then(|s| s.environment.as_ref()) {
        Some(env) => env.host_class(),
        None => "unknown (no evidence)".into(),
    }
}

/// The host classes in order of first appearance, each with its variants
/// (indices, in the lab's order).
fn host_classes(c: &VariantsComparison) -> Vec<(String, Vec<usize>)> {
    let mut out: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, v) in c.variants.iter().enumerate() {
        let class = host_class(v);
        match out.iter_mut().find(|(k, _)| *k == class) {
            Some((_, members)) => members.push(i),
            None => out.push((class, vec![i])),
        }
    }
    out
}

fn phase_cell(v: &VariantColumn, tool: &str, step: &Step, figure: &Figure) -> String {
    let (Some(summary), Some(t)) = (v.summary.as_ref(), v.tool(tool)) else {
        return NONE.into();
    };
    let Some(p) = t.phase(step) else {
        return NONE.into();
    };
    if p.ok == 0 && p.recorded > 0 {
        return "failed".into();
    }
    cells::phase_figure(summary, p, figure)
}

fn has_tree_memory(v: &VariantColumn, step: &Step) -> bool {
    v.summary.as_ref().is_some_and(|s| {
        s.tools
            .iter()
            .filter_map(|t| t.phase(step))
            .any(|p: &PhaseSummary| p.stat(&figures::TREE_MEMORY).is_some())
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
