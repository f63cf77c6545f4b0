//! SIGTERM and SIGINT: stop the running tool, let the run write what it has,
//! exit non-zero.
//!
//! signal-hook's iterator turns the signals into messages on a thread of our
//! own (its handler only writes to a self-pipe), so everything here is plain
//! code: on a signal the thread records the reason, kills the process group
//! of the tool that is running (the measuring thread's `wait4` then returns),
//! and wakes an in-process step that is being waited for.

use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};

/// What an in-process step (generation, change, verification) ended with.
#[derive(Debug, PartialEq)]
pub enum InProcess<T> {
    Done(T),
    /// A signal arrived first; the step's thread is left behind, the
    /// process is about to exit.
    Stopped(i32),
    /// The step's thread died without an answer (a panic in a library).
    Died,
}

enum Wake<T> {
    Done(T),
    Progress(u64, u64),
    Stop(i32),
    Panicked,
}

type Waker = Box<dyn Fn(i32) + Send>;

/// Told of every tool group started (`Some`) and ended (`None`), to keep a
/// record that outlives the agent (see [`crate::run::agent_lock`]).
pub type GroupRecorder = Box<dyn Fn(Option<i32>) + Send + Sync>;

#[derive(Default)]
struct State {
    /// The first stop signal received.
    signal: Option<i32>,
    /// Process group of the tool running now, 0 when none.
    group: i32,
    /// Wakes the in-process step being waited for, if any.
    waker: Option<Waker>,
}

/// Shared by the run and the signal thread.
#[derive(Default)]
pub struct Interrupt {
    state: Mutex<State>,
    recorder: Mutex<Option<GroupRecorder>>,
}

impl Interrupt {
    /// An interrupt with no signal handling, for tests (and for
    /// [`Interrupt::install`] to build on).
    pub fn new() -> Arc<Interrupt> {
        Arc::new(Interrupt::default())
    }

    /// Installs SIGTERM and SIGINT handling for the rest of the process.
    pub fn install() -> std::io::Result<Arc<Interrupt>> {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let interrupt = Interrupt::new();
        let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT])?;
        let shared = Arc::clone(&interrupt);
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                for signal in signals.forever() {
                    shared.request_stop(signal);
                }
            })?;
        Ok(interrupt)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means another thread panicked while holding
        // it; the state itself (numbers and an option) is still sound.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Asks the run to stop, as a signal does.
    pub fn request_stop(&self, signal: i32) {
        let mut st = self.lock();
        st.signal.get_or_insert(signal);
        if st.group > 0 {
            kill_group(st.group);
        }
        if let Some(wake) = st.waker.as_ref() {
            wake(signal);
        }
    }

    /// The signal that asked the run to stop, if one did.
    pub fn stopped_by(&self) -> Option<i32> {
        self.lock().signal
    }

    /// Has `recorder` told of every tool group from now on.
    pub fn record_groups_with(&self, recorder: GroupRecorder) {
        *self.recorder.lock().unwrap_or_else(|e| e.into_inner()) = Some(recorder);
    }

    fn record(&self, group: Option<i32>) {
        if let Some(r) = self
            .recorder
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            r(group);
        }
    }

    /// Registers the process group of the tool just started; kills it at
    /// once if a stop was requested before it could be registered.
    pub fn set_group(&self, group: i32) {
        self.record(Some(group));
        let mut st = self.lock();
        st.group = group;
        if st.signal.is_some() {
            kill_group(group);
        }
    }

    /// The tool's group is about to be reaped: no signal may target it after.
    pub fn clear_group(&self) {
        self.lock().group = 0;
        self.record(None);
    }

    /// Runs `work` on its own thread and waits for it (blocking, no polling)
    /// unless a stop signal comes first. `work` gets a progress callback
    /// whose calls arrive here, on the caller's thread, as `on_progress`.
    pub fn run_in_process<T, F>(
        &self,
        work: F,
        mut on_progress: impl FnMut(u64, u64),
    ) -> InProcess<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut dyn FnMut(u64, u64)) -> T + Send + 'static,
    {
        let (tx, rx) = mpsc::channel::<Wake<T>>();
        {
            let mut st = self.lock();
            if let Some(signal) = st.signal {
                return InProcess::Stopped(signal);
            }
            let stop_tx = tx.clone();
            st.waker = Some(Box::new(move |signal| {
                let _ = stop_tx.send(Wake::Stop(signal));
            }));
        }
        let spawned = std::thread::Builder::new()
            .name("in-process-step".into())
            .spawn(move || {
                let progress_tx = tx.clone();
                let mut progress = move |done: u64, total: u64| {
                    let _ = progress_tx.send(Wake::Progress(done, total));
                };
                // Caught so the waiting side learns of it: the waker keeps a
                // sender alive, so a silent death would never wake it.
                let result =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&mut progress)));
                let _ = tx.send(match result {
                    Ok(result) => Wake::Done(result),
                    Err(_) => Wake::Panicked,
                });
            });
        let outcome = match spawned {
            Ok(_) => loop {
                match rx.recv() {
                    Ok(Wake::Progress(done, total)) => on_progress(done, total),
                    Ok(Wake::Done(result)) => break InProcess::Done(result),
                    Ok(Wake::Stop(signal)) => break InProcess::Stopped(signal),
                    Ok(Wake::Panicked) | Err(_) => break InProcess::Died,
                }
            },
            Err(_) => InProcess::Died,
        };
        self.lock().waker = None;
        outcome
    }
}

fn kill_group(group: i32) {
    crate::run::process::signal_group(group, libc::SIGKILL);
}

/// `SIGTERM`, `SIGINT`, or the number.
pub fn signal_name(signal: i32) -> String {
    match signal {
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGINT => "SIGINT".into(),
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGHUP => "SIGHUP".into(),
        n => format!("signal {n}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn in_process_step_returns_its_result_and_progress() {
        let interrupt = Interrupt::new();
        let mut seen = Vec::new();
        let out = interrupt.run_in_process(
            |progress| {
                progress(1, 2);
                progress(2, 2);
                42
            },
            |d, t| seen.push((d, t)),
        );
        assert_eq!(out, InProcess::Done(42));
        assert_eq!(seen, vec![(1, 2), (2, 2)]);
    }

    #[test]
    fn a_stop_wakes_the_waiter_before_the_step_ends() {
        let interrupt = Interrupt::new();
        let stopper = Arc::clone(&interrupt);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            stopper.request_stop(libc::SIGTERM);
        });
        let started = Instant::now();
        let out =
            interrupt.run_in_process(|_| std::thread::sleep(Duration::from_secs(30)), |_, _| {});
        assert_eq!(out, InProcess::Stopped(libc::SIGTERM));
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(interrupt.stopped_by(), Some(libc::SIGTERM));
        // Once stopped, nothing new starts.
        assert_eq!(
            interrupt.run_in_process(|_| 1, |_, _| {}),
            InProcess::Stopped(libc::SIGTERM)
        );
    }

    #[test]
    fn a_panicking_step_is_reported_not_waited_for() {
        let interrupt = Interrupt::new();
        let out: InProcess<()> = interrupt.run_in_process(|_| panic!("library bug"), |_, _| {});
        assert_eq!(out, InProcess::Died);
    }

    #[test]
    fn signal_names() {
        assert_eq!(signal_name(libc::SIGTERM), "SIGTERM");
        assert_eq!(signal_name(libc::SIGINT), "SIGINT");
        assert_eq!(signal_name(99), "signal 99");
    }
}
