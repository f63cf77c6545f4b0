//! Evidence records: one per step, appended to `records.jsonl` as it ends.

use crate::step::Step;
use serde::{Deserialize, Serialize};

/// What one step did and cost. Times in seconds, memory in KiB as
/// `/usr/bin/time -v` reports "Maximum resident set size".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    pub schema_version: u32,
    pub run_id: String,
    /// Empty for steps that belong to no tool (dataset generation).
    pub tool: String,
    /// 1-based.
    pub cycle: u32,
    pub step: Step,
    /// Position of the tool in this cycle's (rotated) order, 0-based.
    #[serde(default)]
    pub order: u32,
    /// The argv as run, placeholders substituted (never contains secrets).
    #[serde(default)]
    pub argv: Vec<String>,
    /// Unix time in milliseconds when the step started.
    pub started_unix_ms: u64,
    pub wall_secs: f64,
    #[serde(default)]
    pub user_secs: f64,
    #[serde(default)]
    pub sys_secs: f64,
    #[serde(default)]
    pub max_rss_kib: u64,
    #[serde(default)]
    pub exit: Option<ExitStatus>,
    /// True when the step did what it should (exit 0, restore verified...).
    pub ok: bool,
    pub timed: bool,
    /// `sync` + `drop_caches` happened right before this step.
    pub cache_dropped: bool,
    /// After the cache drop, `fstrim` of the file system the run works on
    /// and what it answered (absent: no cache drop, or a record from
    /// before trimming).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trim: Option<Trim>,
    /// Seconds the agent waited before the step, the lab's `cooldown`
    /// (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown_secs: Option<u64>,
    /// Relative to the evidence directory.
    #[serde(default)]
    pub stdout_path: Option<String>,
    #[serde(default)]
    pub stderr_path: Option<String>,
    /// Repository size on disk after this step (backups and init).
    #[serde(default)]
    pub repo_size_bytes: Option<u64>,
    /// Snapshot id or label this step made or restored.
    #[serde(default)]
    pub snapshot: Option<String>,
    /// Outcome of the checksum comparison (restore and verify steps).
    #[serde(default)]
    pub verify: Option<VerifyOutcome>,
    /// Bytes and files the step handled (generation, change).
    #[serde(default)]
    pub bytes: Option<u64>,
    #[serde(default)]
    pub files: Option<u64>,
    /// A human-readable reason when `ok` is false.
    #[serde(default)]
    pub error: Option<String>,
    /// The step's whole process tree, from a cgroup of its own (timed tool
    /// steps). `max_rss_kib` above stays the largest single process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<TreeMeters>,
    /// A step the protocol kills on purpose (an interrupted backup): when,
    /// and whether it was still running then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_kill: Option<PlannedKill>,
    /// The protocol lets this step fail (`may_fail`): a failure is
    /// recorded (`ok: false`) but does not end the cycle or fail the run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub may_fail: bool,
    /// The kernel's OOM killer killed a process of this step: what it
    /// killed and how the agent knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oom: Option<OomKill>,
    /// Git-history runs only: which snapshot of the series this step made,
    /// moved the tree to, restored or verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<HistoryPoint>,
    /// A timed step that wrote (a backup, a restore): the `syncfs` of the
    /// file system it wrote, timed after it, so a tool that leaves its
    /// writes in the page cache pays for them (absent: a step that writes
    /// nothing, or a record from before flushes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush: Option<Flush>,
}

impl StepRecord {
    /// A record of `step` with nothing measured yet: not ok, untimed, no
    /// figures. The agent starts every record from this.
    pub fn blank(
        run_id: &str,
        tool: &str,
        cycle: u32,
        step: Step,
        started_unix_ms: u64,
    ) -> StepRecord {
        StepRecord {
            schema_version: crate::SCHEMA_VERSION,
            run_id: run_id.to_string(),
            tool: tool.to_string(),
            cycle,
            step,
            order: 0,
            argv: Vec::new(),
            started_unix_ms,
            wall_secs: 0.0,
            user_secs: 0.0,
            sys_secs: 0.0,
            max_rss_kib: 0,
            exit: None,
            ok: false,
            timed: false,
            cache_dropped: false,
            trim: None,
            cooldown_secs: None,
            stdout_path: None,
            stderr_path: None,
            repo_size_bytes: None,
            snapshot: None,
            verify: None,
            bytes: None,
            files: None,
            error: None,
            tree: None,
            planned_kill: None,
            may_fail: false,
            oom: None,
            history: None,
            flush: None,
        }
    }
}

/// The flush after a timed step that wrote: what it left unwritten and how
/// long the kernel took to put it on disk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flush {
    /// The folder whose file system was flushed (the repository after a
    /// backup, the restore target after a restore).
    pub path: String,
    /// Seconds `syncfs` took.
    pub secs: f64,
    /// Dirty + Writeback of `/proc/meminfo` just before the flush, in
    /// bytes: what the step left for the kernel to write (None: the
    /// kernel did not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unwritten_bytes: Option<u64>,
}

impl StepRecord {
    /// The step and its flush: the time until its data was on disk (None:
    /// no flush was measured).
    pub fn durable_secs(&self) -> Option<f64> {
        self.flush.as_ref().map(|f| self.wall_secs + f.secs)
    }
}

/// `fstrim -v` of the work file system before a timed step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trim {
    /// The file system's mount point.
    pub mount: String,
    pub outcome: TrimOutcome,
}

/// What `fstrim` answered. Only `failed` is a problem; a file system or
/// disk without discard is a fact about the machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TrimOutcome {
    /// Done; the bytes it reported (None when its output had none).
    Trimmed { bytes: Option<u64> },
    /// The file system or its disk does not pass discards on.
    NotSupported { detail: String },
    /// fstrim did not run here (not installed, not root), and why.
    NotRun { reason: String },
    /// It ran and failed otherwise.
    Failed { reason: String },
}

/// A process of a step killed by the kernel's OOM killer (the machine or
/// the step's cgroup ran out of memory). The evidence, each part optional:
/// the step's cgroup counted the kill (`memory.events` `oom_kill`), the
/// kernel's log named the process, the tool itself died of SIGKILL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OomKill {
    /// The killed process's name and pid, as the kernel's log gives them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub victim: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// `oom_kill` of the step cgroup's `memory.events`: kills in its tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup_oom_kills: Option<u64>,
    /// The kernel's log lines about the kill (`/dev/kmsg`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel_log: Vec<String>,
    /// The tool's own process died of SIGKILL (not the agent's timeout).
    pub tool_sigkilled: bool,
}

impl OomKill {
    /// `restic, pid 1234; cgroup memory.events oom_kill 1, kernel log`:
    /// what was killed and which evidence says so.
    pub fn describe(&self) -> String {
        let mut sources = Vec::new();
        if let Some(n) = self.cgroup_oom_kills {
            sources.push(format!("cgroup memory.events oom_kill {n}"));
        }
        if !self.kernel_log.is_empty() {
            sources.push("kernel log".to_string());
        }
        if self.tool_sigkilled {
            sources.push("the tool died of SIGKILL".to_string());
        }
        let who = match (&self.victim, self.pid) {
            (Some(v), Some(p)) => format!("{v}, pid {p}; "),
            (Some(v), None) => format!("{v}; "),
            (None, Some(p)) => format!("pid {p}; "),
            (None, None) => String::new(),
        };
        format!("{who}{}", sources.join(", "))
    }
}

/// A kill the protocol asked for (`kill_after_secs` or `kill_after`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedKill {
    pub after_secs: f64,
    /// False: the tool finished before the kill point.
    pub killed: bool,
    /// Where `after_secs` came from, for a kill at a fraction of an
    /// earlier step's time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fraction_of: Option<KillFraction>,
}

/// `after_secs` = `fraction` × the wall time of `step` in this tool cycle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KillFraction {
    pub step: Step,
    pub fraction: f64,
    pub step_wall_secs: f64,
}

/// What a timed step's whole process tree used, from the cgroup (v2) the
/// agent ran it in: everything it started counts, including processes that
/// left its process group or session (duplicity's `gpg-agent`). A figure is
/// `None` where this kernel or cgroup does not offer it; `unavailable` says
/// why there are no tree figures at all.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TreeMeters {
    /// The cgroup the step ran in, or why it could not have one.
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
    /// `cpu.stat` user and system time of every process of the tree.
    #[serde(default)]
    pub user_secs: Option<f64>,
    #[serde(default)]
    pub sys_secs: Option<f64>,
    /// Peak of the tree's resident memory: `anon` + `file_mapped` of
    /// `memory.stat` (what the processes' RSS add up to), sampled every
    /// [`TreeMeters::SAMPLE_MS`] ms in the first [`TreeMeters::FAST_SECS`],
    /// every [`TreeMeters::SLOW_SAMPLE_MS`] after, and at the end.
    #[serde(default)]
    pub resident_peak_bytes: Option<u64>,
    /// `memory.peak`: everything the kernel charged to the tree at its
    /// peak, page cache of the files it read and wrote included. An upper
    /// bound, not comparable with RSS.
    #[serde(default)]
    pub charged_peak_bytes: Option<u64>,
    /// `io.stat` bytes read from and written to block devices.
    #[serde(default)]
    pub disk_read_bytes: Option<u64>,
    #[serde(default)]
    pub disk_write_bytes: Option<u64>,
    /// Most processes alive at once (`pids.peak`, else the samples' peak).
    #[serde(default)]
    pub processes_peak: Option<u64>,
    /// Names of the processes still in the cgroup once the command had
    /// ended: the agent killed them, so nothing outlives its step.
    #[serde(default)]
    pub leftovers: Vec<String>,
    /// The agent's own CPU while the step ran (its sampling included).
    #[serde(default)]
    pub agent_cpu_secs: f64,
    /// The sampler's part of `agent_cpu_secs` (its thread's CPU clock);
    /// absent from agents before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampler_cpu_secs: Option<f64>,
    /// Samples taken; their once-a-second rows are in `timeline_path`
    /// (relative to the evidence directory).
    #[serde(default)]
    pub samples: u64,
    #[serde(default)]
    pub timeline_path: Option<String>,
}

impl TreeMeters {
    /// How often the memory peak is sampled in a step's first
    /// [`TreeMeters::FAST_SECS`] (a short step's peak is short too)...
    pub const SAMPLE_MS: u64 = 250;
    pub const FAST_SECS: u64 = 5;
    /// ...and after them: each sample costs the agent CPU (several ms
    /// under TCG), and a long step's peak lasts.
    pub const SLOW_SAMPLE_MS: u64 = 1000;
    /// One timeline row (every figure read) at most this often; the
    /// samples between read only what the peaks need.
    pub const ROW_MS: u64 = 1000;

    /// Tree figures that could not be taken, and why.
    pub fn unavailable(source: impl Into<String>, why: impl Into<String>) -> TreeMeters {
        TreeMeters {
            source: source.into(),
            unavailable: Some(why.into()),
            ..TreeMeters::default()
        }
    }
}

/// One row of a step's timeline (`*.timeline.jsonl`): the tree's state at
/// `t_secs` after the command started.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TimelineRow {
    pub t_secs: f64,
    #[serde(default)]
    pub resident_bytes: Option<u64>,
    #[serde(default)]
    pub charged_bytes: Option<u64>,
    /// Cumulative user + system CPU of the tree.
    #[serde(default)]
    pub cpu_secs: Option<f64>,
    #[serde(default)]
    pub disk_read_bytes: Option<u64>,
    #[serde(default)]
    pub disk_write_bytes: Option<u64>,
    #[serde(default)]
    pub processes: Option<u64>,
}

/// A point of a git-history series.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryPoint {
    /// 1-based position in the series: snapshot `index` holds commit `index`.
    pub index: u32,
    /// The commit id (or the synthetic history's label, e.g. `gen-3`).
    pub commit: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitStatus {
    pub code: Option<i32>,
    /// Set when the process was killed by a signal.
    pub signal: Option<i32>,
}

impl ExitStatus {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

/// Result of comparing a tree with a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct VerifyOutcome {
    pub passed: bool,
    pub files_checked: u64,
    pub bytes_checked: u64,
    pub missing: u64,
    pub extra: u64,
    pub changed: u64,
    /// The first differences, e.g. `changed: large/random-0.bin`, at most 20.
    pub first_differences: Vec<String>,
    /// What a metadata-fidelity check found, one entry per kind, in the
    /// order of [`MetadataKind::ALL`]. Informative: `passed` is about
    /// content only. Empty (and left out of the JSON) for content-only
    /// verifies, so their records read as they always have.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metadata: Vec<MetadataCheck>,
    /// A restore over an older tree (`over:`): what the tool did with the
    /// files the older tree had and the restored snapshot does not. Left
    /// out of the JSON for a restore into an empty target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub older_files: Option<OlderFiles>,
}

/// What a restore over an older tree left of the files only that tree had:
/// a tool's documented mode decides (borg's `extract` never deletes), so
/// keeping them is reported, not failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OlderFiles {
    /// Every file of the restored snapshot is right and none else is left.
    Removed,
    /// Every file of the restored snapshot is right; the older tree's extra
    /// files are still there (`extra` counts them).
    Kept,
}

/// One kind of metadata a copy or restore may keep or lose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetadataKind {
    /// Permission bits of files and directories.
    Mode,
    /// Modification times of files, to the nanosecond.
    Mtime,
    /// Modification times of directories (set after their contents).
    DirMtime,
    /// Symlinks stay symlinks, with the same target (dangling ones too).
    Symlink,
    /// Names that were one inode are still one inode, and only those.
    Hardlink,
    /// Directories with nothing but directories in them.
    EmptyDir,
    /// A sparse file's holes stay holes.
    Sparse,
    /// Names with spaces and non-ASCII characters, byte for byte.
    UnicodeName,
    /// `user.` extended attributes.
    Xattr,
}

impl MetadataKind {
    pub const ALL: [MetadataKind; 9] = [
        MetadataKind::Mode,
        MetadataKind::Mtime,
        MetadataKind::DirMtime,
        MetadataKind::Symlink,
        MetadataKind::Hardlink,
        MetadataKind::EmptyDir,
        MetadataKind::Sparse,
        MetadataKind::UnicodeName,
        MetadataKind::Xattr,
    ];

    /// The name used in JSON, e.g. `dir_mtime`.
    pub fn name(self) -> &'static str {
        match self {
            MetadataKind::Mode => "mode",
            MetadataKind::Mtime => "mtime",
            MetadataKind::DirMtime => "dir_mtime",
            MetadataKind::Symlink => "symlink",
            MetadataKind::Hardlink => "hardlink",
            MetadataKind::EmptyDir => "empty_dir",
            MetadataKind::Sparse => "sparse",
            MetadataKind::UnicodeName => "unicode_name",
            MetadataKind::Xattr => "xattr",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetadataStatus {
    /// Every entry that could show it kept it.
    Preserved,
    /// At least one entry lost it; the detail names the first.
    Lost,
    /// The expected tree has nothing that shows this kind (e.g. the
    /// filesystem the fixture was written on refused xattrs).
    NotTested,
}

/// The verdict on one kind of metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetadataCheck {
    pub kind: MetadataKind,
    pub status: MetadataStatus,
    /// What was compared, the first loss (`shared.txt: mode 0664 -> 0644,
    /// 1 of 14 entries`) or why the kind was not tested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trim_and_cooldown_stay_out_of_old_records_and_read_back() {
        let rec = StepRecord::blank("r", "restic", 1, Step::BACKUP_FULL, 0);
        let json = serde_json::to_string(&rec).unwrap();
        assert!(
            !json.contains("trim") && !json.contains("cooldown"),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<StepRecord>(&json).unwrap(), rec);
        let rec = StepRecord {
            trim: Some(Trim {
                mount: "/".into(),
                outcome: TrimOutcome::NotSupported {
                    detail: "fstrim: /: the discard operation is not supported".into(),
                },
            }),
            cooldown_secs: Some(30),
            ..rec
        };
        let json = serde_json::to_string(&rec).unwrap();
        assert!(
            json.contains(r#""trim":{"mount":"/","outcome":{"kind":"not_supported","detail":"#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<StepRecord>(&json).unwrap(), rec);
    }

    #[test]
    fn a_content_only_outcome_serializes_as_before() {
        let out = VerifyOutcome {
            passed: false,
            files_checked: 3,
            bytes_checked: 10,
            changed: 1,
            first_differences: vec!["changed: a".into()],
            ..VerifyOutcome::default()
        };
        // The JSON of a VerifyOutcome before `metadata` existed.
        let old = r#"{"passed":false,"files_checked":3,"bytes_checked":10,"missing":0,"extra":0,"changed":1,"first_differences":["changed: a"]}"#;
        assert_eq!(serde_json::to_string(&out).unwrap(), old);
        assert_eq!(serde_json::from_str::<VerifyOutcome>(old).unwrap(), out);
    }

    #[test]
    fn metadata_checks_use_snake_case_names() {
        let out = VerifyOutcome {
            passed: true,
            metadata: vec![
                MetadataCheck {
                    kind: MetadataKind::DirMtime,
                    status: MetadataStatus::NotTested,
                    detail: None,
                },
                MetadataCheck {
                    kind: MetadataKind::Mode,
                    status: MetadataStatus::Lost,
                    detail: Some("a: mode 0600 -> 0644".into()),
                },
            ],
            ..VerifyOutcome::default()
        };
        let json = serde_json::to_string(&out).unwrap();
        assert!(
            json.ends_with(
                r#""metadata":[{"kind":"dir_mtime","status":"not_tested"},{"kind":"mode","status":"lost","detail":"a: mode 0600 -> 0644"}]}"#
            ),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<VerifyOutcome>(&json).unwrap(), out);
        for kind in MetadataKind::ALL {
            assert_eq!(
                serde_json::to_string(&kind).unwrap(),
                format!("\"{}\"", kind.name())
            );
        }
    }
}
