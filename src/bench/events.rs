//! A followed run's events as the producer hands them on: each line of the
//! agent's `events.jsonl` exactly as it came, with its event when it parses,
//! sent to every consumer's own queue. A consumer takes its lines at its own
//! pace: the producer never waits for one (nextest's runner and reporters,
//! one channel each), and a slow one never holds back another.

use labrun_evidence::Event;
use std::sync::Arc;
use tokio::sync::mpsc;

/// One line of the agent's event stream.
#[derive(Debug)]
pub struct Line {
    /// The bytes as the guest wrote them, newline included: the host's copy
    /// of `events.jsonl` is these, byte for byte.
    pub bytes: Vec<u8>,
    /// `None` for a line this labrun cannot read (kept, not shown).
    pub event: Option<Event>,
}

impl Line {
    pub fn parse(bytes: Vec<u8>) -> Line {
        let event = serde_json::from_slice(&bytes).ok();
        Line { bytes, event }
    }
}

/// The consumers' queues. Unbounded: a line is never dropped for a slow
/// consumer (a broadcast channel would drop them for a lagging one), and
/// the lines of one run are few (one per step and event).
#[derive(Default)]
pub struct Fanout {
    queues: Vec<mpsc::UnboundedSender<Arc<Line>>>,
}

impl Fanout {
    /// A new consumer's queue: every line sent from now on.
    pub fn subscribe(&mut self) -> mpsc::UnboundedReceiver<Arc<Line>> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.queues.push(tx);
        rx
    }

    /// Hands `line` to every consumer; never waits. A consumer that has
    /// stopped (its queue closed) is skipped.
    pub fn send(&self, line: Line) {
        let line = Arc::new(line);
        for q in &self.queues {
            let _ = q.send(line.clone());
        }
    }
}
