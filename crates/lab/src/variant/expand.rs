//! From a lab with variants to one complete lab per variant, in the order
//! they run: variants that share a machine shape share a boot, so they run
//! together, the shapes in the order the lab first names them.

use super::VariantSpec;
use super::apply::{Applied, apply, leave_out_tools_without_a_form};
use crate::error::Problem;
use crate::schema::Lab;
use labrun_evidence::variant::{AxisValue, VariantRecord};
use std::collections::BTreeSet;

/// One variant: what the evidence says of it, and the lab it runs.
#[derive(Debug, Clone)]
pub struct Variant {
    pub record: VariantRecord,
    /// The lab with the variant's overrides applied (and no variants).
    pub lab: Lab,
}

impl Lab {
    /// Whether the lab declares variants (`variants:` or `matrix:`).
    pub fn has_variants(&self) -> bool {
        !self.variants.is_empty() || !self.matrix.is_empty()
    }

    /// Every variant as a complete lab, in run order (grouped by boot, each
    /// group in the lab's order). Empty for a lab without variants. Each
    /// variant's lab is validated like a lab file; problems point at the
    /// variant that caused them.
    pub fn variants(&self) -> Result<Vec<Variant>, Vec<Problem>> {
        let mut problems = Vec::new();
        if !self.variants.is_empty() && !self.matrix.is_empty() {
            problems.push(Problem::new(
                "matrix",
                "a lab lists its variants either as `variants:` or as the product of a `matrix:`, not both",
            ));
            return Err(problems);
        }
        // Counted before anything is expanded: each variant is a whole lab.
        if let Err(p) = self.check_variant_count() {
            return Err(vec![p]);
        }
        let own: BTreeSet<(String, String)> = self
            .validate_without_variants()
            .into_iter()
            .map(|p| (p.path, p.message))
            .collect();
        let mut out = Vec::new();
        for (parts, name, axes) in self.combinations(&mut problems) {
            // Overrides apply to the lab as written; its noise floor's copy
            // is made after them, from the tool as the variant runs it.
            let mut lab = self.as_written().into_owned();
            lab.variants.clear();
            lab.matrix = Default::default();
            let mut applied = Applied::default();
            for (at, spec) in &parts {
                apply(&mut lab, spec, at, &mut applied);
            }
            leave_out_tools_without_a_form(&mut lab, &mut applied);
            let at = parts.first().map_or(String::new(), |(at, _)| at.clone());
            problems.append(&mut applied.problems);
            // The lab's own problems are said once, at their own lines.
            for p in lab
                .validate()
                .into_iter()
                .filter(|p| !own.contains(&(p.path.clone(), p.message.clone())))
            {
                problems.push(Problem::new(
                    at.clone(),
                    format!("in variant `{name}`: {}: {}", p.path, p.message),
                ));
            }
            lab.add_noise_floor();
            let description = parts
                .iter()
                .map(|(_, s)| s.description.trim())
                .filter(|d| !d.is_empty())
                .collect::<Vec<_>>()
                .join("; ");
            out.push(Variant {
                record: VariantRecord {
                    name,
                    description,
                    axes,
                    changes: applied.changes,
                    boot: 0,
                },
                lab,
            });
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(in_boot_order(out))
    }

    /// Each variant as its parts (where written, and the spec), its name
    /// and its axis values.
    #[allow(clippy::type_complexity)]
    fn combinations(
        &self,
        problems: &mut Vec<Problem>,
    ) -> Vec<(Vec<(String, &VariantSpec)>, String, Vec<AxisValue>)> {
        let mut names = BTreeSet::new();
        let mut unique = |name: &str, at: &str, problems: &mut Vec<Problem>| {
            if !names.insert(name.to_string()) {
                problems.push(Problem::new(
                    at,
                    format!(
                        "the variant name `{name}` is used twice: variant names must be unique"
                    ),
                ));
            }
        };
        if !self.variants.is_empty() {
            return self
                .variants
                .iter()
                .enumerate()
                .map(|(i, spec)| {
                    let at = format!("variants[{i}]");
                    check_variant_name(&spec.name, &format!("{at}.name"), problems);
                    unique(&spec.name, &format!("{at}.name"), problems);
                    (vec![(at, spec)], spec.name.clone(), Vec::new())
                })
                .collect();
        }
        for axis in &self.matrix.0 {
            if axis.values.is_empty() {
                problems.push(Problem::new(
                    format!("matrix.{}", axis.name),
                    "an axis needs at least one value",
                ));
            }
            let mut seen = BTreeSet::new();
            for (v, spec) in axis.values.iter().enumerate() {
                let at = format!("matrix.{}[{v}].name", axis.name);
                check_variant_name(&spec.name, &at, problems);
                if !seen.insert(spec.name.as_str()) {
                    problems.push(Problem::new(
                        at,
                        format!("`{}` is used twice on the axis `{}`", spec.name, axis.name),
                    ));
                }
            }
        }
        self.matrix
            .product()
            .into_iter()
            .map(|combo| {
                let parts: Vec<(String, &VariantSpec)> = combo
                    .iter()
                    .map(|&(a, v)| {
                        let axis = &self.matrix.0[a];
                        (format!("matrix.{}[{v}]", axis.name), &axis.values[v])
                    })
                    .collect();
                let name = parts
                    .iter()
                    .map(|(_, s)| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join("-");
                unique(&name, "matrix", problems);
                if name.len() > MAX_VARIANT_NAME {
                    problems.push(Problem::new(
                        "matrix",
                        format!(
                            "the variant name `{name}` (each axis's value joined by `-`) is {} characters: at most {MAX_VARIANT_NAME}, so that its run id `<lab>-<time>-<digest>.<variant>` fits 128 and its folder name the file system; shorten the values' names",
                            name.len()
                        ),
                    ));
                }
                let axes = combo
                    .iter()
                    .map(|&(a, v)| AxisValue {
                        axis: self.matrix.0[a].name.clone(),
                        value: self.matrix.0[a].values[v].name.clone(),
                    })
                    .collect();
                (parts, name, axes)
            })
            .collect()
    }
}

/// Most variants a lab may have. Each is a complete run of the lab (3
/// cycles of every tool by default): 256 is already weeks of machine time,
/// and the count is what `check` holds in memory at once.
pub const MAX_VARIANTS: u64 = 256;

/// Longest variant name (a matrix joins its axes' values): a variant's run
/// id is `<lab>-<time>-<digest>.<variant>`, at most 128 characters, and the
/// lab's part takes up to 63 of them.
pub const MAX_VARIANT_NAME: usize = 64;

impl Lab {
    /// The number of variants, from the lab as written (a matrix's product
    /// is multiplied out, never listed), refused above [`MAX_VARIANTS`].
    fn check_variant_count(&self) -> Result<(), Problem> {
        let (at, count) = if self.variants.is_empty() {
            let count = self.matrix.0.iter().try_fold(1u64, |n, axis| {
                n.checked_mul(u64::try_from(axis.values.len()).unwrap_or(u64::MAX))
            });
            ("matrix", count)
        } else {
            ("variants", u64::try_from(self.variants.len()).ok())
        };
        let count = match count {
            Some(n) if n <= MAX_VARIANTS => return Ok(()),
            Some(n) => n.to_string(),
            None => format!("more than {}", u64::MAX),
        };
        let how = if at == "matrix" {
            let sizes: Vec<String> = self
                .matrix
                .0
                .iter()
                .map(|a| a.values.len().to_string())
                .collect();
            format!(" ({} axes: {})", sizes.len(), sizes.join(" x "))
        } else {
            String::new()
        };
        Err(Problem::new(
            at,
            format!(
                "makes {count} variants{how}; a lab runs at most {MAX_VARIANTS} (each variant is a whole run of the lab): split it into several labs, or drop values"
            ),
        ))
    }
}

/// How many VM boots the variants take: one per machine shape.
pub fn boots(variants: &[Variant]) -> u32 {
    variants
        .iter()
        .map(|v| v.record.boot)
        .max()
        .map_or(0, |b| b + 1)
}

/// Variant names become folder names: plain, short, lowercase.
fn check_variant_name(name: &str, at: &str, problems: &mut Vec<Problem>) {
    let ok = (1..=40).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c));
    if !ok {
        problems.push(Problem::new(
            at,
            format!("`{name}` is not a usable variant name: 1-40 characters of a-z, 0-9, `.`, `_`, `-`, starting with a letter or digit"),
        ));
    }
}

/// Stable grouping by machine shape: the first shape the lab names boots
/// first, and every variant of a shape runs in that shape's boot.
fn in_boot_order(variants: Vec<Variant>) -> Vec<Variant> {
    let mut shapes: Vec<crate::schema::Machine> = Vec::new();
    let mut keyed: Vec<(usize, usize, Variant)> = variants
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            let shape = v.lab.machine();
            let boot = shapes.iter().position(|s| *s == shape).unwrap_or_else(|| {
                shapes.push(shape);
                shapes.len() - 1
            });
            (boot, i, v)
        })
        .collect();
    keyed.sort_by_key(|(boot, i, _)| (*boot, *i));
    keyed
        .into_iter()
        .map(|(boot, _, mut v)| {
            v.record.boot = u32::try_from(boot).unwrap_or(u32::MAX);
            v
        })
        .collect()
}
