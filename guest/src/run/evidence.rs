//! The evidence directory, written as the run goes: every record appended
//! and fsync'd the moment its step ends, every event streamed on stdout and
//! copied to `events.jsonl`, so a run cut short (signal, full disk, power)
//! keeps everything measured before.
//!
//! Layout (names from `labrun_evidence::files`):
//! `plan.json` (secrets redacted), `records.jsonl`, `events.jsonl`,
//! `manifests/{generated,changed}.jsonl`, `logs/<tool>/c<cycle>-<step>.{out,err}`,
//! and `done.json`, written last and only when the whole plan ran.

use crate::run::error::RunError;
use labrun_evidence::digest::HashingWriter;
use labrun_evidence::{Event, Manifest, Plan, StepRecord, ToolVersions, files};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// The content of `done.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Done {
    pub schema_version: u32,
    pub run_id: String,
    /// Every step of every tool passed.
    pub ok: bool,
    pub records: u64,
    pub failed_steps: u64,
    /// Tool cycles that did not pass every step.
    pub failed_cycles: Vec<FailedCycle>,
    pub finished_unix_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedCycle {
    pub tool: String,
    pub cycle: u32,
}

/// Where one command's output goes, absolute (to write) and relative to the
/// evidence directory (to record).
#[derive(Debug, Clone)]
pub struct LogPaths {
    pub stdout: PathBuf,
    pub stderr: PathBuf,
    pub stdout_rel: String,
    pub stderr_rel: String,
}

pub struct Evidence {
    dir: PathBuf,
    records: File,
    events: File,
    /// Cleared on the first failed write to stdout (the host went away): the
    /// run goes on, and `events.jsonl` still has every event.
    stdout_open: bool,
    /// Echo events on stdout (off in tests that only read the files).
    echo: bool,
    /// This evidence continues a run: the first plan's listings of every
    /// tool's binary digest and version stand (a continuation runs some of
    /// the tools, and checks their pins again all the same).
    continued: bool,
}

impl Evidence {
    /// Creates the evidence directory, which must be new or empty.
    pub fn create(dir: &Path, echo: bool) -> Result<Evidence, RunError> {
        std::fs::create_dir_all(dir)
            .map_err(|e| RunError::io("cannot create evidence directory", dir, e))?;
        let mut entries = std::fs::read_dir(dir)
            .map_err(|e| RunError::io("cannot read evidence directory", dir, e))?;
        if entries.next().is_some() {
            return Err(RunError::EvidenceNotEmpty {
                path: dir.to_path_buf(),
            });
        }
        for sub in [files::LOGS_DIR, files::MANIFESTS_DIR] {
            let p = dir.join(sub);
            std::fs::create_dir(&p)
                .map_err(|e| RunError::io("cannot create evidence directory", &p, e))?;
        }
        Evidence::open(dir, echo, true)
    }

    /// The evidence files opened for appending: new ones for a new run
    /// (`fresh`: two runs' records never mix), a run's own to continue it.
    fn open(dir: &Path, echo: bool, fresh: bool) -> Result<Evidence, RunError> {
        let open = |name: &str| {
            let p = dir.join(name);
            OpenOptions::new()
                .create_new(fresh)
                .create(true)
                .append(true)
                .open(&p)
                .map_err(|e| RunError::io("cannot open evidence file", &p, e))
        };
        Ok(Evidence {
            dir: dir.to_path_buf(),
            records: open(files::RECORDS)?,
            events: open(files::EVENTS)?,
            stdout_open: true,
            echo,
            continued: !fresh,
        })
    }

    /// Opens the evidence of a run that a plan continues (more cycles of
    /// it): what is there is kept and appended to, and its `done.json` goes
    /// until this plan has run too.
    pub fn resume(dir: &Path, echo: bool) -> Result<Evidence, RunError> {
        let records = dir.join(files::RECORDS);
        if !records.is_file() {
            return Err(RunError::NothingToContinue {
                path: dir.to_path_buf(),
            });
        }
        let done = dir.join(files::DONE);
        if done.exists() {
            std::fs::remove_file(&done)
                .map_err(|e| RunError::io("cannot remove the finished marker", &done, e))?;
        }
        Evidence::open(dir, echo, false)
    }

    /// `plan.json`: the plan as run, every secret value replaced. A plan
    /// that continues a run goes beside the first one
    /// (`plan-from-cycle-N.json`), which stays the run's plan.
    pub fn write_plan(&self, plan: &Plan) -> Result<(), RunError> {
        let mut redacted = plan.clone();
        redacted.tools = plan.tools.iter().map(|t| t.redacted()).collect();
        if plan.continues() {
            let name = files::continued_plan(plan.first_cycle);
            return self.write_json(&name, &redacted);
        }
        self.write_json(files::PLAN, &redacted)
    }

    pub fn write_done(&self, done: &Done) -> Result<(), RunError> {
        self.write_json(files::DONE, done)
    }

    /// `binary-sha256.txt`: [`crate::run::plan_check::check_binaries`]'s listing.
    pub fn write_binary_digests(&self, listing: &str) -> Result<(), RunError> {
        if self.continued {
            return Ok(());
        }
        self.write_whole(files::BINARY_DIGESTS, |f| f.write_all(listing.as_bytes()))
    }

    /// `storage.json`: the storage network and server as measured.
    pub fn write_storage(&self, record: &labrun_evidence::StorageRecord) -> Result<(), RunError> {
        self.write_json(labrun_evidence::storage::STORAGE_FILE, record)
    }

    pub fn write_tool_versions(&self, versions: &ToolVersions) -> Result<(), RunError> {
        if self.continued {
            return Ok(());
        }
        self.write_json(files::TOOL_VERSIONS, versions)
    }

    fn write_json(&self, name: &str, value: &impl Serialize) -> Result<(), RunError> {
        self.write_whole(name, |f| {
            serde_json::to_writer_pretty(&mut *f, value)?;
            f.write_all(b"\n")
        })
    }

    /// Written whole or not at all (temp file, fsync, rename): `done.json`
    /// present must mean the run finished, even on a disk that filled up.
    fn write_whole(
        &self,
        name: &str,
        content: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
    ) -> Result<(), RunError> {
        let path = self.dir.join(name);
        let tmp = self.dir.join(format!(".{name}.tmp"));
        let write = || -> io::Result<()> {
            let mut f = BufWriter::new(File::create(&tmp)?);
            content(&mut f)?;
            f.into_inner().map_err(|e| e.into_error())?.sync_all()?;
            std::fs::rename(&tmp, &path)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            RunError::io("cannot write evidence file", &path, e)
        })
    }

    /// Appends the record (fsync'd before returning), then tells the host.
    pub fn append_record(&mut self, record: &StepRecord) -> Result<(), RunError> {
        let path = self.dir.join(files::RECORDS);
        let line = json_line(record);
        let write = |f: &mut File| -> io::Result<()> {
            f.write_all(&line)?;
            f.sync_data()
        };
        write(&mut self.records)
            .map_err(|e| RunError::io("cannot write evidence file", &path, e))?;
        self.emit(&Event::StepFinished {
            record: Box::new(record.clone()),
        })
    }

    /// One event: a line on stdout (flushed) and in `events.jsonl`.
    pub fn emit(&mut self, event: &Event) -> Result<(), RunError> {
        let line = json_line(event);
        if self.echo && self.stdout_open {
            let mut out = io::stdout().lock();
            if out.write_all(&line).and_then(|()| out.flush()).is_err() {
                self.stdout_open = false;
            }
        }
        let path = self.dir.join(files::EVENTS);
        // One write per line: a reader never sees half an event.
        self.events
            .write_all(&line)
            .map_err(|e| RunError::io("cannot write evidence file", &path, e))
    }

    /// Writes a held manifest to `path` (one of `manifest_path`'s); returns
    /// the SHA-256 of its bytes, so two manifests can be compared without
    /// holding either in memory.
    pub fn write_manifest(&self, path: &Path, manifest: &Manifest) -> Result<String, RunError> {
        let write = || -> io::Result<String> {
            let file = File::create(path)?;
            let mut w = HashingWriter::new(BufWriter::new(file));
            manifest.write_to(&mut w)?;
            let (inner, digest) = w.finish();
            inner.into_inner().map_err(|e| e.into_error())?.sync_all()?;
            Ok(digest)
        };
        write().map_err(|e| RunError::io("cannot write evidence file", path, e))
    }

    /// The regular files a manifest lists and their bytes, read as it
    /// comes: a tree of millions of files is never held to count it.
    pub fn count_manifest(&self, name: &str) -> Result<(u64, u64), RunError> {
        let path = self.manifest_path(name);
        let count = || -> io::Result<(u64, u64)> {
            let reader =
                labrun_evidence::ManifestReader::new(io::BufReader::new(File::open(&path)?))?;
            let (mut files, mut bytes) = (0, 0);
            for e in reader {
                let e = e?;
                if e.kind == labrun_evidence::EntryKind::File {
                    files += 1;
                    bytes += e.size;
                }
            }
            Ok((files, bytes))
        };
        count().map_err(|e| RunError::io("cannot read manifest", &path, e))
    }

    pub fn manifest_path(&self, name: &str) -> PathBuf {
        self.dir
            .join(files::MANIFESTS_DIR)
            .join(format!("{name}.jsonl"))
    }

    /// A path a record gives (relative to the evidence folder), on disk.
    pub fn path_of(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    /// `logs/<tool>/<label>.out|.err`, creating the tool's folder.
    pub fn log_paths(&self, tool: &str, label: &str) -> Result<LogPaths, RunError> {
        let rel_dir = format!("{}/{tool}", files::LOGS_DIR);
        let abs_dir = self.dir.join(&rel_dir);
        std::fs::create_dir_all(&abs_dir)
            .map_err(|e| RunError::io("cannot create evidence directory", &abs_dir, e))?;
        Ok(LogPaths {
            stdout: abs_dir.join(format!("{label}.out")),
            stderr: abs_dir.join(format!("{label}.err")),
            stdout_rel: format!("{rel_dir}/{label}.out"),
            stderr_rel: format!("{rel_dir}/{label}.err"),
        })
    }
}

fn json_line(value: &impl Serialize) -> Vec<u8> {
    // Serializing these plain structs (strings, numbers, no maps with
    // non-string keys) cannot fail; an empty object keeps the line valid JSON
    // if it somehow did.
    let mut line = serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec());
    line.push(b'\n');
    line
}

pub fn unix_ms_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A record with the fields every step shares filled in.
pub fn blank_record(
    run_id: &str,
    tool: &str,
    cycle: u32,
    step: labrun_evidence::Step,
) -> StepRecord {
    StepRecord::blank(run_id, tool, cycle, step, unix_ms_now())
}

#[cfg(test)]
mod tests {
    use super::*;
    use labrun_evidence::{EntryKind, ManifestEntry, Step};

    #[test]
    fn a_continuation_appends_to_its_runs_evidence_and_only_to_one() {
        let dir = tempfile::tempdir().unwrap();
        let empty = Evidence::resume(dir.path(), false).err().unwrap();
        assert!(
            matches!(empty, RunError::NothingToContinue { .. }),
            "{empty}"
        );
        let ev_dir = dir.path().join("ev");
        let mut first = Evidence::create(&ev_dir, false).unwrap();
        first
            .append_record(&blank_record("r", "t", 1, Step::INIT))
            .unwrap();
        std::fs::write(ev_dir.join(files::DONE), "{}").unwrap();
        drop(first);
        let mut more = Evidence::resume(&ev_dir, false).unwrap();
        more.append_record(&blank_record("r", "t", 2, Step::INIT))
            .unwrap();
        let text = std::fs::read_to_string(ev_dir.join(files::RECORDS)).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        // Not done again until the continuation has run.
        assert!(!ev_dir.join(files::DONE).exists());
        // The first plan's listings of every tool stand.
        more.write_tool_versions(&ToolVersions::new()).unwrap();
        assert!(!ev_dir.join(files::TOOL_VERSIONS).exists());
    }

    #[test]
    fn refuses_a_directory_with_earlier_evidence() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("records.jsonl"), "{}\n").unwrap();
        let err = Evidence::create(dir.path(), false).err().unwrap();
        assert!(matches!(err, RunError::EvidenceNotEmpty { .. }), "{err}");
    }

    #[test]
    fn records_and_events_are_json_lines_on_disk_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let ev_dir = dir.path().join("ev");
        let mut ev = Evidence::create(&ev_dir, false).unwrap();
        let mut r = blank_record("run", "restic", 1, Step::INIT);
        r.ok = true;
        ev.append_record(&r).unwrap();
        ev.emit(&Event::Warning {
            message: "w".into(),
        })
        .unwrap();
        // Read back while `ev` is still open: nothing waits in a buffer.
        let records = std::fs::read_to_string(ev_dir.join(files::RECORDS)).unwrap();
        let back: StepRecord = serde_json::from_str(records.lines().next().unwrap()).unwrap();
        assert_eq!(back, r);
        let events = std::fs::read_to_string(ev_dir.join(files::EVENTS)).unwrap();
        let events: Vec<Event> = events
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(events.len(), 2);
        assert!(matches!(&events[0], Event::StepFinished { record } if **record == r));
    }

    #[test]
    fn a_written_manifest_s_digest_is_of_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let ev = Evidence::create(dir.path(), false).unwrap();
        let m = Manifest {
            entries: vec![ManifestEntry {
                path: "a".into(),
                kind: EntryKind::File,
                size: 1,
                mode: 0o644,
                sha256: "ab".repeat(32),
                ..ManifestEntry::default()
            }],
        };
        let digest = ev
            .write_manifest(&ev.manifest_path("generated"), &m)
            .unwrap();
        let bytes = std::fs::read(ev.manifest_path("generated")).unwrap();
        assert_eq!(digest, labrun_evidence::digest::sha256_hex(&bytes));
        assert_eq!(
            labrun_dataset::read_manifest(&ev.manifest_path("generated")).unwrap(),
            m
        );
        assert_eq!(ev.count_manifest("generated").unwrap(), (1, 1));
        let logs = ev.log_paths("restic", "c1-init").unwrap();
        assert_eq!(logs.stdout_rel, "logs/restic/c1-init.out");
        assert!(logs.stderr.parent().unwrap().is_dir());
    }
}
