//! Everything that can stop a report, each with what went wrong and what to do.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(
        "no raw evidence folder at {path}: pass the run folder (results/<run-id>), the one that holds raw/{hint}"
    )]
    NoRawDir { path: PathBuf, hint: &'static str },

    #[error(
        "{path} holds no step records: the run stopped before its first step ended, so there is nothing to summarize; run `labrun bench` again"
    )]
    NoRecords { path: PathBuf },

    #[error(
        "{path} holds {size} bytes of step records, more than the {max} `report` reads: it keeps every record in memory ({per} each), and no labrun run records this much; check that it is a run's records, or summarize a part of it (`head -n 100000` of it into raw/records.jsonl of a copy of the run folder)"
    )]
    RecordsTooLarge {
        path: PathBuf,
        size: u64,
        max: u64,
        per: &'static str,
    },

    #[error(
        "{path} holds more than {max} step records, the most `report` keeps in memory ({per} each), and no labrun run records this many; check that it is a run's records, or summarize a part of it (`head -n 100000` of it into raw/records.jsonl of a copy of the run folder)"
    )]
    TooManyRecords {
        path: PathBuf,
        max: usize,
        per: &'static str,
    },

    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("{0}")]
    Refused(#[from] crate::evidence_file::Refused),

    #[error(
        "{path} line {line} is not a step record ({source}); the evidence is damaged: restore raw/ from the run's copy or re-run `labrun bench`"
    )]
    BadRecord {
        path: PathBuf,
        line: usize,
        source: serde_json::Error,
    },

    #[error(
        "{path} line {line} records {tool} cycle {cycle} step {step} a second time (first at line {first}); a step is recorded once, so one of the two lines was replayed or added: remove the wrong line, or re-run `labrun bench`"
    )]
    DuplicateRecord {
        path: PathBuf,
        line: usize,
        first: usize,
        tool: String,
        cycle: u32,
        step: String,
    },

    #[error(
        "{path} line {line} was written with evidence schema {found}, newer than this labrun understands ({known}); update labrun to read it"
    )]
    NewerSchema {
        path: PathBuf,
        line: usize,
        found: u32,
        known: u32,
    },

    #[error(
        "cannot write {path}: {source}; check that the run folder is writable and the disk is not full"
    )]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error(
        "{path} is not a variants index ({source}); it is written by `labrun bench` for a lab with variants: re-run the bench, or pass one variant's folder (variants/<name>)"
    )]
    BadVariantsIndex {
        path: PathBuf,
        source: serde_json::Error,
    },

    #[error("cannot render {what}: {message}")]
    Render { what: &'static str, message: String },
}

pub type Result<T, E = ReportError> = std::result::Result<T, E>;
