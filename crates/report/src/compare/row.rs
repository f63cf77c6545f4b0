//! One row of a comparison from each side's values: a timed figure's
//! log-ratios, interval and test, or a size's exact ratio. Holm's
//! adjustment and the final verdicts come once every row is made.

use super::build::Key;
use super::figure::Figure;
use super::model::{Design, Row, SideFigure, TestResult, Verdict};
use super::settings::Settings;
use super::stats::{LogTest, mean, rsd};
use super::verdict::{exact, hypothesis};
use labrun_evidence::Step;
use std::collections::BTreeMap;

fn empty_row(design: Design) -> Row {
    Row {
        phase: Step::BACKUP_FULL,
        figure: Figure::WallTime,
        unit: String::new(),
        cpu_source: None,
        baseline: side_figure(&[], false, 0.0),
        candidate: side_figure(&[], false, 0.0),
        pairs: (design == Design::Paired).then_some(0),
        ratio: None,
        interval: None,
        test: None,
        verdict: Verdict::Inconclusive,
        verdict_word: String::new(),
        conclusive: false,
        note: None,
        noise_floor: None,
    }
}

fn side_figure(values: &[f64], geometric: bool, noise: f64) -> SideFigure {
    let center = if values.is_empty() {
        None
    } else if geometric {
        let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
        Some(mean(&logs).exp())
    } else {
        Some(median(values))
    };
    let rsd = (values.len() >= 2)
        .then(|| rsd(values))
        .filter(|r| r.is_finite());
    SideFigure {
        n: values.len(),
        center,
        rsd,
        noisy: rsd.is_some_and(|r| r > noise),
    }
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The values a timed figure leaves out, in words (`baseline cycle 2
/// (-5)`): a zero or negative value has no logarithm, so no ratio. `None`
/// when every value is kept.
pub(super) fn left_out(b: &BTreeMap<Key, f64>, c: &BTreeMap<Key, f64>) -> Option<String> {
    let dropped: Vec<String> = [("baseline", b), ("candidate", c)]
        .into_iter()
        .flat_map(|(side, m)| {
            m.iter().filter(|(_, v)| **v <= 0.0).map(move |(k, v)| {
                let commit = k.1.map(|i| format!(" commit {i}")).unwrap_or_default();
                format!("{side} cycle {}{commit} ({v})", k.0)
            })
        })
        .collect();
    (!dropped.is_empty()).then(|| {
        format!(
            "{} value(s) left out, a time must be above zero to have a ratio: {}",
            dropped.len(),
            dropped.join(", ")
        )
    })
}

/// A timed figure: log-ratios, an interval and a test (Holm's adjustment
/// and the verdict come after every row is made).
pub(super) fn timed_row(
    design: Design,
    b: &BTreeMap<Key, f64>,
    c: &BTreeMap<Key, f64>,
    settings: &Settings,
) -> Row {
    let mut row = empty_row(design);
    let (bv, cv, test, log_ratio) = match design {
        Design::Paired => {
            let pairs: Vec<(f64, f64)> = b
                .iter()
                .filter_map(|(k, &bv)| Some((bv, *c.get(k)?)))
                .filter(|(bv, cv)| *bv > 0.0 && *cv > 0.0)
                .collect();
            let d: Vec<f64> = pairs.iter().map(|(b, c)| (c / b).ln()).collect();
            row.pairs = Some(pairs.len());
            let bv: Vec<f64> = pairs.iter().map(|p| p.0).collect();
            let cv: Vec<f64> = pairs.iter().map(|p| p.1).collect();
            let log_ratio = (!d.is_empty()).then(|| mean(&d));
            (bv, cv, LogTest::paired(&d), log_ratio)
        }
        Design::Unpaired => {
            let bv: Vec<f64> = b.values().copied().filter(|v| *v > 0.0).collect();
            let cv: Vec<f64> = c.values().copied().filter(|v| *v > 0.0).collect();
            let lb: Vec<f64> = bv.iter().map(|v| v.ln()).collect();
            let lc: Vec<f64> = cv.iter().map(|v| v.ln()).collect();
            let log_ratio = (!lb.is_empty() && !lc.is_empty()).then(|| mean(&lc) - mean(&lb));
            (bv, cv, LogTest::welch(&lb, &lc), log_ratio)
        }
    };
    row.baseline = side_figure(&bv, true, settings.noise);
    row.candidate = side_figure(&cv, true, settings.noise);
    row.ratio = log_ratio.map(f64::exp);
    match test {
        Some(t) => {
            let (lo, hi) = t.interval(settings.confidence());
            row.interval = Some([lo.exp(), hi.exp()]);
            let (hypothesis, p) = hypothesis(&t, settings.log_margin());
            let p = super::sequential::spend(p, settings.looks);
            row.test = Some(TestResult {
                hypothesis,
                p,
                p_holm: p,
                df: t.df,
            });
        }
        None => {
            row.note = Some(match (design, row.pairs) {
                (Design::Paired, Some(0)) => {
                    "no pair: not both sides have an ok record of this figure in one cycle".into()
                }
                (Design::Paired, _) => "one pair: no spread to judge by".into(),
                (Design::Unpaired, _) => {
                    "fewer than two values on a side: no spread to judge by".into()
                }
            });
        }
    }
    if let Some(why) = left_out(b, c) {
        row.note = Some(match row.note.take() {
            Some(n) => format!("{n}; {why}"),
            None => why,
        });
    }
    row
}

/// A size: the ratio of the medians, judged by the margin alone.
pub(super) fn exact_row(
    design: Design,
    b: &BTreeMap<Key, f64>,
    c: &BTreeMap<Key, f64>,
    settings: &Settings,
) -> Row {
    let mut row = empty_row(design);
    let bv: Vec<f64> = b.values().copied().collect();
    let cv: Vec<f64> = c.values().copied().collect();
    if design == Design::Paired {
        row.pairs = Some(b.keys().filter(|k| c.contains_key(k)).count());
    }
    row.baseline = side_figure(&bv, false, settings.noise);
    row.candidate = side_figure(&cv, false, settings.noise);
    let (Some(base), Some(cand)) = (row.baseline.center, row.candidate.center) else {
        row.note = Some("recorded on one side only".into());
        return row;
    };
    if base > 0.0 && cand >= 0.0 {
        let ratio = cand / base;
        row.ratio = Some(ratio);
        row.verdict = exact(ratio, settings.margin);
    } else if base == cand {
        row.ratio = Some(1.0);
        row.verdict = Verdict::NoChange;
    } else {
        row.note = Some("a zero or negative baseline has no ratio".into());
    }
    row
}
