//! Runs a job per item on every core and hands the results over in the
//! items' order, holding at most [`WINDOW`] of them: for trees of millions
//! of files, where neither the items nor the results may be held whole.
//!
//! One thread draws the items and numbers them; worker threads take them
//! as they come (so a long job keeps one thread busy while the others go
//! on with the items after it); the calling thread puts the results back
//! in number order and passes each to the sink. Drawing waits while
//! [`WINDOW`] items are drawn but not yet passed on, which bounds both the
//! queue and the reordering.

use crate::Progress;
use crate::error::DatasetError;
use crate::pool::{PROGRESS_EVERY, Worker};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, mpsc};
use std::time::Instant;

/// Items drawn and not yet passed on, at most: a few MiB of paths, and
/// far more items than threads, so one long job does not stall the others.
pub(crate) const WINDOW: usize = 16 * 1024;

/// Runs `job` on every item of `items` on `threads` threads and passes the
/// results to `sink` in item order; `progress` gets (bytes the jobs
/// reported, `total_bytes`). The first error (drawing an item, a job, or
/// the sink) stops everything and is returned.
pub(crate) fn ordered<T, R>(
    items: impl Iterator<Item = Result<T, DatasetError>> + Send,
    threads: usize,
    job: impl Fn(T, &mut Worker) -> Result<R, DatasetError> + Sync,
    sink: &mut dyn FnMut(R) -> Result<(), DatasetError>,
    total_bytes: u64,
    progress: Progress,
) -> Result<(), DatasetError>
where
    T: Send,
    R: Send,
{
    let abort = AtomicBool::new(false);
    let done = AtomicU64::new(0);
    let (job_tx, job_rx) = mpsc::channel::<(u64, T)>();
    let job_rx = Mutex::new(job_rx);
    let (result_tx, result_rx) = mpsc::channel::<(u64, Result<R, DatasetError>)>();
    // A counting semaphore: a token per item drawn, taken back per result
    // passed on.
    let (permit_tx, permit_rx) = mpsc::sync_channel::<()>(WINDOW);

    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            let (job_rx, result_tx, abort, done, job) =
                (&job_rx, result_tx.clone(), &abort, &done, &job);
            s.spawn(move || {
                let mut worker = Worker::new(done, abort);
                loop {
                    let next = match job_rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => break,
                    };
                    let Ok((n, item)) = next else { break };
                    if abort.load(Ordering::Acquire) {
                        break;
                    }
                    if result_tx.send((n, job(item, &mut worker))).is_err() {
                        break;
                    }
                }
            });
        }
        let draw_results = result_tx.clone();
        drop(result_tx);
        s.spawn(move || {
            for (n, item) in (0u64..).zip(items) {
                if permit_tx.send(()).is_err() {
                    return; // the sink's side stopped
                }
                let sent = match item {
                    Ok(item) => job_tx.send((n, item)).is_ok(),
                    Err(e) => {
                        let _ = draw_results.send((n, Err(e)));
                        false
                    }
                };
                if !sent {
                    return;
                }
            }
        });
        let report = || progress_of(&done, total_bytes);
        let outcome = collect(result_rx, permit_rx, sink, progress, report);
        if outcome.is_err() {
            abort.store(true, Ordering::Release);
        }
        // Leaving the scope joins the threads: drawing stops at its next
        // token (the receiver is gone), the workers when the items run out.
        outcome
    })
}

fn progress_of(done: &AtomicU64, total: u64) -> (u64, u64) {
    (done.load(Ordering::Relaxed).min(total), total)
}

/// The calling thread: passes results on in number order.
fn collect<R>(
    results: mpsc::Receiver<(u64, Result<R, DatasetError>)>,
    permits: mpsc::Receiver<()>,
    sink: &mut dyn FnMut(R) -> Result<(), DatasetError>,
    progress: Progress,
    report: impl Fn() -> (u64, u64),
) -> Result<(), DatasetError> {
    let mut waiting: HashMap<u64, R> = HashMap::new();
    let mut next = 0u64;
    let mut reported = Instant::now();
    // Ends when drawing and every worker have hung up.
    for (n, result) in results {
        waiting.insert(n, result?);
        while let Some(r) = waiting.remove(&next) {
            sink(r)?;
            next += 1;
            // The token of this item was sent before it: it is there.
            let _ = permits.recv();
        }
        if reported.elapsed() >= PROGRESS_EVERY {
            let (d, t) = report();
            progress(d, t);
            reported = Instant::now();
        }
    }
    if !waiting.is_empty() {
        // A worker panicked (a bug): say so rather than return a part.
        return Err(DatasetError::Io {
            action: "running",
            path: "a worker thread".into(),
            cause: std::io::Error::other("a worker stopped unexpectedly (this is a bug)"),
        });
    }
    let (d, t) = report();
    progress(d, t);
    Ok(())
}
