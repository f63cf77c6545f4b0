//! What every step may read and nothing changes during the run: the plan,
//! the executor of measured commands and the stop request.

use super::Halt;
use super::tally::Tally;
use crate::run::interrupt::{InProcess, Interrupt};
use crate::run::measure::Executor;
use labrun_evidence::{Event, Plan, Step};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(super) struct Context<'p> {
    pub plan: &'p Plan,
    /// Runs every measured command (tool steps and their helpers).
    pub executor: &'p dyn Executor,
    pub interrupt: Arc<Interrupt>,
}

impl Context<'_> {
    pub fn check_stop(&self) -> Result<(), Halt> {
        match self.interrupt.stopped_by() {
            Some(signal) => Err(Halt::Signal(signal)),
            None => Ok(()),
        }
    }

    /// The lab's cool-down: a sleep a stop request ends.
    pub fn cool_down(&self, pause: Duration) -> Result<(), Halt> {
        let until = Instant::now() + pause;
        loop {
            self.check_stop()?;
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            std::thread::sleep(left.min(Duration::from_millis(200)));
        }
    }

    pub fn timeout(&self) -> Option<Duration> {
        self.plan.step_timeout_secs.map(Duration::from_secs)
    }

    /// Runs dataset work on its own thread (see [`Interrupt::run_in_process`]),
    /// turning its progress calls into events, at most one per percent.
    /// [`super::in_process::ended`] reads what it ended with.
    pub fn in_process<T: Send + 'static>(
        &self,
        tally: &mut Tally,
        phase: Step,
        work: impl FnOnce(&mut dyn FnMut(u64, u64)) -> T + Send + 'static,
    ) -> InProcess<T> {
        let ev = &mut tally.ev;
        let mut last_percent = None;
        self.interrupt.run_in_process(work, |done, total| {
            let percent = done.saturating_mul(100).checked_div(total).unwrap_or(100);
            if last_percent != Some(percent) {
                last_percent = Some(percent);
                // A failed write here shows again, as an error, at the next record.
                let _ = ev.emit(&Event::DatasetProgress {
                    phase: phase.clone(),
                    bytes_done: done,
                    bytes_total: total,
                });
            }
        })
    }
}
