//! One followed run, producer and consumers apart: the producer (the event
//! tail) hands each line to three consumers, each with its own queue, as
//! nextest's runner hands its events to its reporters:
//! - the display, here on this task (it borrows the terminal's display);
//! - the evidence writer ([`EvidenceWriter`]), here too (it only appends);
//! - the log puller ([`StepLogs`]), on a task of its own: a step's pull is a
//!   round trip to the machine, and up to two logs written here, which would
//!   otherwise hold back every event behind it.

use crate::bench::events::{Fanout, Line};
use crate::bench::evidence_writer::EvidenceWriter;
use crate::bench::log_puller::StepLogs;
use crate::bench::progress::Display;
use crate::bench::tail::FollowEnd;
use labrun_evidence::Event;
use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;

/// Runs `produce` (given the consumers' fan-out) with every consumer until
/// it ends and each consumer has taken every line. The log puller is drained
/// too before this returns, so no pull writes into the evidence after it;
/// dropped before (Ctrl-C), the puller is stopped with it.
pub async fn follow<P, F>(
    raw: &Path,
    logs: impl StepLogs,
    display: &mut dyn Display,
    produce: P,
) -> anyhow::Result<FollowEnd>
where
    P: FnOnce(Fanout) -> F,
    F: Future<Output = anyhow::Result<FollowEnd>>,
{
    let mut fan = Fanout::default();
    let shown = fan.subscribe();
    let written = fan.subscribe();
    let pulled = fan.subscribe();
    let writer = EvidenceWriter::open(raw)?;
    let mut puller = AbortOnDrop(tokio::spawn(pull_logs(logs, pulled)));
    let (end, wrote, ()) = tokio::join!(produce(fan), writer.run(written), show(display, shown));
    wrote?;
    let end = end?;
    // The pull task only ends (or panics) by itself: nothing to report.
    let _ = (&mut puller.0).await;
    Ok(end)
}

async fn show(display: &mut dyn Display, mut lines: UnboundedReceiver<Arc<Line>>) {
    while let Some(line) = lines.recv().await {
        if let Some(event) = &line.event {
            display.event(event);
        }
    }
}

async fn pull_logs(logs: impl StepLogs, mut lines: UnboundedReceiver<Arc<Line>>) {
    while let Some(line) = lines.recv().await {
        if let Some(Event::StepFinished { record }) = &line.event {
            logs.pull(record).await;
        }
    }
}

/// A task that ends with its handle: a follow stopped by Ctrl-C leaves no
/// pull behind.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use labrun_evidence::{Step, StepRecord, files};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;
    use tokio::sync::Semaphore;

    /// A log puller whose every pull waits until `open` is given permits:
    /// as slow as a test wants.
    struct Stuck {
        open: Arc<Semaphore>,
        pulled: Arc<AtomicUsize>,
    }

    impl StepLogs for Stuck {
        async fn pull(&self, _: &StepRecord) {
            let _ = self.open.acquire().await.map(|p| p.forget());
            self.pulled.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Shows nothing; keeps what it was shown, and lets the pulls go once
    /// it has seen the run's last event.
    struct Seen {
        events: Vec<Event>,
        open: Arc<Semaphore>,
    }

    impl Display for Seen {
        fn event(&mut self, event: &Event) {
            if matches!(event, Event::RunFinished { .. }) {
                self.open.add_permits(16);
            }
            self.events.push(event.clone());
        }
        fn note(&mut self, _: &str) {}
        fn finish(&mut self) {}
    }

    fn line(event: &Event) -> Line {
        let mut bytes = serde_json::to_vec(event).unwrap();
        bytes.push(b'\n');
        Line::parse(bytes)
    }

    #[tokio::test]
    async fn a_slow_log_pull_does_not_hold_back_the_display() {
        let dir = tempfile::tempdir().unwrap();
        let open = Arc::new(Semaphore::new(0));
        let pulled = Arc::new(AtomicUsize::new(0));
        let logs = Stuck {
            open: open.clone(),
            pulled: pulled.clone(),
        };
        let mut display = Seen {
            events: Vec::new(),
            open,
        };
        let finished = |step| Event::StepFinished {
            record: Box::new(StepRecord::blank("r", "restic", 1, step, 0)),
        };
        let run = [
            finished(Step::INIT),
            finished(Step::BACKUP_FULL),
            Event::RunFinished {
                ok: true,
                stopped_because: None,
            },
        ];
        let lines: Vec<Line> = run.iter().map(line).collect();
        let produce = |fan: Fanout| async move {
            for l in lines {
                fan.send(l);
            }
            Ok(FollowEnd::AgentEnded)
        };
        // Every pull waits until the display has shown the run's end: were
        // the display behind the pulls (the puller inline, as it was), it
        // would never get there and this would time out.
        let end = tokio::time::timeout(
            Duration::from_secs(10),
            follow(dir.path(), logs, &mut display, produce),
        )
        .await
        .expect("the display reached the run's end while the log pulls waited");
        assert!(matches!(end.unwrap(), FollowEnd::AgentEnded));
        assert_eq!(display.events, run);
        // The pulls were drained before `follow` returned, and the writer
        // kept every line and both records.
        assert_eq!(pulled.load(Ordering::SeqCst), 2);
        let events = std::fs::read(dir.path().join(files::EVENTS)).unwrap();
        let expected: Vec<u8> = run.iter().flat_map(|e| line(e).bytes).collect();
        assert_eq!(events, expected);
        let records = std::fs::read_to_string(dir.path().join(files::RECORDS)).unwrap();
        assert_eq!(records.lines().count(), 2);
    }
}
