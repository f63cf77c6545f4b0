//! The comparison's statistics against values computed independently:
//! every expected number below was printed by
//! `tests/data/compare_reference.py` (scipy 1.17.1, statsmodels 0.15.0).

use labrun_report::compare::stats::{LogTest, holm, rsd, t_cdf, t_quantile, wilcoxon_smallest_p};

const MARGIN: f64 = 0.05;

fn close(what: &str, actual: f64, expected: f64, tolerance: f64) {
    let error = (actual - expected).abs() / expected.abs().max(1e-300);
    assert!(
        error <= tolerance,
        "{what}: {actual} but the reference says {expected} (relative error {error:e})"
    );
}

#[test]
fn t_quantiles_match_scipy() {
    for (p, df, expected) in [
        (0.975, 1.0, 12.706204736174694),
        (0.975, 2.0, 4.302652729749462),
        (0.975, 3.0, 3.1824463052837078),
        (0.975, 4.0, 2.7764451051977934),
        (0.975, 9.0, 2.262157162798205),
        (0.975, 29.0, 2.045229642132703),
        (0.975, 3.7, 2.8675207071911895),
        (0.975, 12.25, 2.1738913883920628),
        (0.95, 2.0, 2.9199855803537242),
        (0.05, 5.0, -2.015048373333024),
        (0.9995, 2.0, 31.599054576445365),
    ] {
        close(
            &format!("t.ppf({p}, {df})"),
            t_quantile(p, df),
            expected,
            1e-9,
        );
    }
    assert!(t_quantile(1.0, 3.0).is_nan());
    assert!(t_quantile(0.5, 0.0).is_nan());
}

#[test]
fn t_cdf_matches_scipy() {
    for (x, df, expected) in [
        (0.0, 3.0, 0.5),
        (1.5, 2.0, 0.8638034375544994),
        (-2.1, 4.0, 0.05182664315880109),
        (4.3, 2.0, 0.9749714229414542),
        (12.0, 2.0, 0.9965635331614208),
        (-0.7, 7.3, 0.2528085700931292),
        (2.2, 40.0, 0.983177362206817),
    ] {
        close(&format!("t.cdf({x}, {df})"), t_cdf(x, df), expected, 1e-10);
    }
    assert_eq!(t_cdf(f64::INFINITY, 2.0), 1.0);
    assert_eq!(t_cdf(f64::NEG_INFINITY, 2.0), 0.0);
}

/// ratio, interval, p slower, p faster, p TOST
type Expected = (f64, [f64; 2], f64, f64, f64);

fn check_test(name: &str, t: &LogTest, e: Expected) {
    let delta = (1.0 + MARGIN).ln();
    close(&format!("{name} ratio"), t.estimate.exp(), e.0, 1e-12);
    let (lo, hi) = t.interval(0.95);
    close(&format!("{name} interval low"), lo.exp(), e.1[0], 1e-9);
    close(&format!("{name} interval high"), hi.exp(), e.1[1], 1e-9);
    // One-sided p-values near 1 are compared by their distance to 1.
    let p = |what: &str, actual: f64, expected: f64| {
        if expected > 0.5 {
            close(what, 1.0 - actual, 1.0 - expected, 1e-6);
        } else {
            close(what, actual, expected, 1e-7);
        }
    };
    p(&format!("{name} p slower"), t.p_above(delta), e.2);
    p(&format!("{name} p faster"), t.p_below(-delta), e.3);
    p(&format!("{name} p TOST"), t.p_equivalent(delta), e.4);
}

fn paired(base: &[f64], cand: &[f64]) -> LogTest {
    let d: Vec<f64> = base.iter().zip(cand).map(|(b, c)| (c / b).ln()).collect();
    LogTest::paired(&d).unwrap()
}

#[test]
fn paired_tests_match_scipy() {
    let cases: [(&str, &[f64], &[f64], Expected); 4] = [
        (
            "ten_percent_slower",
            &[100.0, 102.0, 98.5, 101.2, 99.7],
            &[110.3, 111.9, 107.2, 112.0, 109.1],
            (
                1.097858116305626,
                [1.0889119852592553, 1.106877745726321],
                5.5701011312293185e-05,
                0.9999994474435314,
                0.9999442989886878,
            ),
        ),
        (
            "same",
            &[50.1, 49.8, 50.4, 50.0, 49.9, 50.2],
            &[50.3, 49.7, 50.6, 50.1, 50.0, 50.1],
            (
                1.0013242770864412,
                [0.9984672703176234, 1.0041894588730285],
                0.999999933563842,
                0.9999999493198545,
                6.64361580707986e-08,
            ),
        ),
        (
            "three_pairs",
            &[10.0, 11.0, 12.0],
            &[10.5, 11.2, 12.9],
            (
                1.047468649775047,
                [0.9789544456572484, 1.120777965847972],
                0.5539620105552039,
                0.9868879515617027,
                0.44603798944479617,
            ),
        ),
        (
            "faster",
            &[20.0, 21.5, 19.0, 20.4],
            &[17.1, 18.0, 16.4, 17.5],
            (
                0.8532466111625494,
                [0.835448605161974, 0.8714237775514949],
                0.9999642619664884,
                0.00023818728222573492,
                0.9997618127177743,
            ),
        ),
    ];
    for (name, base, cand, expected) in cases {
        check_test(name, &paired(base, cand), expected);
    }
    assert_eq!(LogTest::paired(&[0.1]), None, "one pair has no spread");
}

#[test]
fn welch_matches_scipy() {
    let lb: Vec<f64> = [100.0_f64, 104.0, 97.0, 101.0]
        .iter()
        .map(|v| v.ln())
        .collect();
    let lc: Vec<f64> = [108.0_f64, 115.0, 103.0, 111.0, 109.0]
        .iter()
        .map(|v| v.ln())
        .collect();
    let t = LogTest::welch(&lb, &lc).unwrap();
    close("welch df", t.df, 6.955541197768135, 1e-12);
    check_test(
        "welch",
        &t,
        (
            1.0862006231689585,
            [1.028539595456905, 1.1470941896490807],
            0.09247208098120052,
            0.9996266056887771,
            0.9075279190187995,
        ),
    );
    assert_eq!(LogTest::welch(&lb[..1], &lc), None);
}

#[test]
fn holm_matches_statsmodels() {
    for (p, expected) in [
        (vec![0.01, 0.04, 0.03, 0.005], vec![0.03, 0.06, 0.06, 0.02]),
        (
            vec![0.2, 0.001, 0.5, 0.02, 0.02],
            vec![0.4, 0.005, 0.5, 0.08, 0.08],
        ),
        (vec![0.6], vec![0.6]),
    ] {
        let adjusted = holm(&p);
        assert_eq!(adjusted.len(), expected.len());
        for (a, e) in adjusted.iter().zip(&expected) {
            close(&format!("holm({p:?})"), *a, *e, 1e-12);
        }
    }
    assert!(holm(&[]).is_empty());
}

#[test]
fn relative_standard_deviation_matches_python() {
    close(
        "rsd",
        rsd(&[100.0, 102.0, 98.5, 101.2, 99.7]),
        0.013552490840522116,
        1e-12,
    );
    close("rsd", rsd(&[1.0, 1.5, 0.9]), 0.2836367870880281, 1e-12);
}

#[test]
fn the_smallest_wilcoxon_p_matches_scipy() {
    for (n, expected) in [
        (3, 0.25),
        (4, 0.125),
        (5, 0.0625),
        (6, 0.03125),
        (10, 0.001953125),
    ] {
        close(
            &format!("wilcoxon n={n}"),
            wilcoxon_smallest_p(n),
            expected,
            1e-12,
        );
    }
}
