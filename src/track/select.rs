//! Which commits of the branch a tracker runs: given the first-parent line
//! from the anchor to the branch's tip and the commits already on record,
//! every new one, every Nth counted from the anchor (the tip always, so the
//! newest commit is known), or the tip alone. Counting from the anchor keeps
//! the choice the same from one run to the next as the branch grows.

use std::collections::BTreeSet;

/// How many of the branch's commits are benchmarked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cadence {
    /// Every Nth commit after the anchor (1: each one), and the tip.
    Every(usize),
    /// Only the branch's tip.
    Tip,
}

/// The indices into `line` (anchor at 0, tip last) to run now, oldest
/// first: the ones the cadence picks that are not in `tracked`.
pub fn to_run(line: &[String], tracked: &BTreeSet<String>, cadence: Cadence) -> Vec<usize> {
    let tip = line.len().saturating_sub(1);
    (1..line.len())
        .filter(|&i| match cadence {
            Cadence::Every(n) => i == tip || i % n.max(1) == 0,
            Cadence::Tip => i == tip,
        })
        .filter(|&i| !tracked.contains(&line[i]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("c{i}")).collect()
    }

    fn tracked(ids: &[usize]) -> BTreeSet<String> {
        ids.iter().map(|i| format!("c{i}")).collect()
    }

    #[test]
    fn every_commit_after_the_anchor_once() {
        assert_eq!(
            to_run(&line(5), &tracked(&[]), Cadence::Every(1)),
            [1, 2, 3, 4]
        );
        assert_eq!(
            to_run(&line(5), &tracked(&[1, 3]), Cadence::Every(1)),
            [2, 4]
        );
        assert!(to_run(&line(5), &tracked(&[1, 2, 3, 4]), Cadence::Every(1)).is_empty());
    }

    #[test]
    fn every_nth_counts_from_the_anchor_and_keeps_the_tip() {
        // c3 and c6 by the count, c7 as the tip.
        assert_eq!(
            to_run(&line(8), &tracked(&[]), Cadence::Every(3)),
            [3, 6, 7]
        );
        // The branch grew by two: the old tip stays tracked, the count
        // goes on from the anchor (c9 the new multiple and tip).
        assert_eq!(
            to_run(&line(10), &tracked(&[3, 6, 7]), Cadence::Every(3)),
            [9]
        );
    }

    #[test]
    fn the_tip_alone() {
        assert_eq!(to_run(&line(8), &tracked(&[]), Cadence::Tip), [7]);
        assert!(to_run(&line(8), &tracked(&[7]), Cadence::Tip).is_empty());
        // Only the anchor: nothing after it to run.
        assert!(to_run(&line(1), &tracked(&[]), Cadence::Tip).is_empty());
    }
}
