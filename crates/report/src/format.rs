//! How figures read in the summaries, in the style of the published
//! comparison: "140 s, range 122-168", "7.2 s, range 6.9-7.5", "3.86 GB",
//! "455 MiB". The precision is chosen from the median and kept for the
//! range, so the three numbers of one figure always line up.

use crate::stats::Stat;

/// Seconds: whole seconds from 10 s up, one decimal below.
pub fn secs(v: f64) -> String {
    format!("{} s", number(v, secs_decimals(v)))
}

/// "140 s, range 122-168"; a single cycle has no range.
pub fn secs_range(s: &Stat) -> String {
    let d = secs_decimals(s.median);
    with_range(s, "s", d, 1.0)
}

fn secs_decimals(v: f64) -> usize {
    if (v * 10.0).round() / 10.0 < 10.0 {
        1
    } else {
        0
    }
}

/// MiB: whole MiB from 10 MiB up, one decimal below.
pub fn mib(v: f64) -> String {
    format!("{} MiB", number(v, secs_decimals(v)))
}

pub fn mib_range(s: &Stat) -> String {
    with_range(s, "MiB", secs_decimals(s.median), 1.0)
}

/// A number of seconds without its unit, for cells whose header names it.
pub fn secs_value(v: f64) -> String {
    number(v, secs_decimals(v))
}

/// A number of MiB without its unit, for cells whose header names it.
pub fn mib_value(v: f64) -> String {
    number(v, secs_decimals(v))
}

/// A size in bytes, as decimal units: GB (10^9, two decimals) as published;
/// below 0.1 GB, MB (10^6, one decimal), so small-scale runs still show
/// something; below 0.1 MB, kB.
pub fn bytes(v: f64) -> String {
    let (unit, div) = size_unit(v);
    format!("{} {unit}", number(v / div, size_decimals(unit)))
}

pub fn bytes_range(s: &Stat) -> String {
    let (unit, div) = size_unit(s.median);
    with_range(s, unit, size_decimals(unit), 1.0 / div)
}

fn size_unit(v: f64) -> (&'static str, f64) {
    let a = v.abs();
    if a >= 1e8 {
        ("GB", 1e9)
    } else if a >= 1e5 {
        ("MB", 1e6)
    } else {
        ("kB", 1e3)
    }
}

fn size_decimals(unit: &str) -> usize {
    if unit == "GB" { 2 } else { 1 }
}

fn with_range(s: &Stat, unit: &str, decimals: usize, factor: f64) -> String {
    let median = number(s.median * factor, decimals);
    let (min, max) = (
        number(s.min * factor, decimals),
        number(s.max * factor, decimals),
    );
    // One cycle, or cycles equal at this precision: "range 3.86-3.86" says nothing.
    if s.n < 2 || min == max {
        return format!("{median} {unit}");
    }
    format!("{median} {unit}, range {min}-{max}")
}

/// Fixed decimals without a negative zero.
fn number(v: f64, decimals: usize) -> String {
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

    fn stat(median: f64, min: f64, max: f64, n: usize) -> Stat {
        Stat {
            median,
            min,
            max,
            n,
        }
    }

    #[test]
    fn seconds_like_the_published_table() {
        assert_eq!(
            secs_range(&stat(140.0, 122.0, 168.0, 3)),
            "140 s, range 122-168"
        );
        assert_eq!(secs_range(&stat(7.2, 6.9, 7.5, 3)), "7.2 s, range 6.9-7.5");
        assert_eq!(
            secs_range(&stat(139.6, 122.4, 168.2, 3)),
            "140 s, range 122-168"
        );
        assert_eq!(secs_range(&stat(7.0, 7.0, 7.0, 1)), "7.0 s");
        assert_eq!(secs(9.96), "10 s");
        assert_eq!(secs(9.94), "9.9 s");
        assert_eq!(secs(0.04), "0.0 s");
    }

    #[test]
    fn precision_follows_the_median() {
        assert_eq!(secs_range(&stat(12.0, 9.4, 14.0, 3)), "12 s, range 9-14");
        assert_eq!(
            secs_range(&stat(9.0, 8.5, 10.6, 3)),
            "9.0 s, range 8.5-10.6"
        );
    }

    #[test]
    fn sizes_in_decimal_units() {
        assert_eq!(bytes(3.86e9), "3.86 GB");
        assert_eq!(bytes(0.21e9), "0.21 GB");
        assert_eq!(bytes(12_345_678.0), "12.3 MB");
        assert_eq!(bytes(4_096.0), "4.1 kB");
        assert_eq!(
            bytes_range(&stat(3.861e9, 3.855e9, 3.87e9, 3)),
            "3.86 GB, range 3.86-3.87"
        );
        assert_eq!(bytes_range(&stat(2.1e8, 2.09e8, 2.12e8, 3)), "0.21 GB");
        assert_eq!(bytes_range(&stat(2.1e8, 2.0e8, 2.2e8, 1)), "0.21 GB");
        assert_eq!(bytes(-1.0), "0.0 kB");
    }

    #[test]
    fn memory_in_mib() {
        assert_eq!(mib(455.4), "455 MiB");
        assert_eq!(mib(7.25), "7.2 MiB");
        assert_eq!(
            mib_range(&stat(117.0, 112.3, 121.8, 3)),
            "117 MiB, range 112-122"
        );
    }
}
