//! How the fetcher reports progress without printing: the caller decides
//! (a terminal progress bar in the CLI, nothing in tests).

use crate::source::Source;

pub trait Progress: Send {
    /// Bytes are about to flow for `name` from `source`; `total` when known.
    fn start(&mut self, name: &str, source: &Source, total: Option<u64>);
    /// `bytes` more were received (or copied).
    fn advance(&mut self, bytes: u64);
    /// The transfer ended (successfully or not).
    fn finish(&mut self);
    /// Something the user may want to know: a retry, a corrupt cached copy.
    fn notice(&mut self, message: &str);
    /// A build of `name` is at this step (it may take minutes).
    fn step(&mut self, name: &str, what: &str) {
        let _ = (name, what);
    }
}

/// Reports nothing.
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&mut self, _: &str, _: &Source, _: Option<u64>) {}
    fn advance(&mut self, _: u64) {}
    fn finish(&mut self) {}
    fn notice(&mut self, _: &str) {}
}
