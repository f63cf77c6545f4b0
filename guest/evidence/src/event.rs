//! Progress events: the agent writes one JSON object per line on stdout (and
//! into `events.jsonl`); the host renders them. Tagged by `"event"`.

use crate::record::StepRecord;
use crate::step::Step;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    RunStarted {
        run_id: String,
        tools: Vec<String>,
        cycles: u32,
    },
    /// Dataset generation (or change) progress.
    DatasetProgress {
        phase: Step,
        bytes_done: u64,
        bytes_total: u64,
    },
    StepStarted {
        tool: String,
        cycle: u32,
        step: Step,
    },
    StepFinished {
        record: Box<StepRecord>,
    },
    CycleFinished {
        tool: String,
        cycle: u32,
        ok: bool,
    },
    Warning {
        message: String,
    },
    RunFinished {
        ok: bool,
        /// Set when the run stopped early (signal, full disk...).
        #[serde(default)]
        stopped_because: Option<String>,
    },
}
