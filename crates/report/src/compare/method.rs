//! The method in words, written into every report: fixed in advance, with
//! the comparison's own margin, alpha and noise threshold filled in.

use super::model::Design;
use super::settings::Settings;
use super::stats::wilcoxon_smallest_p;

pub fn text(design: Design, s: &Settings, max_pairs: usize) -> String {
    let margin = percent(s.margin);
    let upper = 1.0 + s.margin;
    let lower = 1.0 / upper;
    let confidence = percent(s.confidence());
    let design_text = match design {
        Design::Paired => format!(
            "Paired: baseline and candidate ran interleaved in one run (their order rotates from \
             cycle to cycle, on the same machine); a pair is a cycle in which both have an ok \
             record of the phase. Each pair gives d = ln(candidate / baseline); the ratio is \
             exp(mean d), the geometric-mean ratio, with a {confidence} t-interval over the \
             pairs (n - 1 degrees of freedom)."
        ),
        Design::Unpaired => format!(
            "Unpaired: two separate runs, so no cycle pairs with another and the machine's state \
             between runs adds to the spread. The ratio is exp(mean ln candidate - mean ln \
             baseline) with Welch's {confidence} t-interval on the log values \
             (Welch-Satterthwaite degrees of freedom): wider than a paired interval from as \
             many cycles."
        ),
    };
    let rank = match design {
        Design::Paired => format!(
            " A rank test is not used: with n pairs an exact Wilcoxon signed-rank test cannot go \
             below p = 2/2^n, so with 3 pairs (p >= 0.25) it can never reach 0.05; with this \
             comparison's most pairs ({max_pairs}) its smallest p is {:.3}.",
            wilcoxon_smallest_p(max_pairs)
        ),
        Design::Unpaired => String::new(),
    };
    let sequential = if s.looks > super::sequential::FIXED {
        format!(
            " Sequential: pairs were added one at a time until decided, so the verdicts are \
             judged at {looks} looks fixed in advance (the lab's own cycles, then one per added \
             pair up to the cap), each at alpha / {looks} (its p-value times {looks}, its \
             interval at {confidence}): stopping at the first decided look keeps the error rate \
             at alpha.",
            looks = s.looks
        )
    } else {
        String::new()
    };
    format!(
        "{design_text} Margin m = {margin}: `slower` when a one-sided t-test finds the ratio \
         above 1+m ({upper:.4}), `faster` when below 1/(1+m) ({lower:.4}), `no change` when two \
         one-sided tests (TOST) find it within [{lower:.4}, {upper:.4}], `inconclusive` \
         otherwise. Each row is tested for the region its estimate lies in, and the p-values of \
         all tested rows (every phase x figure) are adjusted together with Holm's method, so the \
         family-wise error of the whole comparison is at most alpha = {alpha}. The intervals \
         shown are not adjusted. Memory and sizes say `larger` / `smaller` for worse / better. \
         Sizes (repository size after a step, growth after the incremental backup) are \
         deterministic: compared exactly, the ratio of the two medians over cycles against the \
         margin (`no change` only when equal within it), with no interval and no test. A row \
         with one pair, or with no spread to estimate, is `inconclusive`.{rank} Noise: a side \
         whose relative standard deviation exceeds {noise} (the Phoronix Test Suite's \
         threshold) is flagged `~`.{sequential} Exit status 1 when any row is `slower` or `larger`.",
        alpha = s.alpha,
        noise = percent(s.noise),
    )
}

pub fn percent(fraction: f64) -> String {
    let p = fraction * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("{}%", p.round())
    } else {
        format!("{}%", (p * 100.0).round() / 100.0)
    }
}
