//! A phase's figures as `summary.json` holds them: one key per per-phase
//! figure of the table ([`crate::figures`]), in its order, `null` where no
//! record had it; a newer report's keys are ignored on reading.

use crate::figures::{self, Figure};
use crate::stats::Stat;
use labrun_evidence::StepRecord;
use serde::{Deserialize, Serialize};

/// A phase's figures: median and range over its ok records, one per figure
/// of the table that is summarized per phase, in the table's order (None
/// where no record had it).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PhaseFigures(Vec<(&'static str, Option<Stat>)>);

impl PhaseFigures {
    pub fn of(ok: &[&StepRecord]) -> PhaseFigures {
        PhaseFigures(
            figures::per_phase()
                .map(|(f, _)| (f.name, Stat::of(ok.iter().filter_map(|r| f.of(r)))))
                .collect(),
        )
    }

    pub fn get(&self, figure: &Figure) -> Option<Stat> {
        self.0
            .iter()
            .find(|(name, _)| *name == figure.name)
            .and_then(|(_, s)| *s)
    }
}

impl Serialize for PhaseFigures {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        for (f, column) in figures::per_phase() {
            let stat = self.get(f);
            // Absent, not null, for a figure older runs lack: their
            // summaries read and write as they did.
            if column.only_when_measured && stat.is_none() {
                continue;
            }
            map.serialize_entry(column.key, &stat)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for PhaseFigures {
    /// Keys a newer report added are ignored; figures an older one had not
    /// are None.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let mut keyed = std::collections::BTreeMap::<String, Option<Stat>>::deserialize(d)?;
        Ok(PhaseFigures(
            figures::per_phase()
                .map(|(f, c)| (f.name, keyed.remove(c.key).flatten()))
                .collect(),
        ))
    }
}
