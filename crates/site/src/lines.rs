//! The site's model: the runs of one tool on one dataset and one machine
//! class make one line, ordered by the tool's version as the runs named it
//! (by date when some run named none that reads as a version). Lines of
//! different datasets or classes are never mixed. Each adjacent pair of a
//! line is judged by compare's own rule ([`labrun_report::compare`]).

use crate::load::SiteRun;
use crate::measure::{MEASURES, Measure};
use labrun_report::compare::{Comparison, Settings, Verdict};
use labrun_report::{MachineClass, Stat};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LineKey {
    pub tool: String,
    pub dataset: String,
    pub class: MachineClass,
}

pub struct Line {
    pub key: LineKey,
    /// Indices into the site's runs, oldest version (or date) first.
    pub runs: Vec<usize>,
    /// One per [`MEASURES`] entry, in its order.
    pub series: Vec<Series>,
}

pub struct Series {
    pub measure: &'static Measure,
    /// One per run of the line.
    pub points: Vec<Option<Stat>>,
    /// One per adjacent pair of runs: compare's verdict of the newer
    /// against the older, None when it could not be made.
    pub changes: Vec<Option<Change>>,
}

/// Compare's verdict on one step of a line, or between two tools.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub verdict: Verdict,
    /// In the figure's words: `slower`, `faster`, `larger`, ...
    pub word: String,
    pub ratio: Option<f64>,
    pub interval: Option<[f64; 2]>,
}

impl Change {
    /// Worse or better beyond the margin: what the site flags.
    pub fn flagged(&self) -> bool {
        matches!(self.verdict, Verdict::Worse | Verdict::Better)
    }

    /// `1.234 (1.102-1.381)`, as compare's table writes a ratio and its
    /// interval; `-` without a ratio.
    pub fn ratio_text(&self) -> String {
        match (self.ratio, self.interval) {
            (Some(r), Some([lo, hi])) => format!("{r:.3} ({lo:.3}-{hi:.3})"),
            (Some(r), None) => format!("{r:.3}"),
            (None, _) => "-".into(),
        }
    }
}

/// Every line of the runs, by tool, then dataset, then class.
pub fn of(runs: &[SiteRun], settings: &Settings) -> Vec<Line> {
    let mut grouped: BTreeMap<LineKey, Vec<usize>> = BTreeMap::new();
    for (i, run) in runs.iter().enumerate() {
        for tool in run.tools() {
            grouped
                .entry(LineKey {
                    tool: tool.to_string(),
                    dataset: run.dataset.clone(),
                    class: run.class.clone(),
                })
                .or_default()
                .push(i);
        }
    }
    grouped
        .into_iter()
        .map(|(key, mut members)| {
            order(runs, &key.tool, &mut members);
            let comparisons: Vec<Option<Comparison>> = members
                .windows(2)
                .map(|w| compare(&runs[w[0]], &key.tool, &runs[w[1]], &key.tool, settings))
                .collect();
            let series = MEASURES
                .iter()
                .map(|m| Series {
                    measure: m,
                    points: members
                        .iter()
                        .map(|&i| m.stat(&runs[i], &key.tool))
                        .collect(),
                    changes: members
                        .windows(2)
                        .zip(&comparisons)
                        .map(|(w, c)| change(c.as_ref()?, m, &runs[w[1]]))
                        .collect(),
                })
                .collect();
            Line {
                key,
                runs: members,
                series,
            }
        })
        .collect()
}

/// A run's place in its line: version (when the line orders by it), date,
/// digest, and the run's index.
type OrderKey<'a> = (Option<Vec<u64>>, Option<u64>, &'a str, usize);

/// By version when every run of the line names one that reads as numbers
/// (`0.19.1`, `v1.4.5`, `0.14.0-1`), else by date; then by date and digest,
/// so the order is total and the same on every build.
fn order(runs: &[SiteRun], tool: &str, members: &mut [usize]) {
    let keys: Vec<Option<Vec<u64>>> = members
        .iter()
        .map(|&i| runs[i].version_of(tool).and_then(version_key))
        .collect();
    let by_version = keys.iter().all(Option::is_some);
    let mut keyed: Vec<OrderKey> = members
        .iter()
        .zip(keys)
        .map(|(&i, k)| {
            (
                k.filter(|_| by_version),
                runs[i].started_unix_ms,
                runs[i].digest.as_str(),
                i,
            )
        })
        .collect();
    keyed.sort();
    for (slot, (_, _, _, i)) in members.iter_mut().zip(keyed) {
        *slot = i;
    }
}

/// `v0.19.1` -> [0, 19, 1]; None for a commit or a name.
pub fn version_key(version: &str) -> Option<Vec<u64>> {
    let v = version.strip_prefix('v').unwrap_or(version);
    let main = v.split(['-', '+', '~', ' ']).next()?;
    main.split('.').map(|p| p.parse().ok()).collect()
}

/// Compare's verdicts of `cand_tool` in `cand` against `base_tool` in
/// `base`: paired cycle by cycle when both are of one run, else unpaired.
pub fn compare(
    base: &SiteRun,
    base_tool: &str,
    cand: &SiteRun,
    cand_tool: &str,
    settings: &Settings,
) -> Option<Comparison> {
    if base.digest == cand.digest {
        labrun_report::compare::compare_paired(&base.raw, base_tool, cand_tool, settings).ok()
    } else {
        labrun_report::compare::compare_unpaired(
            &base.raw, base_tool, &cand.raw, cand_tool, settings,
        )
        .ok()
    }
}

/// The comparison's row for `measure` (the candidate run's step of its
/// role), as a change.
pub fn change(c: &Comparison, measure: &Measure, cand: &SiteRun) -> Option<Change> {
    let row = c.row(measure.step(cand)?, measure.figure)?;
    Some(Change {
        verdict: row.verdict,
        word: row.verdict_word.clone(),
        ratio: row.ratio,
        interval: row.interval,
    })
}

#[cfg(test)]
mod tests {
    use super::version_key;

    #[test]
    fn versions_read_as_numbers_and_commits_do_not() {
        assert_eq!(version_key("0.19.1"), Some(vec![0, 19, 1]));
        assert_eq!(version_key("v1.4.5"), Some(vec![1, 4, 5]));
        assert_eq!(version_key("0.14.0-1+b2"), Some(vec![0, 14, 0]));
        assert!(version_key("0.9.0") < version_key("0.10.0"));
        assert_eq!(version_key("3fa2c1e"), None);
        assert_eq!(version_key(""), None);
    }
}
