//! The second study's figures (SPEC 6): per tool and snapshot of a
//! git-history run, the backup (wall, user and system CPU, peak memory),
//! the repository size after it, and the restore of that snapshot (same
//! figures, and whether it matched its commit). Each figure is the median
//! over cycles with its range, as everywhere else in a summary.
//!
//! User and system CPU stand beside wall time on purpose: the study's point
//! was a tool whose CPU time far exceeded its elapsed time.

use crate::figures::{self, Figure};
use crate::roles::Roles;
use crate::stats::Stat;
use labrun_evidence::{Step, StepRecord};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One tool at one snapshot of the series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotRow {
    pub tool: String,
    /// 1-based: snapshot `index` holds commit `index` of the series.
    pub index: u32,
    pub commit: String,
    pub backup: Option<Timing>,
    pub repo_size_bytes: Option<Stat>,
    pub restore: Option<Timing>,
    /// Restores of this snapshot verified against its commit, and recorded.
    pub verified: u32,
    pub restores_checked: u32,
}

/// What one kind of step cost, over the cycles where it succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    pub wall_secs: Stat,
    pub user_secs: Option<Stat>,
    pub sys_secs: Option<Stat>,
    pub peak_memory_mib: Option<Stat>,
}

/// The rows of a history run, tools in `tools` order then snapshot order;
/// empty when no record belongs to a series.
pub fn rows(tools: &[String], roles: &Roles, records: &[StepRecord]) -> Vec<SnapshotRow> {
    let mut by_point: BTreeMap<(usize, u32), Vec<&StepRecord>> = BTreeMap::new();
    for r in records {
        let (Some(point), Some(t)) = (&r.history, tools.iter().position(|t| *t == r.tool)) else {
            continue;
        };
        by_point.entry((t, point.index)).or_default().push(r);
    }
    by_point
        .into_iter()
        .map(|((t, index), recs)| {
            let of = |role: fn(&Roles, &Step) -> bool| -> Vec<&StepRecord> {
                recs.iter()
                    .copied()
                    .filter(|r| role(roles, &r.step) && r.ok)
                    .collect()
            };
            let backups = of(Roles::is_backup);
            let checks: Vec<&&StepRecord> =
                recs.iter().filter(|r| roles.is_verify(&r.step)).collect();
            SnapshotRow {
                tool: tools[t].clone(),
                index,
                commit: recs
                    .first()
                    .and_then(|r| r.history.as_ref())
                    .map(|p| p.commit.clone())
                    .unwrap_or_default(),
                backup: timing(&backups),
                repo_size_bytes: Stat::of(
                    backups
                        .iter()
                        .filter_map(|r| r.repo_size_bytes)
                        .map(|b| b as f64),
                ),
                restore: timing(&of(Roles::is_restore)),
                verified: checks.iter().filter(|r| r.ok).count() as u32,
                restores_checked: checks.len() as u32,
            }
        })
        .collect()
}

fn timing(recs: &[&StepRecord]) -> Option<Timing> {
    let stat = |f: &Figure| Stat::of(recs.iter().filter_map(|r| f.of(r)));
    Some(Timing {
        wall_secs: stat(&figures::WALL_TIME)?,
        user_secs: stat(&figures::USER_CPU),
        sys_secs: stat(&figures::SYSTEM_CPU),
        peak_memory_mib: stat(&figures::PEAK_MEMORY),
    })
}
