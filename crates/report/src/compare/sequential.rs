//! The sequential rule: how a comparison is judged when `bench
//! --until-conclusive` adds pairs one at a time and stops as soon as every
//! question it asked is decided.
//!
//! Repeating the fixed-n t-test after every added pair gives the noise one
//! more chance to cross the line at every look, so the error rate grows with
//! the number of looks. The rule here fixes the number of looks before the
//! data is seen (the lab's own cycles, then one look per added pair up to the
//! cap: `looks = cap + 1`) and spends alpha evenly over them (Bonferroni
//! alpha-spending): every look's test runs at `alpha / looks`, its interval
//! at confidence `1 - alpha / looks`. By the union bound the chance that any
//! look says `slower`, `faster` or `no change` wrongly is at most `alpha`,
//! however the looks depend on each other, so stopping at the first decided
//! look keeps the stated rate. It is conservative (a group-sequential
//! boundary such as Pocock's is tighter) but it needs no assumption beyond
//! the t-test's own, and every consumer of a row (Holm across rows, the
//! two-ends bisect rule, trend verdicts) takes its p-value and interval as
//! they are.

use super::model::{Comparison, Row, Verdict};
use super::settings::Settings;
use super::stats::{LogTest, t_quantile};
use super::verdict::hypothesis;

/// The looks of a fixed-n comparison: one, judged exactly as before.
pub const FIXED: u32 = 1;

/// The most pairs `--until-conclusive` adds without a number, whatever the
/// noise asks for: beyond it a host is too noisy for the margin.
pub const CEILING: u32 = 50;

/// The power the cap is sized for: the chance that a question whose truth
/// lies a margin away from the line is decided within the cap.
pub const POWER: f64 = 0.8;

/// A look's one-sided p-value under the rule: the fixed-n p-value times the
/// number of looks (Bonferroni's spending), at most 1.
pub fn spend(p: f64, looks: u32) -> f64 {
    (p * f64::from(looks.max(FIXED))).min(1.0)
}

/// A look's interval confidence under the rule, so that every look's
/// interval holds at once with `confidence`: 95% over 21 looks is each
/// look at 99.76%.
pub fn confidence(confidence: f64, looks: u32) -> f64 {
    1.0 - (1.0 - confidence) / f64::from(looks.max(FIXED))
}

/// The cap: how many pairs to add after the lab's `have` pairs so that a
/// question whose truth lies one margin from the line (`no change` when
/// there is none, `slower` for a step of twice the margin) is decided with
/// probability [`POWER`] at one-sided level `alpha / looks`, given the
/// spread `sd` of the paired log-ratios. The smallest such cap up to
/// `ceiling`; `None` when even the ceiling is not enough (or the spread is
/// unknown), which the caller says in words.
pub fn pairs_needed(sd: f64, log_margin: f64, alpha: f64, have: u32, ceiling: u32) -> Option<u32> {
    if !(sd.is_finite() && sd >= 0.0 && log_margin > 0.0) {
        return None;
    }
    (0..=ceiling).find(|&cap| {
        let n = have + cap;
        if n < 2 {
            return false;
        }
        let df = f64::from(n - 1);
        let z = t_quantile(1.0 - alpha / f64::from(cap + 1), df) + t_quantile(POWER, df);
        let needed = (z * sd / log_margin).powi(2);
        f64::from(n) >= needed
    })
}

/// The spread (standard deviation) of a paired row's log-ratios, read back
/// from its interval: half its log width is the t quantile times sd/sqrt(n),
/// the row's own arithmetic undone. None for a row without a test.
pub fn spread(row: &Row, settings: &Settings) -> Option<f64> {
    let (interval, test, n) = (row.interval?, row.test.as_ref()?, row.pairs?);
    let half = (interval[1].ln() - interval[0].ln()) / 2.0;
    let q = t_quantile(1.0 - (1.0 - settings.confidence()) / 2.0, test.df);
    let sd = half / q * (n as f64).sqrt();
    sd.is_finite().then_some(sd)
}

/// What the noise of a run needs: for every open (inconclusive, tested)
/// row of `comparisons`, the pairs [`pairs_needed`] asks for beyond the
/// row's own, the most of them. `Ok(None)` when no row is open; `Err(())`
/// when some row needs more than `ceiling` (or has no spread to read).
#[allow(clippy::result_unit_err)]
pub fn needed(comparisons: &[Comparison], ceiling: u32) -> Result<Option<u32>, ()> {
    let mut most = None;
    for c in comparisons {
        let s = &c.settings;
        for row in c.inconclusive().filter(|r| r.test.is_some()) {
            let have = u32::try_from(row.pairs.unwrap_or(0)).unwrap_or(u32::MAX);
            let sd = spread(row, s).ok_or(())?;
            let cap = pairs_needed(sd, s.log_margin(), s.alpha, have, ceiling).ok_or(())?;
            most = Some(most.map_or(cap, |m: u32| m.max(cap)));
        }
    }
    Ok(most)
}

/// One row's verdict at one look, from its paired log-ratios so far: what
/// a comparison of a single row says (Holm over one row is the row itself).
/// With `settings.looks == 1` it is the fixed-n test, which, repeated after
/// every added pair, is what this rule replaces.
pub fn look(d: &[f64], settings: &Settings) -> Verdict {
    let Some(test) = LogTest::paired(d) else {
        return Verdict::Inconclusive;
    };
    let (verdict, p) = hypothesis(&test, settings.log_margin());
    if spend(p, settings.looks) <= settings.alpha {
        verdict
    } else {
        Verdict::Inconclusive
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_look_is_the_fixed_test() {
        assert_eq!(spend(0.03, FIXED), 0.03);
        assert_eq!(confidence(0.95, FIXED), 0.95);
        assert_eq!(spend(0.03, 21), 0.63);
        assert_eq!(spend(0.2, 21), 1.0);
        assert!((confidence(0.95, 21) - (1.0 - 0.05 / 21.0)).abs() < 1e-15);
    }
}
