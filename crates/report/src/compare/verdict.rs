//! From a test (or an exact ratio) to a verdict, and Holm's adjustment
//! across the rows of one comparison.

use super::model::{Row, Verdict};
use super::stats::{LogTest, holm};

/// The hypothesis a row is tested for: the region its estimate lies in,
/// with that test's p-value. Worse: ratio above 1+m (one-sided t-test);
/// better: below 1/(1+m); no change: within, by two one-sided tests.
/// The three regions do not overlap, so at most one can be significant.
pub fn hypothesis(test: &LogTest, log_margin: f64) -> (Verdict, f64) {
    if test.estimate > log_margin {
        (Verdict::Worse, test.p_above(log_margin))
    } else if test.estimate < -log_margin {
        (Verdict::Better, test.p_below(-log_margin))
    } else {
        (Verdict::NoChange, test.p_equivalent(log_margin))
    }
}

/// A deterministic figure (a size): the ratio against the margin, no test.
/// `no change` only when the two are equal within the margin.
pub fn exact(ratio: f64, margin: f64) -> Verdict {
    if ratio > 1.0 + margin {
        Verdict::Worse
    } else if ratio < 1.0 / (1.0 + margin) {
        Verdict::Better
    } else {
        Verdict::NoChange
    }
}

/// Adjusts the p-values of every tested row together (Holm) and sets each
/// tested row's verdict: its hypothesis when the adjusted p-value is at
/// most `alpha`, else `inconclusive`. Untested rows keep theirs.
pub fn apply_holm(rows: &mut [Row], alpha: f64) {
    let tested: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].test.is_some())
        .collect();
    let p: Vec<f64> = tested
        .iter()
        .filter_map(|&i| rows[i].test.as_ref().map(|t| t.p))
        .collect();
    for (&i, adjusted) in tested.iter().zip(holm(&p)) {
        let row = &mut rows[i];
        let Some(test) = row.test.as_mut() else {
            continue;
        };
        test.p_holm = adjusted;
        let verdict = if adjusted <= alpha {
            test.hypothesis
        } else {
            Verdict::Inconclusive
        };
        set_verdict(row, verdict);
    }
}

pub fn set_verdict(row: &mut Row, verdict: Verdict) {
    row.verdict = verdict;
    row.verdict_word = verdict.word(row.figure).to_string();
    row.conclusive = verdict != Verdict::Inconclusive;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_judged_by_the_margin_alone() {
        assert_eq!(exact(1.0, 0.05), Verdict::NoChange);
        assert_eq!(exact(1.05, 0.05), Verdict::NoChange);
        assert_eq!(exact(1.0501, 0.05), Verdict::Worse);
        assert_eq!(exact(1.0 / 1.05, 0.05), Verdict::NoChange);
        assert_eq!(exact(0.95, 0.05), Verdict::Better);
    }

    fn tested(p: f64) -> Row {
        use super::super::figure::Figure;
        use super::super::model::{SideFigure, TestResult};
        let side = SideFigure {
            n: 3,
            center: Some(1.0),
            rsd: None,
            noisy: false,
        };
        Row {
            phase: labrun_evidence::Step::BACKUP_FULL,
            figure: Figure::WallTime,
            unit: "s".into(),
            cpu_source: None,
            baseline: side.clone(),
            candidate: side,
            pairs: Some(3),
            ratio: Some(1.2),
            interval: None,
            test: Some(TestResult {
                hypothesis: Verdict::Worse,
                p,
                p_holm: p,
                df: 2.0,
            }),
            verdict: Verdict::Inconclusive,
            verdict_word: String::new(),
            conclusive: false,
            note: None,
            noise_floor: None,
        }
    }

    #[test]
    fn holm_decides_over_the_whole_family() {
        // 0.03 alone would be slower at 0.05; beside three others it is
        // adjusted to 0.06 (statsmodels: [0.01, 0.04, 0.03, 0.005] ->
        // [0.03, 0.06, 0.06, 0.02], see tests/compare_stats.rs).
        let mut alone = vec![tested(0.03)];
        apply_holm(&mut alone, 0.05);
        assert_eq!(alone[0].verdict, Verdict::Worse);
        assert_eq!(alone[0].verdict_word, "slower");
        let mut family: Vec<Row> = [0.01, 0.04, 0.03, 0.005].map(tested).into();
        let mut sizes = tested(1.0);
        sizes.test = None;
        sizes.verdict = Verdict::NoChange;
        family.push(sizes);
        apply_holm(&mut family, 0.05);
        let verdicts: Vec<Verdict> = family.iter().map(|r| r.verdict).collect();
        use Verdict::{Inconclusive as I, NoChange as N, Worse as W};
        assert_eq!(
            verdicts,
            [W, I, I, W, N],
            "an untested row keeps its verdict"
        );
        assert!((family[2].test.as_ref().unwrap().p_holm - 0.06).abs() < 1e-12);
        assert!(!family[1].conclusive && family[0].conclusive);
    }

    #[test]
    fn the_hypothesis_follows_the_estimate() {
        let delta = 1.05_f64.ln();
        let t = |estimate: f64| LogTest {
            estimate,
            std_error: 0.01,
            df: 4.0,
        };
        assert_eq!(hypothesis(&t(0.3), delta).0, Verdict::Worse);
        assert_eq!(hypothesis(&t(-0.3), delta).0, Verdict::Better);
        assert_eq!(hypothesis(&t(0.0), delta).0, Verdict::NoChange);
        // Right on the margin: equivalence cannot be shown (p >= 0.5).
        let (v, p) = hypothesis(&t(delta), delta);
        assert_eq!(v, Verdict::NoChange);
        assert!(p >= 0.5, "{p}");
    }
}
