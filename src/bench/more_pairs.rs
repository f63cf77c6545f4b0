//! `bench --until-conclusive [N]`: while a comparison the lab asked for has
//! an inconclusive row, or a series' trend an inconclusive step, one more
//! cycle of the two tools of every such question (interleaved as before: one more pair each), appended to the
//! run's own evidence, up to a cap: what the spread of the lab's own pairs
//! needs (`compare::sequential::needed`, at most its ceiling), and at most
//! N when given. The cap is fixed before the first pair is added and kept
//! beside the evidence (`raw/added-pairs.json`, with the looks it makes),
//! so every verdict is judged by the sequential rule and says how many of
//! its pairs came after the lab's own cycles.

use crate::bench::layout::HostRun;
use crate::bench::prepare::OnTarget;
use crate::bench::progress::Display;
use anyhow::Context as _;
use labrun_evidence::compare::{ADDED_PAIRS, AddedPairs, AddedRound};
use labrun_report::compare::{Comparison, method::percent, sequential};
use labrun_report::questions;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

pub async fn add_until_conclusive(
    on: &mut OnTarget,
    host: &HostRun,
    asked: Option<u32>,
    display: &mut dyn Display,
) -> anyhow::Result<Option<ExitCode>> {
    let raw = labrun_report::evidence::load(&host.dir)?;
    let open = questions::open(&raw);
    let needed = sequential::needed(&open.comparisons, sequential::CEILING);
    let max = cap(needed, asked);
    if let Some(line) = cap_line(needed, asked, max, &open.comparisons) {
        display.note(&line);
    }
    let mut added = AddedPairs {
        max,
        added: 0,
        rounds: Vec::new(),
        looks: Some(max + 1),
        needed: needed.ok().flatten(),
    };
    // Written before the first look, so every look (the lab's own cycles
    // included) is judged by the sequential rule with these looks.
    write(host, &added)?;
    let mut last = None;
    loop {
        let raw = labrun_report::evidence::load(&host.dir)?;
        let open = questions::open(&raw);
        let rows = open.rows;
        if rows == 0 {
            display.note("every verdict the lab asked for is conclusive");
            break;
        }
        if added.added >= max {
            display.note(&format!(
                "{rows} verdict row(s) still inconclusive after {max} added pair(s), the cap"
            ));
            break;
        }
        let wanted = &open.tools;
        let cycle = raw.records.iter().map(|r| r.cycle).max().unwrap_or(0) + 1;
        let mut next = on.plan.clone();
        next.first_cycle = cycle;
        next.cycles = 1;
        next.tools.retain(|t| wanted.contains(&t.name));
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
        write(host, &added)?;
        last = Some(code);
        if crate::bench::variants::INTERRUPTED.load(Ordering::SeqCst) {
            break;
        }
    }
    Ok(last)
}

fn write(host: &HostRun, added: &AddedPairs) -> anyhow::Result<()> {
    let path = host.raw().join(ADDED_PAIRS);
    std::fs::write(&path, serde_json::to_vec_pretty(added)?)
        .with_context(|| format!("writing {}", path.display()))
}

/// The cap: what the noise needs (the ceiling when it needs more), at most
/// the number asked for (`--until-conclusive N`; none or 0: no limit but
/// the ceiling).
pub fn cap(needed: Result<Option<u32>, ()>, asked: Option<u32>) -> u32 {
    let noise = match needed {
        // An open row whose spread says its pairs should already decide
        // still gets one more pair: the estimate is only an estimate.
        Ok(n) => n.map_or(0, |n| n.max(1)),
        Err(()) => sequential::CEILING,
    };
    match asked {
        Some(n) if n > 0 => noise.min(n),
        _ => noise,
    }
}

/// What the cap is and why, in one line; none when nothing is open.
pub fn cap_line(
    needed: Result<Option<u32>, ()>,
    asked: Option<u32>,
    max: u32,
    comparisons: &[Comparison],
) -> Option<String> {
    let alpha = comparisons
        .first()
        .map_or_else(|| "5%".to_string(), |c| percent(c.settings.alpha));
    let limited = match asked {
        Some(n) if n > 0 && n == max && n < cap(needed, None) => {
            format!(" (--until-conclusive {n} caps it)")
        }
        _ => String::new(),
    };
    match needed {
        Ok(None) => None,
        Ok(Some(n)) => Some(format!(
            "the noise here needs about {n} pairs to decide at {alpha}: adding up to {max}{limited}"
        )),
        Err(()) => Some(format!(
            "the noise here needs more than {} pairs to decide at {alpha}: adding up to {max}{limited}; a quieter host or a wider `margin:` decides sooner",
            sequential::CEILING
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_is_the_noises_need_at_most_the_number_asked() {
        assert_eq!(cap(Ok(Some(12)), None), 12);
        assert_eq!(cap(Ok(Some(12)), Some(0)), 12);
        assert_eq!(cap(Ok(Some(12)), Some(5)), 5);
        assert_eq!(cap(Ok(Some(12)), Some(40)), 12);
        assert_eq!(cap(Err(()), None), sequential::CEILING);
        assert_eq!(cap(Err(()), Some(8)), 8);
        assert_eq!(cap(Ok(None), None), 0);
        assert_eq!(
            cap(Ok(Some(0)), None),
            1,
            "an open row gets at least one pair"
        );
    }

    #[test]
    fn the_cap_is_printed_with_its_reason() {
        assert_eq!(
            cap_line(Ok(Some(12)), None, 12, &[]).as_deref(),
            Some("the noise here needs about 12 pairs to decide at 5%: adding up to 12")
        );
        assert_eq!(
            cap_line(Ok(Some(12)), Some(5), 5, &[]).as_deref(),
            Some(
                "the noise here needs about 12 pairs to decide at 5%: adding up to 5 (--until-conclusive 5 caps it)"
            )
        );
        let beyond = cap_line(Err(()), None, sequential::CEILING, &[]).unwrap();
        assert!(beyond.contains("more than 50 pairs"), "{beyond}");
        assert_eq!(cap_line(Ok(None), None, 0, &[]), None);
    }
}
