#!/usr/bin/env python3
"""Reference values for crates/report/tests/compare_stats.rs, computed
independently of labrun with scipy (t distribution, one-sample and Welch
t-tests and their intervals, the exact Wilcoxon signed-rank test) and
statsmodels (Holm's adjustment). Run: `python3 compare_reference.py`
(scipy 1.17.1, statsmodels 0.15.0 when the values were written) and paste
what it prints where the tests say so."""

import math
import statistics

import scipy
import statsmodels
from scipy import stats
from statsmodels.stats.multitest import multipletests

MARGIN = 0.05
DELTA = math.log(1 + MARGIN)


def r(x):
    return repr(float(x))


print(f"// scipy {scipy.__version__}, statsmodels {statsmodels.__version__}")

print("// t quantiles: (p, df, stats.t.ppf(p, df))")
for p, df in [(0.975, 1), (0.975, 2), (0.975, 3), (0.975, 4), (0.975, 9), (0.975, 29),
              (0.975, 3.7), (0.975, 12.25), (0.95, 2), (0.05, 5), (0.9995, 2)]:
    print(f"({r(p)}, {r(df)}, {r(stats.t.ppf(p, df))}),")

print("// t CDF: (x, df, stats.t.cdf(x, df))")
for x, df in [(0.0, 3), (1.5, 2), (-2.1, 4), (4.3, 2), (12.0, 2), (-0.7, 7.3), (2.2, 40)]:
    print(f"({r(x)}, {r(df)}, {r(stats.t.cdf(x, df))}),")

PAIRED = {
    "ten_percent_slower": ([100.0, 102.0, 98.5, 101.2, 99.7], [110.3, 111.9, 107.2, 112.0, 109.1]),
    "same": ([50.1, 49.8, 50.4, 50.0, 49.9, 50.2], [50.3, 49.7, 50.6, 50.1, 50.0, 50.1]),
    "three_pairs": ([10.0, 11.0, 12.0], [10.5, 11.2, 12.9]),
    "faster": ([20.0, 21.5, 19.0, 20.4], [17.1, 18.0, 16.4, 17.5]),
}
print("// paired, margin 5%: name, ratio exp(mean d), 95% interval of the ratio,")
print("// p slower (ttest_1samp(d, ln 1.05, greater)), p faster (d, -ln 1.05, less),")
print("// p TOST (max of ttest_1samp(d, -ln 1.05, greater) and (d, ln 1.05, less))")
for name, (base, cand) in PAIRED.items():
    d = [math.log(c / b) for b, c in zip(base, cand)]
    ci = stats.ttest_1samp(d, 0.0).confidence_interval(0.95)
    slower = stats.ttest_1samp(d, DELTA, alternative="greater").pvalue
    faster = stats.ttest_1samp(d, -DELTA, alternative="less").pvalue
    tost = max(stats.ttest_1samp(d, -DELTA, alternative="greater").pvalue,
               stats.ttest_1samp(d, DELTA, alternative="less").pvalue)
    print(f"{name}: ratio {r(math.exp(statistics.mean(d)))} interval "
          f"[{r(math.exp(ci.low))}, {r(math.exp(ci.high))}] slower {r(slower)} "
          f"faster {r(faster)} tost {r(tost)}")

WELCH = ([100.0, 104.0, 97.0, 101.0], [108.0, 115.0, 103.0, 111.0, 109.0])
lb = [math.log(v) for v in WELCH[0]]
lc = [math.log(v) for v in WELCH[1]]
res = stats.ttest_ind(lc, lb, equal_var=False)
ci = res.confidence_interval(0.95)
shifted = lambda s: [v - s for v in lc]
slower = stats.ttest_ind(shifted(DELTA), lb, equal_var=False, alternative="greater").pvalue
faster = stats.ttest_ind(shifted(-DELTA), lb, equal_var=False, alternative="less").pvalue
tost = max(stats.ttest_ind(shifted(-DELTA), lb, equal_var=False, alternative="greater").pvalue,
           stats.ttest_ind(shifted(DELTA), lb, equal_var=False, alternative="less").pvalue)
print("// Welch on the logs of", WELCH, ": df, ratio, 95% interval, p slower, faster, TOST")
print(f"welch: df {r(res.df)} ratio {r(math.exp(statistics.mean(lc) - statistics.mean(lb)))} "
      f"interval [{r(math.exp(ci.low))}, {r(math.exp(ci.high))}] slower {r(slower)} "
      f"faster {r(faster)} tost {r(tost)}")

print("// Holm (multipletests(p, method='holm')[1])")
for ps in [[0.01, 0.04, 0.03, 0.005], [0.2, 0.001, 0.5, 0.02, 0.02], [0.6]]:
    print(f"{ps} -> {[float(x) for x in multipletests(ps, method='holm')[1]]}")

print("// relative standard deviation (statistics.stdev / statistics.mean)")
for vs in [[100.0, 102.0, 98.5, 101.2, 99.7], [1.0, 1.5, 0.9]]:
    print(f"{vs} -> {r(statistics.stdev(vs) / statistics.mean(vs))}")

print("// smallest two-sided p of an exact Wilcoxon signed-rank test: n -> p")
for n in [3, 4, 5, 6, 10]:
    print(f"{n} -> {r(stats.wilcoxon(list(range(1, n + 1)), method='exact').pvalue)}")
