//! The questions a run's lab asked that more pairs can decide: each
//! `compare:` pair's rows when it names pairs (bisect's probes name one row
//! of one pair), else each adjacent step of each series' trend (a series
//! lab such as `labs/restic-series.yaml` asks its steps).
//! `bench --until-conclusive` adds pairs while one is open (and sizes its
//! cap from their spread); the summary says how many the lab's own cycles
//! decided under the fixed rule and how many the whole run decided under
//! the sequential rule, side by side from the same samples.

use crate::compare::{Comparison, Verdict, compare_paired, lab_settings, requested, sequential};
use crate::evidence::RawRun;
use crate::trend::{self, Trend};
use serde::{Deserialize, Serialize};

/// What is still open in a run, and the comparisons the cap is read from.
#[derive(Debug, Default)]
pub struct Open {
    /// The lab's `compare:` comparisons, and each series' adjacent steps
    /// compared on their own (their spread sizes the cap).
    pub comparisons: Vec<Comparison>,
    /// Rows still inconclusive: a comparison's rows, a trend's steps.
    pub rows: usize,
    /// The tools that one more pair of every open question runs, each once,
    /// in the order the questions name them.
    pub tools: Vec<String>,
}

/// Whether the run's questions are its series' steps: it names no
/// `compare:` pair of its own.
fn asks_series(run: &RawRun) -> bool {
    run.compare_plan
        .as_ref()
        .is_some_and(|p| p.pairs.is_empty())
}

/// The trends whose steps the run asks about: its series' when it names
/// no pair, else none.
fn asked_trends(run: &RawRun) -> Vec<Trend> {
    if asks_series(run) {
        trend::of_run(run).0
    } else {
        Vec::new()
    }
}

/// What is open in `run`, judged as its summary judges it (a trend's steps
/// with Holm's correction across the chain).
pub fn open(run: &RawRun) -> Open {
    let (mut comparisons, _) = requested(run);
    let mut open = Open::default();
    let want = |a: &str, b: &str, tools: &mut Vec<String>| {
        for t in [a, b] {
            if !tools.iter().any(|have| have == t) {
                tools.push(t.to_string());
            }
        }
    };
    for c in &comparisons {
        let rows = c.inconclusive().count();
        if rows > 0 {
            open.rows += rows;
            want(&c.baseline.tool, &c.candidate.tool, &mut open.tools);
        }
    }
    let trends = asked_trends(run);
    for t in &trends {
        for row in &t.rows {
            for s in row.steps.iter().filter(|s| is_open_step(s)) {
                open.rows += 1;
                want(&s.from, &s.to, &mut open.tools);
            }
        }
    }
    // The cap needs each open step's spread: its comparison on its own.
    if let Some(plan) = run.compare_plan.as_ref().filter(|_| asks_series(run)) {
        let settings = lab_settings(run);
        for series in &plan.series {
            for w in series.members.windows(2) {
                let open_here = trends
                    .iter()
                    .flat_map(|t| &t.rows)
                    .flat_map(|r| &r.steps)
                    .any(|s| is_open_step(s) && s.from == w[0] && s.to == w[1]);
                if open_here && let Ok(c) = compare_paired(run, &w[0], &w[1], &settings) {
                    comparisons.push(c);
                }
            }
        }
    }
    open.comparisons = comparisons;
    open
}

/// A tested step still undecided (a size step is exact: never open).
fn is_open_step(s: &trend::TrendStep) -> bool {
    s.p.is_some() && s.verdict == Verdict::Inconclusive
}

/// Decided rows out of tested ones, for one rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decided {
    pub decided: usize,
    pub tested: usize,
}

/// The same run's samples judged two ways: the lab's own cycles alone by
/// the fixed rule (what the run would have said without added pairs), and
/// every cycle by the sequential rule the run was judged by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecidedByRule {
    /// The lab's own cycles (the plan's).
    pub lab_cycles: Option<u32>,
    /// Pairs `--until-conclusive` added, and the sequential rule's looks.
    pub added: u32,
    pub looks: u32,
    pub fixed: Decided,
    pub sequential: Decided,
}

/// None when no pairs were added (the two rules are then one).
pub fn decided_by_rule(run: &RawRun) -> Option<DecidedByRule> {
    let added = run.added_pairs.as_ref()?;
    let lab_cycles = run.plan.as_ref().and_then(|p| p.cycles);
    let added_cycles: Vec<u32> = added.rounds.iter().map(|r| r.cycle).collect();
    let mut lab_own = run.clone();
    // The lab's own cycles are the plan's (`raw/plan.json` stays the
    // run's first); a run without one drops the rounds' cycles.
    lab_own.records.retain(|r| match lab_cycles {
        Some(n) => r.cycle <= n,
        None => !added_cycles.contains(&r.cycle),
    });
    // No added pairs: the fixed rule, one look.
    lab_own.added_pairs = None;
    Some(DecidedByRule {
        lab_cycles,
        added: added.added,
        looks: added.looks.unwrap_or(sequential::FIXED),
        fixed: decided(&lab_own),
        sequential: decided(run),
    })
}

fn decided(run: &RawRun) -> Decided {
    let (comparisons, _) = requested(run);
    let trends = asked_trends(run);
    let mut d = Decided {
        decided: 0,
        tested: 0,
    };
    for row in comparisons
        .iter()
        .flat_map(|c| &c.rows)
        .filter(|r| r.test.is_some())
    {
        d.tested += 1;
        d.decided += usize::from(row.verdict != Verdict::Inconclusive);
    }
    for s in trends
        .iter()
        .flat_map(|t: &Trend| &t.rows)
        .flat_map(|r| &r.steps)
        .filter(|s| s.p.is_some())
    {
        d.tested += 1;
        d.decided += usize::from(s.verdict != Verdict::Inconclusive);
    }
    d
}

impl DecidedByRule {
    /// `12 of 40 tested rows decided by the lab's 3 cycles alone (fixed
    /// rule); 25 of 40 after 3 added pair(s) (sequential rule, 4 looks)`.
    pub fn line(&self) -> String {
        let cycles = self
            .lab_cycles
            .map_or_else(|| "own".to_string(), |c| c.to_string());
        format!(
            "{} of {} tested rows decided by the lab's {cycles} cycles alone (fixed rule); {} of {} after {} added pair(s) (sequential rule, {} looks), from the same samples",
            self.fixed.decided,
            self.fixed.tested,
            self.sequential.decided,
            self.sequential.tested,
            self.added,
            self.looks,
        )
    }
}
