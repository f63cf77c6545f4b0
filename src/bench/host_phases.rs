//! Where `bench`'s own time goes: each host-side phase (connect, estimate,
//! push, environment, following the run, pulling, the summary) with its
//! start and length, appended to `raw/host-phases.jsonl` as it ends.
//!
//! The agent's records time the steps; these time everything around them,
//! so the harness's share of a run's wall time can be taken apart from the
//! evidence alone (`benches/overhead.sh`, `benches/scale_fit.py`). Phases
//! that end before the run folder exists (a refused run makes none) are
//! kept in memory and written with the first one after.

use serde::{Deserialize, Serialize};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

pub const HOST_PHASES_FILE: &str = "host-phases.jsonl";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostPhase {
    pub phase: String,
    pub started_unix_ms: u64,
    pub secs: f64,
}

#[derive(Debug, Default)]
pub struct HostPhases {
    file: Option<PathBuf>,
    pending: Vec<HostPhase>,
}

/// A phase begun; [`HostPhases::end`] records it.
pub struct Begun {
    phase: &'static str,
    unix_ms: u64,
    at: Instant,
}

impl HostPhases {
    /// Phases of a run whose folder exists already (`--attach`).
    pub fn appending_to(raw: &Path) -> HostPhases {
        HostPhases {
            file: Some(raw.join(HOST_PHASES_FILE)),
            pending: Vec::new(),
        }
    }

    /// From now on, phases go to `raw/` (with those held so far).
    pub fn write_into(&mut self, raw: &Path) {
        self.file = Some(raw.join(HOST_PHASES_FILE));
        for p in std::mem::take(&mut self.pending) {
            self.write(p);
        }
    }

    pub fn begin(phase: &'static str) -> Begun {
        Begun {
            phase,
            unix_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            at: Instant::now(),
        }
    }

    pub fn end(&mut self, begun: Begun) {
        let p = HostPhase {
            phase: begun.phase.to_string(),
            started_unix_ms: begun.unix_ms,
            secs: (begun.at.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
        };
        if self.file.is_some() {
            self.write(p);
        } else {
            self.pending.push(p);
        }
    }

    /// Timing evidence, not a result: a write that fails costs the
    /// breakdown, never the run.
    fn write(&self, p: HostPhase) {
        let Some(file) = &self.file else { return };
        let Ok(line) = serde_json::to_string(&p) else {
            return;
        };
        if let Ok(mut f) = OpenOptions::new().create(true).append(true).open(file) {
            let _ = writeln!(f, "{line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_before_the_folder_are_written_with_the_first_after() {
        let dir = tempfile::tempdir().unwrap();
        let mut phases = HostPhases::default();
        let b = HostPhases::begin("connect");
        std::thread::sleep(std::time::Duration::from_millis(20));
        phases.end(b);
        assert!(!dir.path().join(HOST_PHASES_FILE).exists());
        phases.write_into(dir.path());
        phases.end(HostPhases::begin("push"));
        let text = std::fs::read_to_string(dir.path().join(HOST_PHASES_FILE)).unwrap();
        let got: Vec<HostPhase> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(got.len(), 2);
        assert_eq!(
            (got[0].phase.as_str(), got[1].phase.as_str()),
            ("connect", "push")
        );
        assert!(got[0].secs >= 0.02, "{:?}", got[0]);
        assert!(got[1].started_unix_ms >= got[0].started_unix_ms);
    }
}
