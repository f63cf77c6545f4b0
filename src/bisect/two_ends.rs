//! How a probe between the ends is judged once the bad end has measured the
//! step: against both ends, not against the margin alone.
//!
//! The margin alone asks "is this probe worse than good by more than 5%?".
//! Beside a 2.2x step, a probe at 0.977 [0.901, 1.061] after 6 pairs has its
//! upper end above 1.05, so that question stays open, although a probe at
//! 0.98 cannot be the 2.2x step. What bisect needs to know is which end the
//! probe is like. On the log scale, with the bad end's step (its estimate
//! `r`, its interval's lower end `s`) and the probe's interval `[lo, hi]`:
//!
//! - **good** when `hi < max(ln(1 + margin), s / 2)`: the probe is shown
//!   nearer the good end than the bad one, or within the margin;
//! - **bad** when `lo > max(r / 2, 0)`: shown nearer the bad end, and not
//!   at the good end's figure;
//! - **inconclusive** otherwise: its interval reaches across the midpoint,
//!   so it truly lies between (a step made of two smaller ones, or too few
//!   pairs).
//!
//! The bad end's own uncertainty widens the gap between the two midpoints:
//! a noisy bad end makes both calls harder, never easier. For a step under
//! two margins wide, `s / 2` is below the margin and "good" is the margin's
//! own rule, as before.
//!
//! Error rates, per probe, with the 95% two-sided intervals compare gives
//! (they assume independent pairs whose log-ratios are roughly normal):
//! a probe at the good end's figure is called bad only when its interval's
//! lower end lies above its true figure, at most 2.5%; a probe at the bad
//! end's figure is called good only when its upper end lies below its true
//! figure (at most 2.5%) or the bad end's lower end lies above twice the true
//! step (far rarer). A bisection of k probes misjudges one with at most
//! k x 2.5%: about 10% for four probes. A probe halfway is called either
//! only when its interval is much narrower than the bad end's (seeded
//! draws: 4% bad, 0.4% good at 6 pairs each). The tests below check these
//! rates on seeded samples.
//!
//! The bad end itself is judged by the margin alone (there is no step yet):
//! bad when compare says worse beyond the margin.

use super::search::{Measured, Outcome};
use super::state::State;

/// `probe` judged against both ends, when the bad end is bad and both
/// have an interval; otherwise as the margin judged it. Only the judgment
/// changes: what was measured is kept as it was.
pub fn judge(probe: Outcome, bad_end: Option<&Outcome>, margin: f64) -> Outcome {
    let Some(Outcome::Bad(end)) = bad_end else {
        return probe;
    };
    let (Some(step), Some([lo, hi])) = (step(end), probe.measured().and_then(log_interval)) else {
        return probe;
    };
    let measured = match probe {
        Outcome::Good(m) | Outcome::Bad(m) | Outcome::Inconclusive(m) => m,
        skipped @ Outcome::Skipped { .. } => return skipped,
    };
    if hi < (1.0 + margin).ln().max(step.cautious / 2.0) {
        Outcome::Good(measured)
    } else if lo > (step.estimate / 2.0).max(0.0) {
        Outcome::Bad(measured)
    } else {
        Outcome::Inconclusive(measured)
    }
}

/// The margin a probe between the ends is run at, so that `bench
/// --until-conclusive` stops adding pairs once the probe is decided by this
/// rule rather than by the margin alone: the good side's threshold
/// (`exp(s / 2) - 1`, where a probe is shown nearer the good end), or the
/// user's margin when that is wider; at most 100%, the widest a lab's
/// `compare:` takes (a step over 4x decides its probes there already).
/// Without a bad step on record, the user's margin.
pub fn decision_margin(margin: f64, bad_end: Option<&Outcome>) -> f64 {
    match bad_end.and_then(|o| match o {
        Outcome::Bad(end) => step(end),
        _ => None,
    }) {
        Some(step) => margin.max(((step.cautious / 2.0).exp() - 1.0).min(1.0)),
        None => margin,
    }
}

/// Every probe between the ends judged against both (the same rule for a
/// probe just made and for one on record from an earlier labrun, which
/// judged by the margin alone).
pub fn judge_all(state: &mut State) {
    let Some(last) = state.outcomes.len().checked_sub(1) else {
        return;
    };
    let bad_end = state.outcomes[last].clone();
    let margin = state.question.margin;
    for outcome in state.outcomes.iter_mut().take(last).skip(1) {
        if let Some(probe) = outcome.take() {
            *outcome = Some(judge(probe, bad_end.as_ref(), margin));
        }
    }
}

/// The step the bad end measured, on the log scale.
struct Step {
    /// Its interval's lower end: the midpoint a probe must be shown below
    /// to be good.
    cautious: f64,
    /// Its estimate: the midpoint a probe must be shown above to be bad.
    estimate: f64,
}

fn step(end: &Measured) -> Option<Step> {
    let [lo, _] = log_interval(end)?;
    (end.ratio > 0.0).then(|| Step {
        cautious: lo,
        estimate: end.ratio.ln(),
    })
}

/// A measurement's interval on the log scale; None without one, or with
/// one no logarithm can be taken of.
fn log_interval(m: &Measured) -> Option<[f64; 2]> {
    let [lo, hi] = m.interval?;
    (lo > 0.0 && hi >= lo && hi.is_finite()).then(|| [lo.ln(), hi.ln()])
}

#[cfg(test)]
mod tests {
    use super::*;
    use labrun_report::compare::stats::LogTest;

    #[test]
    fn a_probe_runs_at_the_good_sides_threshold_once_a_step_is_measured() {
        let end = Outcome::Bad(Measured {
            ratio: 2.82,
            interval: Some([2.309, 3.445]),
            pairs: 3,
            run: "r".into(),
        });
        // sqrt(2.309) = 1.5195: a probe shown below it is good.
        let m = decision_margin(0.05, Some(&end));
        assert!((m - (2.309f64.sqrt() - 1.0)).abs() < 1e-9, "{m}");
        // A small step: the user's margin is the wider.
        let small = Outcome::Bad(Measured {
            ratio: 1.08,
            interval: Some([1.06, 1.10]),
            pairs: 3,
            run: "r".into(),
        });
        assert_eq!(decision_margin(0.05, Some(&small)), 0.05);
        assert_eq!(decision_margin(0.05, None), 0.05);
        let huge = Outcome::Bad(Measured {
            ratio: 9.0,
            interval: Some([6.0, 12.0]),
            pairs: 3,
            run: "r".into(),
        });
        assert_eq!(decision_margin(0.05, Some(&huge)), 1.0, "a lab's widest");
        let inconclusive = Outcome::Inconclusive(Measured {
            ratio: 2.0,
            interval: Some([0.9, 4.0]),
            pairs: 3,
            run: "r".into(),
        });
        assert_eq!(decision_margin(0.05, Some(&inconclusive)), 0.05);
    }

    /// SplitMix64 (Steele, Lea, Flood 2014) and Box-Muller: seeded noise,
    /// the same on every machine (as in crates/report/tests/compare.rs).
    struct Noise(u64);

    impl Noise {
        fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        fn uniform(&mut self) -> f64 {
            ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }

        fn normal(&mut self) -> f64 {
            let (u1, u2) = (self.uniform(), self.uniform());
            (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
        }

        /// What a probe of `pairs` pairs whose true ratio is `ratio` shows,
        /// each pair's log-ratio off by `sd`: compare's paired geometric
        /// mean and 95% interval.
        fn measure(&mut self, ratio: f64, sd: f64, pairs: usize) -> Measured {
            let d: Vec<f64> = (0..pairs)
                .map(|_| ratio.ln() + sd * self.normal())
                .collect();
            let test = LogTest::paired(&d).expect("two pairs or more");
            let (lo, hi) = test.interval(0.95);
            Measured {
                ratio: test.estimate.exp(),
                interval: Some([lo.exp(), hi.exp()]),
                pairs,
                run: "results/probe".into(),
            }
        }
    }

    /// How `draws` seeded probes of a commit at `probe` beside a bad end
    /// at `step` were judged: (good, bad, inconclusive) as fractions. The
    /// input's own verdict (the margin's) is irrelevant once both have an
    /// interval, so it is given as inconclusive. `pairs`: the bad end's,
    /// the probe's.
    fn judged(step: f64, probe: f64, sd: f64, pairs: [usize; 2], margin: f64) -> (f64, f64, f64) {
        let draws = 2000;
        let mut noise = Noise(46);
        let mut counts = [0usize; 3];
        for _ in 0..draws {
            let end = Outcome::Bad(noise.measure(step, sd, pairs[0]));
            let probe = Outcome::Inconclusive(noise.measure(probe, sd, pairs[1]));
            match judge(probe, Some(&end), margin) {
                Outcome::Good(_) => counts[0] += 1,
                Outcome::Bad(_) => counts[1] += 1,
                _ => counts[2] += 1,
            }
        }
        let f = |c: usize| c as f64 / draws as f64;
        (f(counts[0]), f(counts[1]), f(counts[2]))
    }

    #[test]
    fn beside_a_large_step_a_probe_is_told_in_a_few_pairs() {
        // A 2.2x step under TCG's noise (8% per pair), the bad end at 3
        // pairs, the 5% margin: a probe at 1.0 after 6 pairs (issue 46's) is
        // good, one at 2.2 after 3 is bad, almost always; each misjudged at
        // most 2.5% of the time.
        let (good, bad, _) = judged(2.2, 1.0, 0.08, [3, 6], 0.05);
        assert!(good > 0.95, "a probe at 1.0 was good {good}");
        assert!(bad <= 0.025, "a probe at 1.0 was bad {bad}");
        let (good, bad, _) = judged(2.2, 2.2, 0.08, [3, 3], 0.05);
        assert!(bad > 0.95, "a probe at 2.2 was bad {bad}");
        assert!(good <= 0.025, "a probe at 2.2 was good {good}");
    }

    #[test]
    fn a_small_step_is_judged_by_the_margin_as_before() {
        // 12% with 2% noise per pair, 6 pairs: the step is about two
        // margins, its midpoint below the margin, so "good" is the margin's
        // rule: upper end below 1.05.
        let (good, bad, _) = judged(1.12, 1.0, 0.02, [6, 6], 0.05);
        assert!(good > 0.9, "a probe at 1.0 was good {good}");
        assert!(bad <= 0.025, "a probe at 1.0 was bad {bad}");
        let (good, bad, _) = judged(1.12, 1.12, 0.02, [6, 6], 0.05);
        assert!(bad > 0.9, "a probe at 1.12 was bad {bad}");
        assert!(good <= 0.025, "a probe at 1.12 was good {good}");
        // A probe within the margin is good whatever the step's midpoint.
        let end = Outcome::Bad(Measured {
            ratio: 1.08,
            interval: Some([1.07, 1.09]),
            pairs: 6,
            run: "r".into(),
        });
        let within = Outcome::Inconclusive(Measured {
            ratio: 1.04,
            interval: Some([1.036, 1.044]),
            pairs: 6,
            run: "r".into(),
        });
        assert!(matches!(judge(within, Some(&end), 0.05), Outcome::Good(_)));
    }

    #[test]
    fn a_probe_halfway_is_inconclusive_not_guessed() {
        // A 2x step made of two equal ones: a commit at sqrt(2) is like
        // neither end; with as many pairs as the bad end it is said to lie
        // between far more often than it is called either.
        let (good, bad, between) = judged(2.0, 2f64.sqrt(), 0.05, [6, 6], 0.05);
        assert!(between > 0.9, "good {good}, bad {bad}, between {between}");
        assert!(good <= 0.05 && bad <= 0.05, "good {good}, bad {bad}");
    }

    #[test]
    fn a_noisy_bad_end_makes_the_rule_cautious() {
        // The bad end's interval reaches below 1: no midpoint above 1 is
        // shown, so a probe is good only within the margin.
        let end = Outcome::Bad(Measured {
            ratio: 1.6,
            interval: Some([0.9, 2.8]),
            pairs: 3,
            run: "r".into(),
        });
        let probe = |lo: f64, hi: f64| {
            Outcome::Inconclusive(Measured {
                ratio: (lo * hi).sqrt(),
                interval: Some([lo, hi]),
                pairs: 3,
                run: "r".into(),
            })
        };
        let j = |lo, hi| judge(probe(lo, hi), Some(&end), 0.05);
        assert!(matches!(j(0.9, 1.2), Outcome::Inconclusive(_)));
        assert!(matches!(j(0.95, 1.04), Outcome::Good(_)));
        // Bad above the estimate's midpoint, sqrt(1.6) = 1.265.
        assert!(matches!(j(1.3, 1.9), Outcome::Bad(_)));
        assert!(matches!(j(1.01, 1.9), Outcome::Inconclusive(_)));
    }

    #[test]
    fn without_intervals_the_margins_verdict_stands() {
        let one_pair = Measured {
            ratio: 1.3,
            interval: None,
            pairs: 1,
            run: "r".into(),
        };
        let end = Outcome::Bad(Measured {
            ratio: 2.0,
            interval: Some([1.8, 2.2]),
            pairs: 3,
            run: "r".into(),
        });
        let probe = Outcome::Inconclusive(one_pair.clone());
        assert_eq!(judge(probe.clone(), Some(&end), 0.05), probe);
        let skipped = Outcome::Skipped { why: "x".into() };
        assert_eq!(judge(skipped.clone(), Some(&end), 0.05), skipped);
        // No step known (the bad end unmeasured or without an interval).
        assert_eq!(judge(probe.clone(), None, 0.05), probe);
        let end = Outcome::Bad(one_pair);
        assert_eq!(judge(probe.clone(), Some(&end), 0.05), probe);
    }
}
