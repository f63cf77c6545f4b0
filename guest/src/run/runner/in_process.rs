//! The one reading of how an in-process step ended (the dataset's
//! generation, a tree's preparation, a reset, a change, the fixture, a
//! commit's move, a verify), for every such step alike.

use super::Halt;
use super::tally::Tally;
use crate::run::error::RunError;
use crate::run::interrupt::InProcess;
use labrun_evidence::StepRecord;

/// What a step's thread dying says unless the step says otherwise.
pub(super) const LIBRARY_PANIC: &str =
    "the dataset library panicked (a bug in labrun: please report it with this run's evidence)";

/// `Some(value)` when the work succeeded. `None` when it failed: `rec.error`
/// then says why (its error as `describe` words it, or `panicked` when its
/// thread died); the caller writes the record. A signal writes `rec`
/// failed and stops the run.
pub(super) fn ended<T, E>(
    tally: &mut Tally,
    rec: &mut StepRecord,
    result: InProcess<Result<T, E>>,
    describe: impl FnOnce(E) -> String,
    panicked: &str,
) -> Result<Option<T>, Halt> {
    match result {
        InProcess::Done(Ok(value)) => Ok(Some(value)),
        InProcess::Done(Err(e)) => {
            rec.error = Some(describe(e));
            Ok(None)
        }
        InProcess::Stopped(signal) => tally.interrupted(rec, signal),
        InProcess::Died => {
            rec.error = Some(panicked.to_string());
            Ok(None)
        }
    }
}

/// The run's dataset step failed (its record written): nothing can run
/// without it, so the run stops with the record's error.
pub(super) fn dataset_failed(rec: &StepRecord, phase: &'static str) -> Halt {
    Halt::Fatal(RunError::Dataset {
        phase,
        message: rec.error.clone().unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::evidence::{Evidence, blank_record};
    use labrun_evidence::Step;

    fn tally(dir: &std::path::Path) -> Tally {
        Tally::new(Evidence::create(dir, false).unwrap(), "run-1", Vec::new())
    }

    fn records(dir: &std::path::Path) -> Vec<StepRecord> {
        std::fs::read_to_string(dir.join("records.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn a_success_gives_its_value_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut tally = tally(dir.path());
        let mut rec = blank_record("run-1", "", 0, Step::GENERATE);
        let out = ended(
            &mut tally,
            &mut rec,
            InProcess::Done(Ok::<_, String>(7)),
            |e| e,
            LIBRARY_PANIC,
        );
        assert!(matches!(out, Ok(Some(7))));
        assert_eq!(rec.error, None);
        assert!(records(dir.path()).is_empty());
    }

    #[test]
    fn a_failure_is_the_records_error_as_the_step_words_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut tally = tally(dir.path());
        let mut rec = blank_record("run-1", "", 0, Step::GENERATE);
        let out = ended(
            &mut tally,
            &mut rec,
            InProcess::Done(Err::<u8, _>("disk full")),
            |e| format!("cannot write: {e}"),
            LIBRARY_PANIC,
        );
        assert!(matches!(out, Ok(None)));
        assert_eq!(rec.error.as_deref(), Some("cannot write: disk full"));
        // The caller writes the record, as it adds what else it knows.
        assert!(records(dir.path()).is_empty());
    }

    #[test]
    fn a_dead_thread_is_the_steps_panic_message() {
        let dir = tempfile::tempdir().unwrap();
        let mut tally = tally(dir.path());
        let mut rec = blank_record("run-1", "", 0, Step::GENERATE);
        let out = ended(
            &mut tally,
            &mut rec,
            InProcess::<Result<u8, String>>::Died,
            |e| e,
            "resetting panicked",
        );
        assert!(matches!(out, Ok(None)));
        assert_eq!(rec.error.as_deref(), Some("resetting panicked"));
        let halt = dataset_failed(&rec, "generation");
        assert!(
            matches!(&halt, Halt::Fatal(RunError::Dataset { phase: "generation", message }) if message == "resetting panicked")
        );
    }

    #[test]
    fn a_signal_writes_the_record_failed_and_stops_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let mut tally = tally(dir.path());
        let mut rec = blank_record("run-1", "", 0, Step::GENERATE);
        rec.ok = true;
        let out = ended(
            &mut tally,
            &mut rec,
            InProcess::<Result<u8, String>>::Stopped(libc::SIGTERM),
            |e| e,
            LIBRARY_PANIC,
        );
        assert!(matches!(out, Err(Halt::Signal(libc::SIGTERM))));
        let written = records(dir.path());
        assert_eq!(written.len(), 1);
        assert!(!written[0].ok);
        assert_eq!(written[0].error.as_deref(), Some("interrupted by SIGTERM"));
    }
}
