//! The evidence writer: one consumer of a followed run's events. Each line
//! is appended to the host's `events.jsonl` as it came (its length is where
//! `--attach` resumes the stream), and a finished step's record, which
//! arrives in its event, to `records.jsonl`: the host holds every figure
//! measured so far even if the connection is lost.

use crate::bench::events::Line;
use labrun_evidence::{Event, StepRecord, files};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedReceiver;

pub struct EvidenceWriter {
    raw: PathBuf,
    events: File,
}

impl EvidenceWriter {
    /// Appends to the evidence under `raw` (made if missing).
    pub fn open(raw: &Path) -> anyhow::Result<EvidenceWriter> {
        std::fs::create_dir_all(raw.join(files::LOGS_DIR))?;
        let events = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(raw.join(files::EVENTS))?;
        Ok(EvidenceWriter {
            raw: raw.to_path_buf(),
            events,
        })
    }

    /// Writes every line of `lines` until the producer is done. A failure to
    /// write the events ends it (the host's copy would have a gap); a record
    /// that cannot be appended does not (the final pull brings it).
    pub async fn run(mut self, mut lines: UnboundedReceiver<Arc<Line>>) -> anyhow::Result<()> {
        while let Some(line) = lines.recv().await {
            self.events.write_all(&line.bytes)?;
            self.events.flush()?;
            if let Some(Event::StepFinished { record }) = &line.event {
                let _ = self.append_record(record);
            }
        }
        Ok(())
    }

    fn append_record(&self, record: &StepRecord) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(record)?;
        line.push(b'\n');
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.raw.join(files::RECORDS))?;
        f.write_all(&line)
    }
}
