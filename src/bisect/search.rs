//! The search of `labrun bisect`, apart from how a commit is built and
//! measured: given the commits from good to bad and what each probe found,
//! which commit to probe next, or what the search has concluded.
//!
//! Like `git bisect`, with two differences a benchmark needs. A probe can
//! come back *inconclusive* (its interval straddles the margin after every
//! pair it was allowed): the search stops there and says between which
//! commits the step lies, instead of calling the probe good or bad on a
//! guess. And the bad end is probed first: "bad is slower than good" is a
//! measurement too, and bisecting a difference that is not there would
//! name a commit at random.

use serde::{Deserialize, Serialize};

/// What a probe of one commit found, against the good commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    /// Not worse beyond the margin (no change, or better).
    Good(Measured),
    /// Worse beyond the margin.
    Bad(Measured),
    /// The interval straddles the margin: neither.
    Inconclusive(Measured),
    /// Could not be measured (its build failed, or the run did): never
    /// counted good or bad, like `git bisect skip`.
    Skipped { why: String },
}

/// A probe's figure against the good commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Probe / good: the paired geometric-mean ratio.
    pub ratio: f64,
    /// Its 95% interval (None below two pairs).
    pub interval: Option<[f64; 2]>,
    /// Pairs measured.
    pub pairs: usize,
    /// The run folder that holds the probe's evidence.
    pub run: String,
}

impl Outcome {
    pub fn measured(&self) -> Option<&Measured> {
        match self {
            Outcome::Good(m) | Outcome::Bad(m) | Outcome::Inconclusive(m) => Some(m),
            Outcome::Skipped { .. } => None,
        }
    }
}

/// Where the search stands.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Probe the commit at this index.
    Probe(usize),
    /// The first commit worse beyond the margin.
    FirstBad(usize),
    /// The search cannot go on; the reason says what is known.
    Stuck(Stuck),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Stuck {
    /// The bad end is not worse than the good one beyond the margin.
    BadEndNotWorse,
    /// The bad end could not be measured.
    BadEndSkipped,
    /// A probe stayed inconclusive: the first bad commit is after `good`
    /// and at or before `bad`, and `at` could not be told.
    Inconclusive { at: usize, good: usize, bad: usize },
    /// Every commit left between `good` and `bad` was skipped: the first bad
    /// commit is `bad` or one of `skipped`.
    OnlySkipped {
        good: usize,
        bad: usize,
        skipped: Vec<usize>,
    },
}

/// The commits, oldest first: index 0 is the good commit, the last the bad
/// one; `outcomes[i]` is what the probe of commit `i` found, if probed.
pub fn next(commits: usize, outcomes: &[Option<Outcome>]) -> Next {
    debug_assert_eq!(commits, outcomes.len());
    let last = commits.saturating_sub(1);
    if last == 0 {
        return Next::Stuck(Stuck::BadEndNotWorse);
    }
    match &outcomes[last] {
        None => return Next::Probe(last),
        Some(Outcome::Good(_)) => return Next::Stuck(Stuck::BadEndNotWorse),
        Some(Outcome::Skipped { .. }) => return Next::Stuck(Stuck::BadEndSkipped),
        Some(Outcome::Inconclusive(_)) => {
            return Next::Stuck(Stuck::Inconclusive {
                at: last,
                good: 0,
                bad: last,
            });
        }
        Some(Outcome::Bad(_)) => {}
    }
    // The newest good commit, then the oldest bad one after it: the step
    // lies between them. (A bad commit before a good one means the figure
    // moved back and forth; like git bisect, the search follows the newest
    // good.)
    let good = (0..last)
        .rev()
        .find(|&i| matches!(outcomes[i], Some(Outcome::Good(_))))
        .unwrap_or(0);
    let bad = (good + 1..=last)
        .find(|&i| matches!(outcomes[i], Some(Outcome::Bad(_))))
        .unwrap_or(last);
    if let Some(at) =
        (good + 1..bad).find(|&i| matches!(outcomes[i], Some(Outcome::Inconclusive(_))))
    {
        return Next::Stuck(Stuck::Inconclusive { at, good, bad });
    }
    let open: Vec<usize> = (good + 1..bad).filter(|&i| outcomes[i].is_none()).collect();
    if open.is_empty() {
        let skipped: Vec<usize> = (good + 1..bad).collect();
        return if skipped.is_empty() {
            Next::FirstBad(bad)
        } else {
            Next::Stuck(Stuck::OnlySkipped { good, bad, skipped })
        };
    }
    // The open commit nearest the middle (the older on a tie): with nothing
    // skipped, plain halving.
    let middle = (good + bad) / 2;
    let probe = open
        .iter()
        .copied()
        .min_by_key(|&i| (i.abs_diff(middle), i))
        .unwrap_or(open[0]);
    Next::Probe(probe)
}

/// The most probes a search over `commits` (good and bad included) takes
/// when nothing is skipped or inconclusive: the bad end, then halving the
/// `commits - 1` candidates.
pub fn max_probes(commits: usize) -> usize {
    let candidates = commits.saturating_sub(1).max(1);
    1 + (usize::BITS - (candidates - 1).leading_zeros()) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(ratio: f64) -> Measured {
        Measured {
            ratio,
            interval: Some([ratio * 0.95, ratio * 1.05]),
            pairs: 3,
            run: "results/x".into(),
        }
    }

    /// Runs the search against a truth: commits at or after `first_bad`
    /// are bad; `skip` and `unsure` name commits whose probe is skipped or
    /// inconclusive. Returns the end and the commits probed.
    fn search(
        commits: usize,
        first_bad: usize,
        skip: &[usize],
        unsure: &[usize],
    ) -> (Next, Vec<usize>) {
        let mut outcomes: Vec<Option<Outcome>> = vec![None; commits];
        outcomes[0] = Some(Outcome::Good(m(1.0)));
        let mut probed = Vec::new();
        loop {
            match next(commits, &outcomes) {
                Next::Probe(i) => {
                    assert!(outcomes[i].is_none(), "commit {i} probed twice");
                    probed.push(i);
                    outcomes[i] = Some(if skip.contains(&i) {
                        Outcome::Skipped {
                            why: "build failed".into(),
                        }
                    } else if unsure.contains(&i) {
                        Outcome::Inconclusive(m(1.04))
                    } else if i >= first_bad {
                        Outcome::Bad(m(1.5))
                    } else {
                        Outcome::Good(m(1.0))
                    });
                }
                end => return (end, probed),
            }
        }
    }

    #[test]
    fn finds_every_planted_commit_within_the_bound() {
        for commits in 2..=40 {
            for first_bad in 1..commits {
                let (end, probed) = search(commits, first_bad, &[], &[]);
                assert_eq!(end, Next::FirstBad(first_bad), "{commits} commits");
                assert!(
                    probed.len() <= max_probes(commits),
                    "{commits} commits, first bad {first_bad}: {} probes > {}",
                    probed.len(),
                    max_probes(commits)
                );
                assert_eq!(probed[0], commits - 1, "the bad end is probed first");
            }
        }
    }

    #[test]
    fn the_bound_is_log2_plus_one() {
        // 8 commits after good: ceil(log2 8) + 1.
        assert_eq!(max_probes(9), 4);
        assert_eq!(max_probes(2), 1);
        assert_eq!(max_probes(3), 2);
        assert_eq!(max_probes(5), 3);
    }

    #[test]
    fn a_bad_end_that_is_not_worse_stops_at_once() {
        let mut outcomes = vec![None; 6];
        outcomes[5] = Some(Outcome::Good(m(1.01)));
        assert_eq!(next(6, &outcomes), Next::Stuck(Stuck::BadEndNotWorse));
    }

    #[test]
    fn an_inconclusive_probe_is_said_with_the_range_left() {
        // 9 commits, first bad 6; the probe of 4 is inconclusive.
        let (end, _) = search(9, 6, &[], &[4]);
        assert_eq!(
            end,
            Next::Stuck(Stuck::Inconclusive {
                at: 4,
                good: 0,
                bad: 8
            })
        );
    }

    #[test]
    fn a_skipped_build_is_stepped_around() {
        // 4 is the middle and does not build: its neighbour is probed
        // instead, and the step (6) is still found.
        let (end, probed) = search(9, 6, &[4], &[]);
        assert_eq!(end, Next::FirstBad(6));
        assert!(probed.contains(&4));
    }

    #[test]
    fn a_skipped_commit_beside_the_step_is_named_not_guessed() {
        // 4 is good, 6 bad, 5 did not build: the step is 5 or 6, and the
        // search says so instead of picking one.
        let (end, _) = search(9, 5, &[5], &[]);
        match end {
            Next::Stuck(Stuck::OnlySkipped { good, bad, skipped }) => {
                assert_eq!((good, bad, skipped), (4, 6, vec![5]));
            }
            other => panic!("expected OnlySkipped, got {other:?}"),
        }
    }

    #[test]
    fn probes_already_made_are_reused() {
        // A rerun with three probes on record probes only what is left.
        let mut outcomes: Vec<Option<Outcome>> = vec![None; 9];
        outcomes[8] = Some(Outcome::Bad(m(1.5)));
        outcomes[4] = Some(Outcome::Good(m(1.0)));
        outcomes[6] = Some(Outcome::Bad(m(1.5)));
        assert_eq!(next(9, &outcomes), Next::Probe(5));
    }
}
