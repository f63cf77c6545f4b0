//! Median with min-max range over cycles: the only statistic a summary shows.
//! Three cycles is too few for a standard deviation to mean much; the range
//! shows every cycle's spread honestly.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stat {
    /// For an even number of values, the mean of the two middle ones.
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// How many values (cycles) it was made from.
    pub n: usize,
}

impl Stat {
    /// None when there is no finite value (non-finite values are ignored:
    /// they cannot come from a measurement).
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Stat> {
        let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Stat {
            median,
            min: v[0],
            max: v[n - 1],
            n,
        })
    }

    /// The same statistic with every figure scaled (unit changes).
    pub fn scaled(self, factor: f64) -> Stat {
        Stat {
            median: self.median * factor,
            min: self.min * factor,
            max: self.max * factor,
            n: self.n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_count_takes_the_middle_value() {
        let s = Stat::of([168.0, 122.0, 140.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (140.0, 122.0, 168.0, 3));
    }

    #[test]
    fn even_count_takes_the_mean_of_the_two_middle_values() {
        let s = Stat::of([4.0, 1.0, 3.0, 10.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (3.5, 1.0, 10.0, 4));
        let two = Stat::of([13.0, 15.0]).unwrap();
        assert_eq!(two.median, 14.0);
    }

    #[test]
    fn single_value_and_empty() {
        let s = Stat::of([7.2]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (7.2, 7.2, 7.2, 1));
        assert_eq!(Stat::of([]), None);
        assert_eq!(Stat::of([f64::NAN, f64::INFINITY]), None);
        assert_eq!(Stat::of([f64::NAN, 2.0]).unwrap().n, 1);
    }

    #[test]
    fn scaling_keeps_the_count() {
        let s = Stat::of([1024.0, 2048.0]).unwrap().scaled(1.0 / 1024.0);
        assert_eq!((s.median, s.min, s.max, s.n), (1.5, 1.0, 2.0, 2));
    }
}
