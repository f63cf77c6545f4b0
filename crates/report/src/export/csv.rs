//! `summary.csv`: one row per tool and phase with every per-phase figure of
//! the table ([`crate::figures`]), in plain units (seconds, MiB, bytes) at
//! full precision. Repository size is on the first backup's row, growth on
//! the later backup's, restore checks on the restore's (the steps' roles in
//! the plan); other rows leave those cells empty.

use super::Exporter;
use crate::error::{ReportError, Result};
use crate::stats::Stat;
use crate::summary::{CheckOutcome, Summary};

pub struct Csv;

const STATS: [&str; 3] = ["median", "min", "max"];

fn header(summary: &Summary) -> Vec<String> {
    let mut h: Vec<String> = [
        "run_id",
        "tool",
        "version",
        "phase",
        "cycles_recorded",
        "cycles_ok",
    ]
    .map(String::from)
    .to_vec();
    let mut figure = |stem: &str, unit: &str| {
        h.extend(STATS.map(|s| format!("{stem}_{s}_{}", unit.to_lowercase())));
    };
    for (f, c) in summary.phase_figures() {
        figure(c.csv, f.unit.symbol());
    }
    figure("repo_size_after_full", "bytes");
    figure("growth_after_incremental", "bytes");
    h.extend(["passed", "failed", "not_checked"].map(|o| format!("restore_checks_{o}")));
    h
}

/// Median, min and max (as the csv crate writes a float: `241.0`); empty
/// cells without a figure.
fn parts(s: Option<Stat>) -> [String; 3] {
    let cell = |v: fn(&Stat) -> f64| s.as_ref().map_or(String::new(), |s| format!("{:?}", v(s)));
    [cell(|s| s.median), cell(|s| s.min), cell(|s| s.max)]
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
        let roles = &summary.roles;
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(header(summary)).map_err(err)?;
        for t in &summary.tools {
            for p in &t.phases {
                let mut row = vec![
                    summary.run_id.clone(),
                    t.tool.clone(),
                    t.version.clone().unwrap_or_default(),
                    p.phase.to_string(),
                    p.recorded.to_string(),
                    p.ok.to_string(),
                ];
                for (f, _) in summary.phase_figures() {
                    row.extend(parts(p.stat(f)));
                }
                let on = |step: &Option<labrun_evidence::Step>| step.as_ref() == Some(&p.phase);
                row.extend(parts(
                    on(&roles.full).then_some(t.repo_size_after_full).flatten(),
                ));
                row.extend(parts(
                    on(&roles.incremental)
                        .then_some(t.growth_after_incremental)
                        .flatten(),
                ));
                let restore = on(&roles.restore);
                for o in [
                    CheckOutcome::Pass,
                    CheckOutcome::Fail,
                    CheckOutcome::NotChecked,
                ] {
                    row.push(if restore {
                        t.checks_with(o).to_string()
                    } else {
                        String::new()
                    });
                }
                w.write_record(row.iter().map(|c| super::escape::csv_cell(c).into_owned()))
                    .map_err(err)?;
            }
        }
        w.into_inner().map_err(|e| ReportError::Render {
            what: "summary.csv",
            message: e.to_string(),
        })
    }
}
