//! Decompression on a thread of its own, as `tar -x` runs its decompressor
//! as a separate process: the archive's bytes are inflated while the
//! previous ones are written, so unpacking takes about the longer of the
//! two rather than their sum. A few large buffers go back and forth, so
//! memory stays bounded (DEPTH x CHUNK) whatever the archive's size.

use std::io::{self, Read, Seek, SeekFrom};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

const CHUNK: usize = 1 << 20;
const DEPTH: usize = 4;

/// Runs `consume` over what `source` yields, `source` being read on
/// another thread. A read error of `source` reaches `consume` as its read
/// error, once everything before it was consumed.
pub(super) fn pipelined<R: Read + Send, T>(
    source: R,
    consume: impl FnOnce(&mut dyn Read) -> T,
) -> T {
    let (full_tx, full_rx) = sync_channel::<io::Result<Vec<u8>>>(DEPTH);
    let (free_tx, free_rx) = sync_channel::<Vec<u8>>(DEPTH + 2);
    for _ in 0..DEPTH {
        // Never blocks: the channel has room for every buffer.
        let _ = free_tx.send(vec![0; CHUNK]);
    }
    std::thread::scope(|scope| {
        scope.spawn(move || produce(source, full_tx, free_rx));
        let mut reader = ChannelReader {
            full: full_rx,
            free: free_tx,
            current: Vec::new(),
            at: 0,
            ended: false,
        };
        // Dropping the reader (when `consume` stops early) ends the
        // producer at its next send.
        consume(&mut reader)
    })
}

fn produce<R: Read>(mut source: R, full: SyncSender<io::Result<Vec<u8>>>, free: Receiver<Vec<u8>>) {
    while let Ok(mut buffer) = free.recv() {
        buffer.resize(CHUNK, 0);
        let mut filled = 0;
        let result = loop {
            if filled == buffer.len() {
                break Ok(());
            }
            match source.read(&mut buffer[filled..]) {
                Ok(0) => break Ok(()),
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        buffer.truncate(filled);
        let at_end = filled < CHUNK;
        if filled > 0 && full.send(Ok(buffer)).is_err() {
            return;
        }
        if let Err(e) = result {
            let _ = full.send(Err(e));
            return;
        }
        if at_end {
            return;
        }
    }
}

struct ChannelReader {
    full: Receiver<io::Result<Vec<u8>>>,
    free: SyncSender<Vec<u8>>,
    current: Vec<u8>,
    at: usize,
    ended: bool,
}

impl Read for ChannelReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.at == self.current.len() {
            if self.ended {
                return Ok(0);
            }
            match self.full.recv() {
                Ok(Ok(next)) => {
                    let used = std::mem::replace(&mut self.current, next);
                    self.at = 0;
                    if used.capacity() > 0 {
                        // The producer may have ended: a lost buffer is fine.
                        let _ = self.free.try_send(used);
                    }
                }
                Ok(Err(e)) => {
                    self.ended = true;
                    return Err(e);
                }
                // The producer is done: the source's end.
                Err(_) => {
                    self.ended = true;
                    return Ok(0);
                }
            }
        }
        let n = out.len().min(self.current.len() - self.at);
        out[..n].copy_from_slice(&self.current[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Counts the bytes read from the archive file, for progress (shared with
/// the thread that reports it).
pub(super) struct Counting<'a, R> {
    pub inner: R,
    pub count: &'a AtomicU64,
}

impl<R: Read> Read for Counting<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

impl<R: Seek> Seek for Counting<'_, R> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.inner.seek(to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Yields `good` bytes, then fails.
    struct Failing {
        good: usize,
    }

    impl Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.good == 0 {
                return Err(io::Error::other("corrupt stream"));
            }
            let n = buf.len().min(self.good).min(1000);
            buf[..n].fill(7);
            self.good -= n;
            Ok(n)
        }
    }

    #[test]
    fn every_byte_arrives_in_order() {
        let data: Vec<u8> = (0..(3 * CHUNK + 12345)).map(|i| (i % 251) as u8).collect();
        let got = pipelined(&data[..], |r| {
            let mut v = Vec::new();
            r.read_to_end(&mut v).map(|_| v)
        });
        assert!(got.unwrap() == data);
        let empty = pipelined(&b""[..], |r| r.read(&mut [0; 8]));
        assert_eq!(empty.unwrap(), 0);
    }

    #[test]
    fn a_source_error_arrives_after_the_good_bytes() {
        let (n, err) = pipelined(Failing { good: CHUNK + 10 }, |r| {
            let mut v = Vec::new();
            let e = r.read_to_end(&mut v).unwrap_err();
            (v.len(), e)
        });
        assert_eq!(n, CHUNK + 10);
        assert_eq!(err.to_string(), "corrupt stream");
    }

    #[test]
    fn a_consumer_that_stops_early_ends_the_producer() {
        let data = vec![1u8; 20 * CHUNK];
        let first = pipelined(&data[..], |r| r.read(&mut [0; 4]));
        assert_eq!(first.unwrap(), 4);
    }
}
