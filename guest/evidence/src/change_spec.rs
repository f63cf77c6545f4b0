//! The seeded change of any tree, as a lab writes it:
//! `change: {fraction: 0.05, seed: 2}`. What the change does with these two
//! numbers is `labrun_dataset::tree_change`'s; this is only the input.

use serde::{Deserialize, Serialize};

/// How much of a tree a change writes, and which change it is: the same
/// (tree, spec) is the same change on any machine.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChangeSpec {
    /// Share of the tree's bytes the change writes, in (0, 1].
    #[serde(default = "ChangeSpec::default_fraction")]
    pub fraction: f64,
    #[serde(default = "ChangeSpec::default_seed")]
    pub seed: u64,
}

impl ChangeSpec {
    /// The published change's 5%.
    pub const DEFAULT_FRACTION: f64 = 0.05;
    /// The published protocol's change seed.
    pub const DEFAULT_SEED: u64 = 2;

    fn default_fraction() -> f64 {
        Self::DEFAULT_FRACTION
    }

    fn default_seed() -> u64 {
        Self::DEFAULT_SEED
    }

    /// Refuses a fraction outside (0, 1] (or not a number), naming it.
    pub fn validate(&self) -> Result<(), String> {
        if self.fraction.is_finite() && self.fraction > 0.0 && self.fraction <= 1.0 {
            Ok(())
        } else {
            Err(format!(
                "change fraction {} is not in (0, 1]: write the share of the tree's bytes \
                 to change, e.g. `fraction: 0.05` for 5%",
                self.fraction
            ))
        }
    }
}

impl Default for ChangeSpec {
    fn default() -> ChangeSpec {
        ChangeSpec {
            fraction: Self::DEFAULT_FRACTION,
            seed: Self::DEFAULT_SEED,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_fill_what_a_lab_leaves_out() {
        let spec: ChangeSpec = serde_json::from_str("{}").unwrap();
        assert_eq!(spec, ChangeSpec::default());
        assert_eq!((spec.fraction, spec.seed), (0.05, 2));
        let spec: ChangeSpec = serde_json::from_str(r#"{"fraction": 0.2}"#).unwrap();
        assert_eq!((spec.fraction, spec.seed), (0.2, 2));
        let spec: ChangeSpec = serde_json::from_str(r#"{"seed": 9}"#).unwrap();
        assert_eq!((spec.fraction, spec.seed), (0.05, 9));
    }

    #[test]
    fn unknown_fields_are_refused() {
        let err = serde_json::from_str::<ChangeSpec>(r#"{"fracton": 0.1}"#).unwrap_err();
        assert!(err.to_string().contains("fracton"), "{err}");
    }

    #[test]
    fn fraction_is_validated() {
        for fraction in [0.0, -0.1, 1.01, f64::NAN, f64::INFINITY] {
            let err = ChangeSpec { fraction, seed: 1 }.validate().unwrap_err();
            assert!(err.contains("(0, 1]"), "{err}");
        }
        for fraction in [1e-9, 0.05, 1.0] {
            assert!(
                ChangeSpec { fraction, seed: 1 }.validate().is_ok(),
                "{fraction}"
            );
        }
    }
}
