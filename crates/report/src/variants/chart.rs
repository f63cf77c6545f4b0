//! Charts grouped by variant: per phase and tool, one bar per variant (its
//! colour), so a variant's effect reads as the bars of one group.

use super::VariantsComparison;
use crate::error::Result;
use crate::export::cells;
use crate::export::chart::{Bar, draw};
use crate::figures::{self, Figure};

/// Each chart's file name and bytes.
pub fn render_all(c: &VariantsComparison) -> Result<Vec<(&'static str, Vec<u8>)>> {
    let time = bars(c, &figures::WALL_TIME);
    let memory = bars(c, &figures::PEAK_MEMORY);
    let mut out = Vec::new();
    if !time.is_empty() {
        out.push((
            "chart-variants-time.svg",
            draw(
                "chart-variants-time.svg",
                "Time per phase, by variant (median, min-max range)",
                "seconds",
                &time,
            )?,
        ));
    }
    if !memory.is_empty() {
        out.push((
            "chart-variants-memory.svg",
            draw(
                "chart-variants-memory.svg",
                "Peak memory (largest process) per phase, by variant",
                "MiB",
                &memory,
            )?,
        ));
    }
    Ok(out)
}

fn bars(c: &VariantsComparison, figure: &Figure) -> Vec<Bar> {
    let mut rows = Vec::new();
    for step in &c.phases {
        for tool in &c.tools {
            for (i, v) in c.variants.iter().enumerate() {
                if let Some(st) = v
                    .tool(tool)
                    .and_then(|t| t.phase(step))
                    .and_then(|p| p.stat(figure))
                {
                    rows.push(Bar::new(
                        format!("{tool} {}: {}", v.record.name, cells::phase_title(step)),
                        i,
                        st,
                    ));
                }
            }
        }
    }
    rows
}
