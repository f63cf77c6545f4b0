//! Runs one job per item on every core (scoped threads pulling from a shared
//! index, biggest items first), reports progress from the calling thread, and
//! stops everyone at the first error.

use crate::Progress;
use crate::error::DatasetError;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// Large sequential reads and writes: few syscalls, full device requests.
pub const CHUNK: usize = 1 << 20;

/// How often the progress callback is called while work runs.
pub(crate) const PROGRESS_EVERY: Duration = Duration::from_millis(500);

/// What a job gets: its thread's buffer, and a way to report bytes done.
pub struct Worker<'a> {
    pub buf: Vec<u8>,
    done: &'a AtomicU64,
    abort: &'a AtomicBool,
}

impl<'a> Worker<'a> {
    /// A worker outside [`run`] (the streamed scan runs its own threads).
    pub fn new(done: &'a AtomicU64, abort: &'a AtomicBool) -> Worker<'a> {
        Worker {
            buf: vec![0u8; CHUNK],
            done,
            abort,
        }
    }

    pub fn add(&self, bytes: u64) {
        self.done.fetch_add(bytes, Ordering::Relaxed);
    }

    /// True once another job failed: long jobs stop early.
    pub fn aborted(&self) -> bool {
        self.abort.load(Ordering::Acquire)
    }
}

/// Threads to use: every core, at least `min`.
pub fn threads(min: usize) -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .max(min)
}

/// Runs `job` on every item (in the order of `order`, usually biggest first)
/// on `threads` threads; returns the results in item order.
pub fn run<T, R, F>(
    items: &[T],
    order: &[usize],
    threads: usize,
    total_bytes: u64,
    progress: Progress,
    job: F,
) -> Result<Vec<R>, DatasetError>
where
    T: Sync,
    R: Send,
    F: Fn(&T, &mut Worker) -> Result<R, DatasetError> + Sync,
{
    let next = AtomicUsize::new(0);
    let done = AtomicU64::new(0);
    let abort = AtomicBool::new(false);
    let first_error: Mutex<Option<DatasetError>> = Mutex::new(None);
    let threads = threads.clamp(1, items.len().max(1));
    let (alive_tx, alive_rx) = mpsc::channel::<()>();

    let per_thread: Vec<Vec<(usize, R)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let alive = alive_tx.clone();
                let (next, done, abort, first_error, job) =
                    (&next, &done, &abort, &first_error, &job);
                s.spawn(move || {
                    let _alive = alive; // dropped when this thread ends
                    let mut worker = Worker {
                        buf: vec![0u8; CHUNK],
                        done,
                        abort,
                    };
                    let mut results = Vec::new();
                    while !abort.load(Ordering::Acquire) {
                        let n = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&i) = order.get(n) else { break };
                        match job(&items[i], &mut worker) {
                            Ok(r) => results.push((i, r)),
                            Err(e) => {
                                // Record before raising the flag: a job that
                                // stops because of the flag must not win.
                                if let Ok(mut slot) = first_error.lock() {
                                    slot.get_or_insert(e);
                                }
                                abort.store(true, Ordering::Release);
                                break;
                            }
                        }
                    }
                    results
                })
            })
            .collect();
        drop(alive_tx);
        // Report progress until every worker has hung up.
        while let Err(mpsc::RecvTimeoutError::Timeout) = alive_rx.recv_timeout(PROGRESS_EVERY) {
            progress(done.load(Ordering::Relaxed).min(total_bytes), total_bytes);
        }
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });

    if let Some(e) = first_error.into_inner().ok().flatten() {
        return Err(e);
    }
    let mut slots: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
    for (i, r) in per_thread.into_iter().flatten() {
        slots[i] = Some(r);
    }
    if slots.iter().any(Option::is_none) {
        // A worker panicked (a bug): say so rather than return a partial result.
        return Err(DatasetError::Io {
            action: "running",
            path: "a worker thread".into(),
            cause: std::io::Error::other("a worker stopped unexpectedly (this is a bug)"),
        });
    }
    progress(done.load(Ordering::Relaxed).min(total_bytes), total_bytes);
    Ok(slots.into_iter().flatten().collect())
}

/// Item indices, biggest first (ties in item order), so the long jobs start
/// early and the threads finish together.
pub fn biggest_first(sizes: impl Iterator<Item = u64>) -> Vec<usize> {
    let mut order: Vec<(u64, usize)> = sizes.enumerate().map(|(i, s)| (s, i)).collect();
    order.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    order.into_iter().map(|(_, i)| i).collect()
}
