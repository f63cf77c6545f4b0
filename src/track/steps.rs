//! When a tracker flags a step: two adjacent tracked points (the anchor
//! counts as the first, at its own figure) where the later one is worse
//! than the anchor beyond the margin (compare's verdict, as `bisect` judges
//! its bad end) and the earlier one, judged against both by bisect's own
//! rule ([`two_ends::judge`]), is like the anchor. A point between the two
//! (neither shown) flags nothing: its interval reaches across the midpoint,
//! and more pairs or more points will tell. Points that could not be
//! measured are passed over.
//!
//! A flagged step one commit long names its commit; a longer one is
//! bisected between its two points.

use crate::bisect::search::Outcome;
use crate::bisect::two_ends;

/// A tracked point: its index on the line (the anchor is 0) and what it
/// measured against the anchor.
#[derive(Debug, Clone, Copy)]
pub struct Point<'a> {
    pub index: usize,
    pub outcome: &'a Outcome,
}

/// A step between two adjacent tracked points, by their indices on the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flagged {
    pub from: usize,
    pub to: usize,
}

impl Flagged {
    /// More than one commit apart: the commit that made it must be searched.
    pub fn needs_bisect(&self) -> bool {
        self.to > self.from + 1
    }
}

/// The steps among `points` (in line order).
pub fn flagged(points: &[Point], margin: f64) -> Vec<Flagged> {
    let mut steps = Vec::new();
    // The anchor is like itself.
    let mut before: Option<Point> = None;
    for point in points {
        if matches!(point.outcome, Outcome::Skipped { .. }) {
            continue;
        }
        if matches!(point.outcome, Outcome::Bad(_)) {
            let like_anchor = match before {
                None => true,
                Some(p) => matches!(
                    two_ends::judge(p.outcome.clone(), Some(point.outcome), margin),
                    Outcome::Good(_)
                ),
            };
            if like_anchor {
                steps.push(Flagged {
                    from: before.map_or(0, |p| p.index),
                    to: point.index,
                });
            }
        }
        before = Some(*point);
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bisect::search::Measured;

    fn m(ratio: f64, lo: f64, hi: f64) -> Measured {
        Measured {
            ratio,
            interval: Some([lo, hi]),
            pairs: 3,
            run: "results/r".into(),
        }
    }

    fn good() -> Outcome {
        Outcome::Good(m(1.0, 0.95, 1.04))
    }

    fn slow() -> Outcome {
        Outcome::Bad(m(2.0, 1.8, 2.2))
    }

    fn at(points: &[(usize, Outcome)]) -> Vec<Flagged> {
        let points: Vec<Point> = points
            .iter()
            .map(|(index, outcome)| Point {
                index: *index,
                outcome,
            })
            .collect();
        flagged(&points, 0.05)
    }

    #[test]
    fn a_step_between_points_three_apart_is_bisected() {
        let steps = at(&[(3, good()), (6, slow()), (7, slow())]);
        assert_eq!(steps, [Flagged { from: 3, to: 6 }]);
        assert!(steps[0].needs_bisect());
    }

    #[test]
    fn a_step_between_neighbours_names_its_commit_without_a_bisection() {
        let steps = at(&[
            (1, good()),
            (2, good()),
            (3, good()),
            (4, slow()),
            (5, slow()),
        ]);
        assert_eq!(steps, [Flagged { from: 3, to: 4 }]);
        assert!(!steps[0].needs_bisect());
    }

    #[test]
    fn the_first_point_already_slower_steps_from_the_anchor() {
        assert_eq!(at(&[(4, slow())]), [Flagged { from: 0, to: 4 }]);
    }

    #[test]
    fn nothing_slower_flags_nothing() {
        assert!(at(&[(1, good()), (2, Outcome::Good(m(0.7, 0.6, 0.8)))]).is_empty());
    }

    #[test]
    fn a_point_that_lies_between_flags_nothing_and_a_skipped_one_is_passed_over() {
        // Halfway on the log scale (sqrt 2 beside 2.0): neither end.
        let halfway = Outcome::Inconclusive(m(1.41, 1.3, 1.55));
        assert!(at(&[(2, halfway), (4, slow())]).is_empty());
        // Near 1 but unsure by the margin alone: beside a 2x step, good.
        let near_one = Outcome::Inconclusive(m(0.98, 0.90, 1.07));
        assert_eq!(
            at(&[(2, near_one), (4, slow())]),
            [Flagged { from: 2, to: 4 }]
        );
        let skipped = Outcome::Skipped {
            why: "build failed".into(),
        };
        assert_eq!(
            at(&[(2, good()), (3, skipped), (5, slow())]),
            [Flagged { from: 2, to: 5 }]
        );
    }

    #[test]
    fn a_fix_then_a_second_slowdown_flags_both() {
        let steps = at(&[(1, slow()), (2, good()), (3, slow())]);
        assert_eq!(
            steps,
            [Flagged { from: 0, to: 1 }, Flagged { from: 2, to: 3 }]
        );
    }
}
