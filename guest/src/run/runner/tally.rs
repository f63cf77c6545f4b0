//! The evidence as the run writes it, and what it counts on the way: the
//! records, the failed steps and tool cycles, the walls of this tool
//! cycle's steps, the warnings already given.

use super::{Halt, ToolCycle};
use crate::run::evidence::{Done, Evidence, FailedCycle, blank_record, unix_ms_now};
use crate::run::interrupt::signal_name;
use labrun_evidence::{Event, SCHEMA_VERSION, Step, StepRecord};
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::time::Instant;

pub(super) struct Tally {
    pub ev: Evidence,
    /// The run every record belongs to.
    run_id: String,
    /// Warnings already given (each once per run).
    warned: HashSet<String>,
    /// Found before the evidence existed; given right after the run starts.
    start_warnings: Vec<String>,
    records: u64,
    failed_steps: u64,
    failed_cycles: Vec<FailedCycle>,
    /// The wall time of each step that succeeded in this tool cycle (a
    /// kill point may be a fraction of one).
    cycle_walls: BTreeMap<Step, f64>,
}

impl Tally {
    pub fn new(ev: Evidence, run_id: &str, start_warnings: Vec<String>) -> Tally {
        Tally {
            ev,
            run_id: run_id.to_string(),
            warned: HashSet::new(),
            start_warnings,
            records: 0,
            failed_steps: 0,
            failed_cycles: Vec::new(),
            cycle_walls: BTreeMap::new(),
        }
    }

    pub fn append(&mut self, record: &StepRecord) -> Result<(), Halt> {
        self.records += 1;
        if !record.ok && !record.may_fail {
            self.failed_steps += 1;
        }
        if record.ok && !record.tool.is_empty() {
            self.cycle_walls
                .insert(record.step.clone(), record.wall_secs);
        }
        self.ev.append_record(record)?;
        Ok(())
    }

    pub fn warn_once(&mut self, message: String) -> Result<(), Halt> {
        if self.warned.insert(message.clone()) {
            self.ev.emit(&Event::Warning { message })?;
        }
        Ok(())
    }

    /// The warnings found before the evidence existed, given now.
    pub fn give_start_warnings(&mut self) -> Result<(), Halt> {
        for warning in std::mem::take(&mut self.start_warnings) {
            self.warn_once(warning)?;
        }
        Ok(())
    }

    /// Warns of a removal that failed, if one did.
    pub fn warn_removal(&mut self, failed: &[(PathBuf, std::io::Error)]) {
        if let Some(w) = removal_warning(failed) {
            let _ = self.warn_once(w);
        }
    }

    /// Writes the record of the step a signal cut short, and stops the run.
    pub fn interrupted<T>(&mut self, rec: &mut StepRecord, signal: i32) -> Result<T, Halt> {
        rec.ok = false;
        rec.error = Some(format!("interrupted by {}", signal_name(signal)));
        self.append(rec)?;
        Err(Halt::Signal(signal))
    }

    /// A new tool cycle: no step of it has a wall time yet.
    pub fn start_cycle(&mut self) {
        self.cycle_walls.clear();
    }

    /// The wall time of `step` if it succeeded in this tool cycle.
    pub fn wall_of(&self, step: &Step) -> Option<f64> {
        self.cycle_walls.get(step).copied()
    }

    pub fn cycle_failed(&mut self, tool: &str, cycle: u32) {
        self.failed_cycles.push(FailedCycle {
            tool: tool.to_string(),
            cycle,
        });
    }

    /// The run's own dataset step (no tool, cycle 0): announced, and its
    /// record begun.
    pub fn start_dataset_step(&mut self) -> Result<StepRecord, Halt> {
        self.ev.emit(&Event::StepStarted {
            tool: String::new(),
            cycle: 0,
            step: Step::GENERATE,
        })?;
        Ok(blank_record(&self.run_id, "", 0, Step::GENERATE))
    }

    /// Announces an untimed step of a tool cycle; returns its record (tool,
    /// cycle, order, history point filled in) and its start.
    pub fn start_step(
        &mut self,
        tc: &ToolCycle,
        step: Step,
    ) -> Result<(StepRecord, Instant), Halt> {
        self.ev.emit(&Event::StepStarted {
            tool: tc.tool.name.clone(),
            cycle: tc.cycle,
            step: step.clone(),
        })?;
        let mut rec = self.blank(tc, step);
        rec.history = tc.history.clone();
        Ok((rec, Instant::now()))
    }

    /// A record of tool cycle `tc`'s `step`, not yet announced, with no
    /// history point.
    pub fn blank(&self, tc: &ToolCycle, step: Step) -> StepRecord {
        let mut rec = blank_record(&self.run_id, &tc.tool.name, tc.cycle, step);
        rec.order = tc.order;
        rec
    }

    /// `done.json` and the run's last event; whether every step passed.
    pub fn finish(&mut self) -> Result<bool, Halt> {
        let ok = self.failed_cycles.is_empty() && self.failed_steps == 0;
        self.ev.write_done(&Done {
            schema_version: SCHEMA_VERSION,
            run_id: self.run_id.clone(),
            ok,
            records: self.records,
            failed_steps: self.failed_steps,
            failed_cycles: self.failed_cycles.clone(),
            finished_unix_ms: unix_ms_now(),
        })?;
        // After done.json: a host that sees this event finds the run complete.
        self.ev.emit(&Event::RunFinished {
            ok,
            stopped_because: None,
        })?;
        Ok(ok)
    }

    /// Best effort: the run is over either way, and the reason is already
    /// the caller's error or exit code.
    pub fn finish_stopped(&mut self, reason: String) {
        let _ = self.ev.emit(&Event::RunFinished {
            ok: false,
            stopped_because: Some(reason),
        });
    }
}

/// What a failed removal warns of, if it failed.
pub(super) fn removal_warning(failed: &[(PathBuf, std::io::Error)]) -> Option<String> {
    let (path, e) = failed.first()?;
    let more = match failed.len() - 1 {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    Some(format!(
        "cannot remove {}: {e}{more} (it only costs disk space)",
        path.display()
    ))
}
