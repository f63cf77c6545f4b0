//! Harness I/O that need not hold up the run: started when a step ends,
//! done while untimed work goes on (the next tool cycle's source, a change,
//! a verify), and always finished before the next measured step drops the
//! cache and starts ([`Background::settle`]), so no timed step ever shares
//! the disk with it.

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Jobs running beside the run, one after another in the order given (a
/// removal may remove what an earlier one still works in); each gives
/// warnings when it ends.
#[derive(Default)]
pub struct Background {
    /// The last job given: it waits for the ones before it.
    tail: Option<(&'static str, JoinHandle<Vec<String>>)>,
}

type Chained<F> = Arc<Mutex<Option<(Option<(&'static str, JoinHandle<Vec<String>>)>, F)>>>;

impl Background {
    /// Runs `job` on a thread of its own once the jobs given before it have
    /// ended; where no thread can be started it runs here and now (after
    /// them), and the warnings are returned at once.
    pub fn spawn(
        &mut self,
        name: &'static str,
        job: impl FnOnce() -> Vec<String> + Send + 'static,
    ) -> Vec<String> {
        // Shared so that both can still run here should the thread not
        // start (spawn consumes what it is given).
        let work: Chained<_> = Arc::new(Mutex::new(Some((self.tail.take(), job))));
        let on_thread = Arc::clone(&work);
        let spawned = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || run_chained(&on_thread));
        match spawned {
            Ok(handle) => {
                self.tail = Some((name, handle));
                Vec::new()
            }
            Err(_) => run_chained(&work),
        }
    }

    /// Waits for every job; returns their warnings.
    pub fn settle(&mut self) -> Vec<String> {
        self.tail.take().map(join).unwrap_or_default()
    }
}

/// The jobs before, then this one.
fn run_chained<F: FnOnce() -> Vec<String>>(work: &Chained<F>) -> Vec<String> {
    // A poisoned lock only means the other side panicked.
    let Some((before, job)) = work.lock().unwrap_or_else(|e| e.into_inner()).take() else {
        return Vec::new();
    };
    let mut warnings = before.map(join).unwrap_or_default();
    warnings.extend(job());
    warnings
}

fn join((name, handle): (&'static str, JoinHandle<Vec<String>>)) -> Vec<String> {
    handle.join().unwrap_or_else(|_| {
        vec![format!(
            "the agent's background {name} thread panicked (a bug in labrun: please report it with this run's evidence)"
        )]
    })
}

impl Drop for Background {
    /// Nothing outlives the run: a run that stops early still waits for
    /// what it started (its warnings are lost with the run).
    fn drop(&mut self) {
        let _ = self.settle();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn settle_waits_for_every_job_and_gives_their_warnings() {
        let mut bg = Background::default();
        let done = Arc::new(AtomicBool::new(false));
        let started = Arc::new(Barrier::new(2));
        let (d, s) = (Arc::clone(&done), Arc::clone(&started));
        assert!(
            bg.spawn("first", move || {
                s.wait();
                std::thread::sleep(std::time::Duration::from_millis(50));
                d.store(true, Ordering::SeqCst);
                vec!["one".into()]
            })
            .is_empty()
        );
        started.wait();
        bg.spawn("second", || vec!["two".into()]);
        assert_eq!(bg.settle(), ["one", "two"]);
        assert!(
            done.load(Ordering::SeqCst),
            "settle returned before the job ended"
        );
        assert!(bg.settle().is_empty(), "settled twice");
    }

    #[test]
    fn jobs_run_one_after_another_in_order() {
        let mut bg = Background::default();
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        for i in 0..4 {
            let o = Arc::clone(&order);
            bg.spawn("job", move || {
                // The first job is the slowest: a job that did not wait
                // for the ones before it would come first.
                if i == 0 {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                o.lock().unwrap().push(i);
                vec![format!("{i}")]
            });
        }
        assert_eq!(bg.settle(), ["0", "1", "2", "3"]);
        assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3]);
    }

    #[test]
    fn a_panicking_job_is_a_warning() {
        let mut bg = Background::default();
        bg.spawn("remove", || panic!("boom"));
        let w = bg.settle();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("remove"), "{w:?}");
    }
}
