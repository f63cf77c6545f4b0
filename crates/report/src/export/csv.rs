//! `summary.csv`: one row per tool and phase with the summary's figures, in
//! plain units (seconds, MiB, bytes) at full precision. Repository size is on
//! the full-backup row, growth on the incremental row, restore checks on the
//! restore row; other rows leave those cells empty.

use super::Exporter;
use crate::error::{ReportError, Result};
use crate::stats::Stat;
use crate::summary::{CheckOutcome, Summary};
use labrun_evidence::Step;
use serde::Serialize;

pub struct Csv;

#[derive(Serialize)]
struct Row<'a> {
    run_id: &'a str,
    tool: &'a str,
    version: &'a str,
    phase: &'a str,
    cycles_recorded: u32,
    cycles_ok: u32,
    wall_median_s: Option<f64>,
    wall_min_s: Option<f64>,
    wall_max_s: Option<f64>,
    user_cpu_median_s: Option<f64>,
    user_cpu_min_s: Option<f64>,
    user_cpu_max_s: Option<f64>,
    system_cpu_median_s: Option<f64>,
    system_cpu_min_s: Option<f64>,
    system_cpu_max_s: Option<f64>,
    peak_memory_median_mib: Option<f64>,
    peak_memory_min_mib: Option<f64>,
    peak_memory_max_mib: Option<f64>,
    repo_size_after_full_median_bytes: Option<f64>,
    repo_size_after_full_min_bytes: Option<f64>,
    repo_size_after_full_max_bytes: Option<f64>,
    growth_after_incremental_median_bytes: Option<f64>,
    growth_after_incremental_min_bytes: Option<f64>,
    growth_after_incremental_max_bytes: Option<f64>,
    restore_checks_passed: Option<usize>,
    restore_checks_failed: Option<usize>,
    restore_checks_not_checked: Option<usize>,
}

fn parts(s: Option<&Stat>) -> (Option<f64>, Option<f64>, Option<f64>) {
    (s.map(|s| s.median), s.map(|s| s.min), s.map(|s| s.max))
}

impl Exporter for Csv {
    fn file_name(&self) -> &'static str {
        "summary.csv"
    }

    fn serialize(&self, summary: &Summary) -> Result<Vec<u8>> {
        let err = |e: csv::Error| ReportError::Render {
            what: "summary.csv",
            message: e.to_string(),
        };
        let mut w = csv::Writer::from_writer(Vec::new());
        for t in &summary.tools {
            for p in &t.phases {
                let (wall_median_s, wall_min_s, wall_max_s) = parts(p.wall_secs.as_ref());
                let (user_cpu_median_s, user_cpu_min_s, user_cpu_max_s) =
                    parts(p.user_secs.as_ref());
                let (system_cpu_median_s, system_cpu_min_s, system_cpu_max_s) =
                    parts(p.sys_secs.as_ref());
                let (peak_memory_median_mib, peak_memory_min_mib, peak_memory_max_mib) =
                    parts(p.peak_memory_mib.as_ref());
                let size = (p.phase == Step::BACKUP_FULL)
                    .then_some(t.repo_size_after_full)
                    .flatten();
                let growth = (p.phase == Step::BACKUP_INCREMENTAL)
                    .then_some(t.growth_after_incremental)
                    .flatten();
                let (s_med, s_min, s_max) = parts(size.as_ref());
                let (g_med, g_min, g_max) = parts(growth.as_ref());
                let restore = p.phase == Step::RESTORE;
                let count = |o: CheckOutcome| restore.then(|| t.checks_with(o));
                w.serialize(Row {
                    run_id: &summary.run_id,
                    tool: &t.tool,
                    version: t.version.as_deref().unwrap_or(""),
                    phase: p.phase.as_str(),
                    cycles_recorded: p.recorded,
                    cycles_ok: p.ok,
                    wall_median_s,
                    wall_min_s,
                    wall_max_s,
                    user_cpu_median_s,
                    user_cpu_min_s,
                    user_cpu_max_s,
                    system_cpu_median_s,
                    system_cpu_min_s,
                    system_cpu_max_s,
                    peak_memory_median_mib,
                    peak_memory_min_mib,
                    peak_memory_max_mib,
                    repo_size_after_full_median_bytes: s_med,
                    repo_size_after_full_min_bytes: s_min,
                    repo_size_after_full_max_bytes: s_max,
                    growth_after_incremental_median_bytes: g_med,
                    growth_after_incremental_min_bytes: g_min,
                    growth_after_incremental_max_bytes: g_max,
                    restore_checks_passed: count(CheckOutcome::Pass),
                    restore_checks_failed: count(CheckOutcome::Fail),
                    restore_checks_not_checked: count(CheckOutcome::NotChecked),
                })
                .map_err(err)?;
            }
        }
        w.into_inner().map_err(|e| ReportError::Render {
            what: "summary.csv",
            message: e.to_string(),
        })
    }
}
