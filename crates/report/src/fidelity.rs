//! Metadata fidelity: per tool, what a backup and restore of the fidelity
//! fixture kept (modes, mtimes, links, empty directories, a sparse file,
//! odd names, an xattr), from the `verify` records that compared metadata.
//! Informative: content is what passes or fails a restore.

use labrun_evidence::{MetadataCheck, StepRecord};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FidelityRow {
    pub tool: String,
    /// The cycle the verdicts come from (the first that compared metadata).
    pub cycle: u32,
    /// One per kind, in `MetadataKind::ALL` order.
    pub checks: Vec<MetadataCheck>,
    /// Later cycles that gave another verdict for some kind (a tool that
    /// keeps metadata only sometimes is worth knowing about).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub differing_cycles: Vec<u32>,
}

/// One row per tool (in `tools` order) that has a metadata verify.
pub fn rows(tools: &[String], records: &[StepRecord]) -> Vec<FidelityRow> {
    let mut out = Vec::new();
    for tool in tools {
        let mut verdicts = records
            .iter()
            .filter(|r| r.tool == *tool)
            .filter_map(|r| Some((r.cycle, &r.verify.as_ref()?.metadata)))
            .filter(|(_, m)| !m.is_empty());
        let Some((cycle, first)) = verdicts.next() else {
            continue;
        };
        let differing_cycles = verdicts
            .filter(|(_, m)| {
                m.iter()
                    .zip(first.iter())
                    .any(|(a, b)| a.status != b.status)
            })
            .map(|(c, _)| c)
            .collect();
        out.push(FidelityRow {
            tool: tool.clone(),
            cycle,
            checks: first.clone(),
            differing_cycles,
        });
    }
    out
}
