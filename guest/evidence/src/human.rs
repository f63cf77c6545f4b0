//! How a size or a duration reads wherever a person reads it: the terminal,
//! the agent's own output, Markdown, charts. One formatter, so a 10 MB
//! repository is never "0.010 GB" in one place and "0.01" in another.
//! Machine-readable outputs (JSON, CSV, records) keep exact numbers.
//!
//! Sizes are decimal (kB = 10^3 bytes, MB = 10^6, GB = 10^9, as the published
//! comparison counts), with the unit chosen per value and three significant
//! digits: "999 B", "1.00 kB", "12.3 MB", "3.86 GB". Durations are whole
//! milliseconds under a second ("40 ms"), then seconds as the published table
//! writes them ("7.2 s", "140 s").

/// Decimal size units, smallest first.
const UNITS: [(&str, f64); 5] = [
    ("B", 1.0),
    ("kB", 1e3),
    ("MB", 1e6),
    ("GB", 1e9),
    ("TB", 1e12),
];

/// A size in bytes, in its own unit, three significant digits.
pub fn bytes(v: f64) -> String {
    let (unit, div) = size_unit(v);
    format!("{} {unit}", size_number(v / div, unit))
}

/// The unit a value (or, for a table or chart, its largest value) reads in:
/// the largest unit the value is at least 1 of, after rounding to three
/// significant digits (999.5 kB reads "1.00 MB").
pub fn size_unit(v: f64) -> (&'static str, f64) {
    let a = if v.is_finite() { v.abs() } else { 0.0 };
    let mut pick = UNITS[0];
    for (unit, div) in UNITS {
        if a >= div {
            pick = (unit, div);
        }
    }
    // Rounding can carry into the next unit: 999.5 kB -> 1000 kB -> 1.00 MB.
    let (unit, div) = pick;
    if size_number(a / div, unit).starts_with("1000")
        && let Some(next) = UNITS.iter().find(|(_, d)| *d > div)
    {
        return *next;
    }
    pick
}

/// `x` (already in `unit`) with three significant digits; bytes are whole.
pub fn size_number(x: f64, unit: &str) -> String {
    if unit == "B" {
        return fixed(x, 0);
    }
    fixed(x, sig3_decimals(x))
}

/// The decimals that give `x` three significant digits (at least 0), as
/// it reads once rounded: 99.95 reads "100", not "100.0".
pub fn sig3_decimals(x: f64) -> usize {
    let by_magnitude = |a: f64| {
        if a < 10.0 {
            2
        } else if a < 100.0 {
            1
        } else {
            0
        }
    };
    let d = by_magnitude(x.abs());
    let rounded: f64 = fixed(x, d).parse().unwrap_or(x);
    d.min(by_magnitude(rounded.abs()))
}

/// A duration: whole milliseconds under a second, then tenths of a second
/// under 10 s, then whole seconds.
pub fn duration(secs: f64) -> String {
    let (unit, factor, decimals) = duration_unit(secs);
    format!("{} {unit}", fixed(secs * factor, decimals))
}

/// Unit, factor from seconds and decimals for a duration (or, for a table
/// cell with a range, for its median).
pub fn duration_unit(secs: f64) -> (&'static str, f64, usize) {
    let a = if secs.is_finite() { secs.abs() } else { 0.0 };
    if (a * 1000.0).round() < 1000.0 {
        ("ms", 1000.0, 0)
    } else if (a * 10.0).round() / 10.0 < 10.0 {
        ("s", 1.0, 1)
    } else {
        ("s", 1.0, 0)
    }
}

/// Fixed decimals without a negative zero.
pub fn fixed(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    if s.starts_with('-') && s[1..].bytes().all(|b| b == b'0' || b == b'.') {
        s[1..].to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_at_the_edges_of_each_unit() {
        let cases: [(f64, &str); 16] = [
            (0.0, "0 B"),
            (1.0, "1 B"),
            (999.0, "999 B"),
            (999.5, "1.00 kB"),
            (1000.0, "1.00 kB"),
            (1234.0, "1.23 kB"),
            (99_950.0, "100 kB"),
            (999_499.0, "999 kB"),
            (999_500.0, "1.00 MB"),
            (1_000_000.0, "1.00 MB"),
            (10_000_000.0, "10.0 MB"),
            (12_345_678.0, "12.3 MB"),
            (210_000_000.0, "210 MB"),
            (3_860_000_000.0, "3.86 GB"),
            (6_096_458_350.0, "6.10 GB"),
            (2.5e12, "2.50 TB"),
        ];
        for (v, want) in cases {
            assert_eq!(bytes(v), want, "{v}");
        }
        assert_eq!(bytes(-1.0), "-1 B");
        assert_eq!(bytes(f64::NAN), "NaN B");
    }

    #[test]
    fn durations_in_ms_under_a_second() {
        let cases: [(f64, &str); 9] = [
            (0.0, "0 ms"),
            (0.0004, "0 ms"),
            (0.04, "40 ms"),
            (0.9994, "999 ms"),
            (0.9996, "1.0 s"),
            (7.2, "7.2 s"),
            (9.96, "10 s"),
            (139.6, "140 s"),
            (3600.0, "3600 s"),
        ];
        for (v, want) in cases {
            assert_eq!(duration(v), want, "{v}");
        }
    }
}
