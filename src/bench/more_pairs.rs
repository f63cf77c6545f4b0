//! `bench --until-conclusive N`: while a comparison the lab asked for has
//! an inconclusive row, one more cycle of the two tools of every such
//! comparison (interleaved as before: one more pair each), appended to the
//! run's own evidence; at most N cycles in all, never beyond. What was
//! added is kept beside the evidence (`raw/added-pairs.json`), and every
//! verdict says how many of its pairs came after the lab's own cycles.

use crate::bench::layout::HostRun;
use crate::bench::prepare::OnTarget;
use crate::bench::progress::Display;
use anyhow::Context as _;
use labrun_evidence::compare::{ADDED_PAIRS, AddedPairs, AddedRound};
use std::process::ExitCode;
use std::sync::atomic::Ordering;

pub async fn add_until_conclusive(
    on: &mut OnTarget,
    host: &HostRun,
    max: u32,
    display: &mut dyn Display,
) -> anyhow::Result<Option<ExitCode>> {
    let mut added = AddedPairs {
        max,
        added: 0,
        rounds: Vec::new(),
    };
    let mut last = None;
    loop {
        let raw = labrun_report::evidence::load(&host.dir)?;
        let (comparisons, _) = labrun_report::compare::requested(&raw);
        let open: Vec<&labrun_report::compare::Comparison> = comparisons
            .iter()
            .filter(|c| c.inconclusive().next().is_some())
            .collect();
        let rows: usize = open.iter().map(|c| c.inconclusive().count()).sum();
        if open.is_empty() {
            display.note("every verdict the lab asked for is conclusive");
            break;
        }
        if added.added >= max {
            display.note(&format!(
                "{rows} verdict row(s) still inconclusive after {max} added pair(s), the declared maximum"
            ));
            break;
        }
        let wanted: Vec<&str> = open
            .iter()
            .flat_map(|c| [c.baseline.tool.as_str(), c.candidate.tool.as_str()])
            .collect();
        let cycle = raw.records.iter().map(|r| r.cycle).max().unwrap_or(0) + 1;
        let mut next = on.plan.clone();
        next.first_cycle = cycle;
        next.cycles = 1;
        next.tools.retain(|t| wanted.contains(&t.name.as_str()));
        let tools: Vec<String> = next.tools.iter().map(|t| t.name.clone()).collect();
        display.note(&format!(
            "{rows} verdict row(s) inconclusive: adding cycle {cycle} of {} ({} of at most {max} added)",
            tools.join(", "),
            added.added + 1
        ));
        let code = on.run(&next, host, display, true).await?;
        added.added += 1;
        added.rounds.push(AddedRound {
            cycle,
            tools,
            inconclusive_rows: rows,
        });
        let path = host.raw().join(ADDED_PAIRS);
        std::fs::write(&path, serde_json::to_vec_pretty(&added)?)
            .with_context(|| format!("writing {}", path.display()))?;
        last = Some(code);
        if crate::bench::variants::INTERRUPTED.load(Ordering::SeqCst) {
            break;
        }
    }
    Ok(last)
}
