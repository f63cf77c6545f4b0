//! Hashes a tree on every core and hands its entries over in manifest
//! order, holding at most [`WINDOW`] of them: memory does not grow with the
//! number of files.
//!
//! One thread walks the tree in order ([`SortedWalk`]) and numbers what it
//! finds; hashing threads take the files as they come (so a big file keeps
//! one thread busy while the others go on with the files after it); the
//! calling thread puts the results back in number order and passes each to
//! the sink. The walk waits while [`WINDOW`] entries are found but not yet
//! passed on, which bounds both the queue and the reordering.

use crate::error::DatasetError;
use crate::pool::{self, Worker};
use crate::sorted_walk::{self, Found, SortedWalk};
use labrun_evidence::{EntryKind, ManifestEntry};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, mpsc};

/// Entries found and not yet passed on, at most: a few MiB of paths, and
/// far more files than threads, so one big file does not stall the others.
pub(crate) const WINDOW: usize = 16 * 1024;

/// Hashing threads at least: reads of small files on a cold cache wait on
/// the disk more than on the CPU, so more requests in flight than cores pay.
const MIN_THREADS: usize = 4;

type Numbered = (u64, Result<ManifestEntry, DatasetError>);

/// Passes every entry under `dir` to `sink`, in manifest order. The first
/// error (the walk's, a file's, or the sink's) stops everything and is
/// returned.
pub(crate) fn scan_each(
    dir: &Path,
    sink: &mut dyn FnMut(ManifestEntry) -> Result<(), DatasetError>,
) -> Result<(), DatasetError> {
    let walk = SortedWalk::new(dir)?;
    let abort = AtomicBool::new(false);
    let done = AtomicU64::new(0);
    let (job_tx, job_rx) = mpsc::channel::<(u64, String, PathBuf)>();
    let job_rx = Mutex::new(job_rx);
    let (result_tx, result_rx) = mpsc::channel::<Numbered>();
    // A counting semaphore: the walk sends a token per entry, the sink's
    // side takes one back per entry passed on.
    let (permit_tx, permit_rx) = mpsc::sync_channel::<()>(WINDOW);

    std::thread::scope(|s| {
        for _ in 0..pool::threads(MIN_THREADS) {
            let (job_rx, result_tx, abort, done) = (&job_rx, result_tx.clone(), &abort, &done);
            s.spawn(move || {
                let mut worker = Worker::new(done, abort);
                loop {
                    let job = match job_rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => break,
                    };
                    let Ok((n, rel, abs)) = job else { break };
                    if abort.load(Ordering::Acquire) {
                        break;
                    }
                    let entry = hash_file(rel, &abs, &mut worker);
                    if result_tx.send((n, entry)).is_err() {
                        break;
                    }
                }
            });
        }
        let walk_results = result_tx.clone();
        drop(result_tx);
        s.spawn(move || feed(walk, job_tx, walk_results, permit_tx));
        let outcome = collect(result_rx, permit_rx, sink);
        if outcome.is_err() {
            abort.store(true, Ordering::Release);
        }
        // Leaving the scope joins the threads: the walk stops at its next
        // token (the receiver is gone), the hashers when the jobs run out.
        outcome
    })
}

/// The walk's thread: numbers what it finds, sends folders and links
/// straight to the results and files to the hashers.
fn feed(
    walk: SortedWalk,
    jobs: mpsc::Sender<(u64, String, PathBuf)>,
    results: mpsc::Sender<Numbered>,
    permits: mpsc::SyncSender<()>,
) {
    for (n, found) in (0u64..).zip(walk) {
        if permits.send(()).is_err() {
            return; // the consumer stopped
        }
        let sent = match found {
            Ok(Found::File { rel, abs }) => jobs.send((n, rel, abs)).is_ok(),
            Ok(Found::Ready(entry)) => results.send((n, Ok(entry))).is_ok(),
            Err(e) => {
                let _ = results.send((n, Err(e)));
                false
            }
        };
        if !sent {
            return;
        }
    }
}

/// The calling thread: passes results on in number order.
fn collect(
    results: mpsc::Receiver<Numbered>,
    permits: mpsc::Receiver<()>,
    sink: &mut dyn FnMut(ManifestEntry) -> Result<(), DatasetError>,
) -> Result<(), DatasetError> {
    let mut waiting: HashMap<u64, ManifestEntry> = HashMap::new();
    let mut next = 0u64;
    // Ends when the walk and every hasher have hung up.
    for (n, result) in results {
        waiting.insert(n, result?);
        while let Some(entry) = waiting.remove(&next) {
            sink(entry)?;
            next += 1;
            // The walk sent this entry's token before the entry: it is there.
            let _ = permits.recv();
        }
    }
    if !waiting.is_empty() {
        // A hasher panicked (a bug): say so rather than return part of a tree.
        return Err(DatasetError::Io {
            action: "running",
            path: "a hashing thread".into(),
            cause: std::io::Error::other("a worker stopped unexpectedly (this is a bug)"),
        });
    }
    Ok(())
}

/// A file's entry: its mode as opened, and the bytes read and their SHA-256
/// (what was hashed, even if the file changed since it was listed).
fn hash_file(rel: String, abs: &Path, worker: &mut Worker) -> Result<ManifestEntry, DatasetError> {
    let mut file = File::open(abs).map_err(|e| DatasetError::io("opening", abs, e))?;
    let md = file
        .metadata()
        .map_err(|e| DatasetError::io("reading the metadata of", abs, e))?;
    // Only a hint (it doubles the read-ahead window); failure changes nothing.
    let _ = rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::Sequential);
    let mut hasher = Sha256::new();
    let size = crate::scan::hash_into(&mut file, abs, u64::MAX, &mut hasher, worker)?;
    Ok(ManifestEntry {
        path: rel,
        kind: EntryKind::File,
        size,
        mode: sorted_walk::file_mode(&md),
        sha256: hex::encode(hasher.finalize()),
        ..ManifestEntry::default()
    })
}
