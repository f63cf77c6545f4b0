//! `matrix:` keeps its axes in the order the file writes them: the first
//! axis varies slowest, and a variant's name joins its values in that order
//! (`512m-hdd`). A plain map type would sort the axes by name.

use super::VariantSpec;
use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Matrix(pub Vec<Axis>);

#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub name: String,
    pub values: Vec<VariantSpec>,
}

impl Matrix {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every combination of one value per axis, the first axis slowest;
    /// each as (axis index, value index) pairs.
    pub fn product(&self) -> Vec<Vec<(usize, usize)>> {
        let mut out: Vec<Vec<(usize, usize)>> = vec![Vec::new()];
        for (a, axis) in self.0.iter().enumerate() {
            out = out
                .into_iter()
                .flat_map(|prefix| {
                    (0..axis.values.len()).map(move |v| {
                        let mut next = prefix.clone();
                        next.push((a, v));
                        next
                    })
                })
                .collect();
        }
        if self.0.is_empty() {
            return Vec::new();
        }
        out
    }
}

impl<'de> Deserialize<'de> for Matrix {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Matrix, D::Error> {
        struct Axes;
        impl<'de> Visitor<'de> for Axes {
            type Value = Matrix;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of axes, each a list of variants: `memory: [{name: 512m, vm: {memory: 512MiB}}, {name: 3g}]`")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Matrix, A::Error> {
                let mut axes = Vec::new();
                while let Some((name, values)) = map.next_entry::<String, Vec<VariantSpec>>()? {
                    axes.push(Axis { name, values });
                }
                Ok(Matrix(axes))
            }
        }
        d.deserialize_map(Axes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(name: &str, values: &[&str]) -> Axis {
        Axis {
            name: name.into(),
            values: values
                .iter()
                .map(|v| VariantSpec {
                    name: (*v).into(),
                    ..VariantSpec::default()
                })
                .collect(),
        }
    }

    #[test]
    fn the_first_axis_varies_slowest() {
        let m = Matrix(vec![axis("a", &["1", "2"]), axis("b", &["x", "y", "z"])]);
        let p = m.product();
        assert_eq!(p.len(), 6);
        assert_eq!(p[0], vec![(0, 0), (1, 0)]);
        assert_eq!(p[1], vec![(0, 0), (1, 1)]);
        assert_eq!(p[3], vec![(0, 1), (1, 0)]);
    }

    #[test]
    fn no_axes_no_variants() {
        assert!(Matrix::default().product().is_empty());
    }
}
