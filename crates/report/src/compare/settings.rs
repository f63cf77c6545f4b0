//! What a comparison is judged by, fixed before the data is looked at.

use super::error::CompareError;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Relative difference that matters, as a fraction (0.05 = 5%): a ratio
    /// above 1 + margin is worse, below 1 / (1 + margin) better.
    pub margin: f64,
    /// Family-wise error rate over every tested row of one comparison.
    pub alpha: f64,
    /// A side whose relative standard deviation exceeds this fraction is
    /// flagged noisy (0.035, the Phoronix Test Suite's threshold).
    pub noise: f64,
    /// How many times the verdicts are judged: 1 for a fixed-n comparison;
    /// the lab's own cycles plus the cap when `--until-conclusive` adds pairs
    /// one at a time (the sequential rule, `super::sequential`). Left out of
    /// the JSON at 1, so fixed-n comparisons read and write as before.
    #[serde(default = "fixed_looks", skip_serializing_if = "is_fixed")]
    pub looks: u32,
}

fn fixed_looks() -> u32 {
    super::sequential::FIXED
}

fn is_fixed(looks: &u32) -> bool {
    *looks == super::sequential::FIXED
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            margin: 0.05,
            alpha: 0.05,
            noise: 0.035,
            looks: super::sequential::FIXED,
        }
    }
}

impl Settings {
    pub fn validate(&self) -> Result<(), CompareError> {
        let bad = |what: &'static str, value: f64, expected: &'static str| {
            Err(CompareError::Setting {
                what,
                value: value.to_string(),
                expected,
            })
        };
        if !(self.margin > 0.0 && self.margin <= 1.0) {
            return bad(
                "margin",
                self.margin,
                "a percentage above 0 and at most 100%, e.g. 5%",
            );
        }
        if !(self.alpha > 0.0 && self.alpha < 0.5) {
            return bad(
                "alpha",
                self.alpha,
                "a probability between 0 and 0.5, e.g. 0.05",
            );
        }
        if !(self.noise > 0.0 && self.noise.is_finite()) {
            return bad("noise", self.noise, "a percentage above 0, e.g. 3.5%");
        }
        if self.looks < super::sequential::FIXED {
            return bad(
                "looks",
                f64::from(self.looks),
                "at least 1 (the lab's own cycles), plus one per pair that may be added",
            );
        }
        Ok(())
    }

    /// The margin on the log scale: ratios within [1/(1+m), 1+m] are
    /// log-ratios within [-delta, delta].
    pub fn log_margin(&self) -> f64 {
        (1.0 + self.margin).ln()
    }

    /// Confidence of the intervals shown (95% for alpha 0.05), per look
    /// under the sequential rule so that every look's interval holds at once.
    pub fn confidence(&self) -> f64 {
        super::sequential::confidence(1.0 - self.alpha, self.looks)
    }
}

/// Shared with the lab's `compare:` block, which writes margins the same way.
pub use labrun_evidence::compare::parse_fraction;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_names_the_setting() {
        assert!(Settings::default().validate().is_ok());
        let zero = Settings {
            margin: 0.0,
            ..Settings::default()
        };
        assert!(zero.validate().unwrap_err().to_string().contains("margin"));
        let alpha = Settings {
            alpha: 0.5,
            ..Settings::default()
        };
        assert!(alpha.validate().unwrap_err().to_string().contains("alpha"));
        let looks = Settings {
            looks: 0,
            ..Settings::default()
        };
        assert_eq!(
            looks.validate().unwrap_err().to_string(),
            "looks 0 is out of range: use at least 1 (the lab's own cycles), plus one per pair that may be added"
        );
    }

    #[test]
    fn fixed_settings_read_and_write_as_before() {
        let json = serde_json::to_string(&Settings::default()).unwrap();
        assert!(!json.contains("looks"), "{json}");
        let back: Settings = serde_json::from_str(&json).unwrap();
        assert_eq!(back, Settings::default());
    }
}
