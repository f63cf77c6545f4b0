//! Everything that stops `labrun-agent run` before or during a run, each with
//! what went wrong and what to do about it. A tool failing is not here: that
//! is a measured result, recorded as evidence, not an error of the agent.

use std::io;
use std::path::PathBuf;

/// A plan the agent refuses to run. Pure checks: no file system access.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PlanError {
    #[error(
        "the plan has schema_version {found} but this agent reads version {expected}: write the plan with a matching labrun, or push the matching agent"
    )]
    SchemaVersion { found: u64, expected: u32 },
    #[error("the plan has no numeric `schema_version` field: is this a labrun plan?")]
    NoSchemaVersion,
    #[error("`cycles` is 0: a run needs at least one cycle")]
    NoCycles,
    #[error("`tools` is empty: name at least one tool to run")]
    NoTools,
    #[error(
        "{what} {name:?} may only use letters, digits, '.', '_' and '-' (at most 128, not starting with '.' or '-'): it names folders and log files"
    )]
    BadName { what: &'static str, name: String },
    #[error(
        "tool name {0:?} must be a plain name (letters, digits, '.', '_' and '-', at most 64, not starting with '.' or '-') or two joined by '@' (`restic@0.14.0`): it names folders and log files"
    )]
    BadToolName(String),
    #[error("tool {0:?} appears twice: tool names must be unique")]
    DuplicateTool(String),
    #[error("tool {tool:?}: `binary` {path:?} must be an absolute path")]
    RelativeBinary { tool: String, path: String },
    #[error("tool {tool:?}: command `{command}` has an empty argv")]
    EmptyArgv { tool: String, command: String },
    #[error("tool {tool:?}: snapshot_id_pattern `{pattern}`: {why}")]
    BadSnapshotIdPattern {
        tool: String,
        pattern: String,
        why: String,
    },
    #[error(
        "tool {tool:?}: command `{command}` uses unknown placeholder {{{name}}}; known: {{bin}} {{repo}} {{source}} {{target}} {{snapshot}} {{work}} {{repo_path}} {{repo_host}} {{repo_port}} {{repo_user}} {{repo_url}} {{ssh_config}} {{ssh_key}} {{known_hosts}}"
    )]
    UnknownPlaceholder {
        tool: String,
        command: String,
        name: String,
    },
    #[error(
        "tool {tool:?}: {what} contains a NUL byte, which no command line or environment can carry"
    )]
    NulByte { tool: String, what: String },
    #[error("tool {tool:?}: environment variable name {name:?} is empty or contains '='")]
    BadEnvName { tool: String, name: String },
    #[error(
        "tool {tool:?}: secret_env names {name:?}, which is not in the tool's env: add it to env or remove it from secret_env"
    )]
    SecretNotInEnv { tool: String, name: String },
    #[error(
        "tool {tool:?}: secret {name:?} is empty: an empty secret cannot be kept out of evidence"
    )]
    EmptySecret { tool: String, name: String },
    #[error(
        "tool {tool:?}: the value of secret {name:?} appears in command `{command}`: pass secrets through the environment only"
    )]
    SecretInCommand {
        tool: String,
        name: String,
        command: String,
    },
    #[error("{at}: {message}")]
    Protocol { at: String, message: String },
    #[error("dataset scale {0} must be a finite number above 0")]
    BadScale(f64),
    #[error("`step_timeout_secs` is 0: leave it out for no timeout, or give a number of seconds")]
    ZeroTimeout,
    #[error("git-history dataset: {0}")]
    BadHistory(String),
    #[error("real-tree dataset: {0}")]
    BadTree(String),
    #[error("storage: {0}")]
    Storage(String),
    #[error(
        "tool {tool:?}: `repo` {form:?} uses {{repo}}, which is what it defines: name the repository with {{repo_path}} {{repo_host}} {{repo_user}} {{repo_url}} ..."
    )]
    RepoFormUsesRepo { tool: String, form: String },
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot read the plan {path}: {source}")]
    ReadPlan { path: PathBuf, source: io::Error },
    #[error("the plan {path} is not valid: {message}")]
    ParsePlan { path: PathBuf, message: String },
    // Not a `source`: the message says it already (`{:#}` would say it twice).
    #[error("the plan {path} cannot be run: {problem}")]
    Plan { path: PathBuf, problem: PlanError },
    /// `tool` says whose binary: `tool "restic"`, `the storage server`.
    #[error(
        "{tool}: binary {path} {problem}: install it there (or fix `binary` in the plan) before running"
    )]
    Binary {
        tool: String,
        path: PathBuf,
        problem: String,
    },
    #[error(
        "{tool}: binary {path} has SHA-256 {actual}, the plan expects {expected}: the installed binary is not the pinned one; reinstall it"
    )]
    BinaryDigest {
        tool: String,
        path: PathBuf,
        expected: String,
        actual: String,
    },
    #[error(
        "the evidence directory {path} is not empty: give an empty or new directory, so records of two runs never mix"
    )]
    EvidenceNotEmpty { path: PathBuf },
    #[error(
        "the plan continues a run (its first_cycle is above 1), but {path} holds no records of one: continue a run in its own evidence directory, or start at cycle 1"
    )]
    NothingToContinue { path: PathBuf },
    #[error(
        "the work directory {path} already exists: remove it (a previous run with the same run_id left it) or use another run_id"
    )]
    WorkExists { path: PathBuf },
    #[error("{action} {path}: {}", describe_io(source))]
    Io {
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error(
        "the evidence directory {evidence} and the work tree {work} overlap: the work tree is deleted at the end, and evidence must stay small; give two separate directories"
    )]
    Overlap { work: PathBuf, evidence: PathBuf },
    #[error("{}", another_agent(lock, run_id.as_deref(), *pid))]
    AnotherAgent {
        lock: PathBuf,
        run_id: Option<String>,
        pid: Option<u32>,
    },
    #[error(
        "not enough free space in {dir}: the run needs about {} ({needed} bytes: the {} ({dataset} bytes) dataset up to {} times over, as the generated tree, a source copy, a repository and a restore{}), and {} ({free} bytes) is free; run with a smaller --scale (the dataset grows with it), or give the machine a bigger disk (`vm.disk` in the lab)",
        gb(*needed),
        gb(*dataset),
        crate::run::space::WORST_CASE_DATASETS,
        holes_written(*holes),
        gb(*free)
    )]
    NotEnoughSpace {
        dir: PathBuf,
        dataset: u64,
        /// Holes of a sparse file, which a restore may write as zeros.
        holes: u64,
        needed: u64,
        free: u64,
    },
    #[error(
        "not enough memory for the tree: it holds {files} files, and the agent keeps about {per_file} bytes per file of a real tree in memory (about {}), while this machine has {} available; give the machine more memory (`vm.memory` in the lab), or take a seeded sample of the files (`sample: {{fraction: {fraction}}}` under `dataset:` fits)",
        gb(*needed),
        gb(*available)
    )]
    NotEnoughMemory {
        files: u64,
        needed: u64,
        available: u64,
        per_file: u64,
        /// A sample's share of the files that would fit.
        fraction: f64,
    },
    #[error("cannot install the SIGTERM/SIGINT handler: {0}")]
    Signals(io::Error),
    #[error("dataset {phase} failed: {message}")]
    Dataset {
        phase: &'static str,
        message: String,
    },
    // Not a `source` (see `Plan`): the message says it already.
    #[error("storage network: {0}")]
    Storage(crate::run::storage::StorageError),
}

impl From<crate::run::storage::StorageError> for RunError {
    fn from(e: crate::run::storage::StorageError) -> RunError {
        RunError::Storage(e)
    }
}

impl RunError {
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> RunError {
        RunError::Io {
            action,
            path: path.into(),
            source,
        }
    }
}

fn another_agent(lock: &std::path::Path, run_id: Option<&str>, pid: Option<u32>) -> String {
    let who = match (run_id, pid) {
        (Some(run), Some(pid)) => format!("run {run}, pid {pid}"),
        _ => "its marker unreadable".to_string(),
    };
    let attach = run_id.map_or_else(
        || "`labrun bench --attach`".to_string(),
        |run| format!("`labrun bench --attach {run}`"),
    );
    let stop = pid.map_or_else(String::new, |pid| format!(", or stop it with `kill {pid}`"));
    format!(
        "another labrun-agent is running on this machine ({who}; it holds {}): two runs at once would skew each other's figures; wait for it, follow it with {attach}{stop}",
        lock.display()
    )
}

/// The restore's extra bytes for a sparse file's holes, when there are any.
fn holes_written(holes: u64) -> String {
    if holes == 0 {
        String::new()
    } else {
        format!(", plus {} of holes a restore may write as zeros", gb(holes))
    }
}

fn gb(bytes: u64) -> String {
    labrun_evidence::human::bytes(bytes as f64)
}

/// Turns the error a user can act on into words: a full disk is the common
/// case on a VM sized for one dataset.
pub fn describe_io(e: &io::Error) -> String {
    if e.kind() == io::ErrorKind::StorageFull || e.raw_os_error() == Some(libc::ENOSPC) {
        "the disk is full: free space on that file system (or give the VM a bigger disk) and run again; evidence written so far is kept".to_string()
    } else {
        e.to_string()
    }
}
