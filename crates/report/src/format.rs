//! How figures read in the summaries, in the style of the published
//! comparison: "140 s, range 122-168", "7.2 s, range 6.9-7.5", "3.86 GB",
//! "455 MiB". The unit and precision are chosen from the median and kept for
//! the range, so the three numbers of one figure always line up. Sizes and
//! durations follow the one formatter every display uses
//! ([`labrun_evidence::human`]).

use crate::stats::Stat;
use labrun_evidence::human;

/// Seconds: whole seconds from 10 s up, one decimal below, ms under 1 s.
pub fn secs(v: f64) -> String {
    human::duration(v)
}

/// "140 s, range 122-168"; a single cycle has no range.
pub fn secs_range(s: &Stat) -> String {
    let (unit, factor, decimals) = human::duration_unit(s.median);
    with_range(s, unit, decimals, factor)
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

/// A size in bytes, in decimal units chosen per value, three significant
/// digits: "3.86 GB", "210 MB", "4.10 kB".
pub fn bytes(v: f64) -> String {
    human::bytes(v)
}

pub fn bytes_range(s: &Stat) -> String {
    let (unit, div) = human::size_unit(s.median);
    let decimals = if unit == "B" {
        0
    } else {
        human::sig3_decimals(s.median / div)
    };
    with_range(s, unit, decimals, 1.0 / div)
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
    human::fixed(v, decimals)
}

/// "borg cycle 1 restore" ("cycle 0 generate" for a run-wide step).
pub fn step_name(r: &labrun_evidence::StepRecord) -> String {
    if r.tool.is_empty() {
        format!("cycle {} {}", r.cycle, r.step)
    } else {
        format!("{} cycle {} {}", r.tool, r.cycle, r.step)
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
        assert_eq!(secs(0.04), "40 ms");
        assert_eq!(
            secs_range(&stat(0.04, 0.035, 0.048, 3)),
            "40 ms, range 35-48"
        );
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
        assert_eq!(bytes(0.21e9), "210 MB");
        assert_eq!(bytes(12_345_678.0), "12.3 MB");
        assert_eq!(bytes(4_096.0), "4.10 kB");
        assert_eq!(
            bytes_range(&stat(3.861e9, 3.855e9, 3.87e9, 3)),
            "3.86 GB, range 3.86-3.87"
        );
        assert_eq!(
            bytes_range(&stat(2.1e8, 2.09e8, 2.12e8, 3)),
            "210 MB, range 209-212"
        );
        assert_eq!(bytes_range(&stat(2.1e8, 2.0e8, 2.2e8, 1)), "210 MB");
        assert_eq!(
            bytes_range(&stat(999.0, 998.0, 1001.0, 3)),
            "999 B, range 998-1001"
        );
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
