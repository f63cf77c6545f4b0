//! The statistics of a comparison, all on log values (a ratio's logarithm
//! is symmetric: 2x slower and 2x faster are the same distance from 1).
//!
//! Student's t distribution comes from `statrs`; everything else is a few
//! lines each. Every function is checked against scipy in
//! `tests/compare_stats.rs` (reference values from
//! `tests/data/compare_reference.py`).

use statrs::distribution::{ContinuousCDF, StudentsT};

/// P(T <= x) for Student's t with `df` degrees of freedom (any df > 0, not
/// only whole ones: Welch's are fractional). NaN for df <= 0.
pub fn t_cdf(x: f64, df: f64) -> f64 {
    if x == f64::INFINITY {
        return 1.0;
    }
    if x == f64::NEG_INFINITY {
        return 0.0;
    }
    match StudentsT::new(0.0, 1.0, df) {
        Ok(t) => t.cdf(x),
        Err(_) => f64::NAN,
    }
}

/// The x with P(T <= x) = p. NaN for df <= 0 or p outside (0, 1).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if !(p > 0.0 && p < 1.0) {
        return f64::NAN;
    }
    match StudentsT::new(0.0, 1.0, df) {
        Ok(t) => t.inverse_cdf(p),
        Err(_) => f64::NAN,
    }
}

pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Sample standard deviation (n - 1 in the denominator); NaN below 2 values.
pub fn sample_sd(values: &[f64]) -> f64 {
    let n = values.len();
    if n < 2 {
        return f64::NAN;
    }
    let m = mean(values);
    let ss: f64 = values.iter().map(|v| (v - m).powi(2)).sum();
    (ss / (n - 1) as f64).sqrt()
}

/// Relative standard deviation (coefficient of variation), as a fraction:
/// the noise figure the Phoronix Test Suite flags above 3.5%.
pub fn rsd(values: &[f64]) -> f64 {
    sample_sd(values) / mean(values).abs()
}

/// An estimate of a mean log-ratio with its standard error and degrees of
/// freedom: what a paired t-test or Welch's test reduces the data to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogTest {
    /// Mean of ln(candidate / baseline).
    pub estimate: f64,
    pub std_error: f64,
    pub df: f64,
}

impl LogTest {
    /// Paired: `d` holds one ln(candidate / baseline) per pair. None below
    /// two pairs (no spread to estimate).
    pub fn paired(d: &[f64]) -> Option<LogTest> {
        let n = d.len();
        if n < 2 || d.iter().any(|x| !x.is_finite()) {
            return None;
        }
        Some(LogTest {
            estimate: mean(d),
            std_error: sample_sd(d) / (n as f64).sqrt(),
            df: (n - 1) as f64,
        })
    }

    /// Unpaired (Welch): the log values of each side. The degrees of freedom
    /// are Welch-Satterthwaite's. None when a side has fewer than two.
    pub fn welch(baseline: &[f64], candidate: &[f64]) -> Option<LogTest> {
        let (nb, nc) = (baseline.len(), candidate.len());
        let all_finite = baseline.iter().chain(candidate).all(|x| x.is_finite());
        if nb < 2 || nc < 2 || !all_finite {
            return None;
        }
        let vb = sample_sd(baseline).powi(2) / nb as f64;
        let vc = sample_sd(candidate).powi(2) / nc as f64;
        let se2 = vb + vc;
        let df = se2.powi(2) / (vb.powi(2) / (nb - 1) as f64 + vc.powi(2) / (nc - 1) as f64);
        Some(LogTest {
            estimate: mean(candidate) - mean(baseline),
            std_error: se2.sqrt(),
            // No spread on either side: df is 0/0; the tests below then
            // decide by the estimate alone and never read it.
            df: if df.is_finite() {
                df
            } else {
                (nb + nc - 2) as f64
            },
        })
    }

    /// The two-sided `confidence` interval of the mean log-ratio.
    pub fn interval(&self, confidence: f64) -> (f64, f64) {
        let half = t_quantile(1.0 - (1.0 - confidence) / 2.0, self.df) * self.std_error;
        let half = if self.std_error == 0.0 { 0.0 } else { half };
        (self.estimate - half, self.estimate + half)
    }

    /// One-sided p-value for "the mean log-ratio is above `bound`".
    pub fn p_above(&self, bound: f64) -> f64 {
        if self.std_error == 0.0 {
            return if self.estimate > bound { 0.0 } else { 1.0 };
        }
        1.0 - t_cdf((self.estimate - bound) / self.std_error, self.df)
    }

    /// One-sided p-value for "the mean log-ratio is below `bound`".
    pub fn p_below(&self, bound: f64) -> f64 {
        if self.std_error == 0.0 {
            return if self.estimate < bound { 0.0 } else { 1.0 };
        }
        t_cdf((self.estimate - bound) / self.std_error, self.df)
    }

    /// Two one-sided tests (TOST): p-value for "the mean log-ratio lies
    /// within (-delta, delta)", the larger of the two one-sided p-values.
    pub fn p_equivalent(&self, delta: f64) -> f64 {
        self.p_above(-delta).max(self.p_below(delta))
    }
}

/// Holm's step-down adjustment: adjusted p-values in the input's order,
/// controlling the family-wise error rate over all of them.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut adjusted = vec![0.0; m];
    let mut running = 0.0_f64;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((m - rank) as f64 * p[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

/// The smallest two-sided p-value an exact Wilcoxon signed-rank test can
/// give with `n` pairs (every difference of one sign): 2 / 2^n. With 3 pairs
/// it is 0.25, so such a test can never find anything at 0.05; the method
/// says so and does not use it.
pub fn wilcoxon_smallest_p(n: usize) -> f64 {
    (2.0 * 0.5_f64.powi(n.min(1100) as i32)).min(1.0)
}
