//! Variants: one lab run under several settings (the machine, the data, a
//! tool's flags), each a complete run of its own. The host writes what each
//! variant changed beside its evidence; the report reads it back to set the
//! variants side by side. The agent never sees a variant: it runs a plan.
//!
//! Tools have variants too, in a lab's `tools:` list: `restic@0.14.0` beside
//! `restic`, each with its own pinned artifact or flags. They are tools of
//! one plan, so they run interleaved in every cycle; [`tool_base`] names the
//! tool they are variants of.

use serde::{Deserialize, Serialize};

/// Where a run with variants keeps them: `<run>/variants/<name>/`, each a
/// complete run folder (`raw/`, summaries).
pub const VARIANTS_DIR: &str = "variants";
/// `<run>/variants.json`: every variant of the run, in the lab's order
/// ([`VariantsIndex`]).
pub const VARIANTS_INDEX: &str = "variants.json";
/// `<run>/variants/<name>/raw/bench-error.txt`: why `bench` could not run a
/// variant (or not to its end), for a variant without its evidence.
pub const BENCH_ERROR_FILE: &str = "bench-error.txt";
/// `<run>/variants/<name>/raw/variant.json`: what this variant changed
/// ([`VariantRecord`]), beside the evidence it explains.
pub const VARIANT_FILE: &str = "variant.json";

/// One variant as the evidence states it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantRecord {
    /// Unique in the run; the folder's name.
    pub name: String,
    /// The lab's words for it, if any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// For a matrix, the value taken on each axis, in the matrix's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub axes: Vec<AxisValue>,
    /// Every setting that differs from the lab as written. Empty for a
    /// variant that is the lab itself (a baseline).
    pub changes: Vec<Change>,
    /// Variants with the same machine share one boot; a new machine shape
    /// gets one of its own (the boot is never timed). 0-based, in run order.
    pub boot: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AxisValue {
    pub axis: String,
    pub value: String,
}

/// One setting a variant changed: `vm.memory` from `3GiB` to `512MiB`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// The lab field, as a path: `vm.memory`, `tools.kopia.args.restore`.
    pub field: String,
    /// The lab's own value, as the lab would write it (`-` when unset).
    pub from: String,
    pub to: String,
}

impl VariantRecord {
    /// Its changes in one line, each `field from -> to` (`quote` wraps the
    /// field, e.g. in backticks for Markdown); "the lab as written" for a
    /// variant that changes nothing.
    pub fn changes_text(&self, quote: &str) -> String {
        if self.changes.is_empty() {
            return "the lab as written".into();
        }
        self.changes
            .iter()
            .map(|c| format!("{quote}{}{quote} {} -> {}", c.field, c.from, c.to))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// `variants.json`: the run's variants, in the order the lab lists them
/// (which is also the order a report shows them in).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantsIndex {
    pub run_id: String,
    pub variants: Vec<VariantRecord>,
}

/// A name that becomes a folder or file name: 1-64 letters, digits, `.`,
/// `_` or `-`, not starting with `.` or `-`.
pub fn is_plain_name(name: &str) -> bool {
    is_plain_within(name, 64)
}

/// A run id: plain, and up to 128 long (a lab's name, a time, a digest,
/// and for a variant's run the variant's name).
pub fn is_run_id(id: &str) -> bool {
    is_plain_within(id, 128)
}

fn is_plain_within(name: &str, max: usize) -> bool {
    (1..=max).contains(&name.len())
        && !name.starts_with(['.', '-'])
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// A tool's name: a plain name, or `base@variant` with both parts plain
/// (`restic@0.14.0`). One rule for the lab and the agent.
pub fn is_tool_name(name: &str) -> bool {
    match name.split_once('@') {
        Some((base, variant)) => is_plain_name(base) && is_plain_name(variant),
        None => is_plain_name(name),
    }
}

/// The tool a tool variant belongs to: `restic` for `restic@0.14.0`, the
/// name itself for a tool without `@`.
pub fn tool_base(name: &str) -> &str {
    name.split_once('@').map_or(name, |(base, _)| base)
}

/// The variant part of a tool's name (`0.14.0` for `restic@0.14.0`).
pub fn tool_variant(name: &str) -> Option<&str> {
    name.split_once('@').map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_split_at_the_first_at_sign() {
        assert_eq!(tool_base("restic@0.14.0"), "restic");
        assert_eq!(tool_variant("restic@0.14.0"), Some("0.14.0"));
        assert_eq!(tool_base("kopia"), "kopia");
        assert_eq!(tool_variant("kopia"), None);
    }

    #[test]
    fn the_tool_name_rule() {
        for good in ["restic", "restic@0.14.0", "borg@zstd22", "a_b.c-d"] {
            assert!(is_tool_name(good), "{good}");
        }
        for bad in [
            "",
            "@x",
            "x@",
            "a@b@c",
            ".x",
            "-x",
            "x@.y",
            "a b",
            "a/b",
            &"x".repeat(65),
        ] {
            assert!(!is_tool_name(bad), "{bad}");
        }
    }

    #[test]
    fn a_record_round_trips() {
        let r = VariantRecord {
            name: "512m".into(),
            description: String::new(),
            axes: vec![AxisValue {
                axis: "memory".into(),
                value: "512m".into(),
            }],
            changes: vec![Change {
                field: "vm.memory".into(),
                from: "3GiB".into(),
                to: "512MiB".into(),
            }],
            boot: 0,
        };
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<VariantRecord>(&json).unwrap(), r);
    }
}
