//! Every figure the report knows, as data: its name, title, unit, which
//! direction is worse, whether it is exact or timed, and how it is read from
//! a record. Samples, phase summaries, every exporter, the charts, the
//! variants tables and the comparison read this table; a new figure is one
//! more entry in [`FIGURES`] (rustc-perf keeps its metrics so).

use crate::format;
use crate::stats::Stat;
use labrun_evidence::StepRecord;

const BYTES_PER_MIB: f64 = 1024.0 * 1024.0;

/// The unit a figure is kept and shown in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Secs,
    /// 2^20 bytes: memory.
    Mib,
    /// Sizes and disk traffic, shown in decimal units.
    Bytes,
    Files,
}

impl Unit {
    /// As samples, CSV headers and comparisons write it.
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::Secs => "s",
            Unit::Mib => "MiB",
            Unit::Bytes => "bytes",
            Unit::Files => "files",
        }
    }

    /// One value: "7.2 s", "455 MiB", "3.86 GB".
    pub fn value(self, v: f64) -> String {
        match self {
            Unit::Secs => format::secs(v),
            Unit::Mib => format::mib(v),
            Unit::Bytes => format::bytes(v),
            Unit::Files => format!("{v} files"),
        }
    }

    /// A median with its range: "140 s, range 122-168".
    pub fn range(self, s: &Stat) -> String {
        match self {
            Unit::Secs => format::secs_range(s),
            Unit::Mib => format::mib_range(s),
            Unit::Bytes => format::bytes_range(s),
            Unit::Files => format!("{} files", s.median),
        }
    }
}

/// A larger value is always the worse one; this says in which words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Worse {
    /// Times: slower or faster.
    Slower,
    /// Memory, sizes, traffic: larger or smaller.
    Larger,
}

impl Worse {
    /// The words for a worse and a better candidate.
    pub fn words(self) -> (&'static str, &'static str) {
        match self {
            Worse::Slower => ("slower", "faster"),
            Worse::Larger => ("larger", "smaller"),
        }
    }
}

/// How a comparison treats a figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Varies with the machine's noise: an interval and a test.
    Timed,
    /// Sizes: compared exactly, no interval, no test.
    Exact,
}

/// Where a figure appears in a phase's summary and tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhaseColumn {
    /// Its key in a phase of `summary.json`.
    pub key: &'static str,
    /// Its column in the per-phase tables (Markdown, HTML).
    pub column: &'static str,
    /// The stem of its `summary.csv` columns (`<stem>_median_<unit>`).
    pub csv: &'static str,
    /// Its header in the terminal table, which shows its medians in the
    /// three headline phases ("peak MiB full/incr/restore"); None: not
    /// shown there (times have columns of their own; CPU parts are in the
    /// tree's figure).
    pub terminal: Option<&'static str>,
    /// Shown (a column, a `summary.json` key) only where some record has
    /// it: a figure runs from before it existed lack, so their summaries
    /// stay as they were.
    pub only_when_measured: bool,
}

#[derive(Debug)]
pub struct Figure {
    /// The sample's `metric`: the figure's name everywhere else.
    pub name: &'static str,
    /// In prose and comparisons.
    pub title: &'static str,
    pub unit: Unit,
    pub worse: Worse,
    pub kind: Kind,
    /// The figure of one record; None where it has none (not measured is
    /// not zero).
    pub read: fn(&StepRecord) -> Option<f64>,
    /// Summarized per phase (median, range over ok records) and shown in
    /// the phase tables and `summary.csv`; None for a sample only.
    pub phase: Option<PhaseColumn>,
}

impl PartialEq for Figure {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Figure {
    pub fn is_exact(&self) -> bool {
        self.kind == Kind::Exact
    }

    /// Its value in one record, finite or nothing.
    pub fn of(&self, r: &StepRecord) -> Option<f64> {
        (self.read)(r).filter(|v| v.is_finite())
    }
}

fn tree(r: &StepRecord) -> Option<&labrun_evidence::record::TreeMeters> {
    r.tree.as_ref()
}

/// Process CPU comes from measuring a process (`exit` is set); steps the
/// agent does in-process (change, verify) have none, not zero.
fn process(r: &StepRecord) -> Option<&StepRecord> {
    r.exit.is_some().then_some(r)
}

pub const WALL_TIME: Figure = Figure {
    name: "wall_time",
    title: "wall time",
    unit: Unit::Secs,
    worse: Worse::Slower,
    kind: Kind::Timed,
    read: |r| Some(r.wall_secs),
    phase: Some(PhaseColumn {
        key: "wall_secs",
        column: "Wall time",
        csv: "wall",
        terminal: None,
        only_when_measured: false,
    }),
};

/// The step plus the flush of what it left unwritten: a tool that defers
/// its writes to the page cache pays for them here (issue 46).
pub const DURABLE_TIME: Figure = Figure {
    name: "durable_time",
    title: "durable time (step + flush)",
    unit: Unit::Secs,
    worse: Worse::Slower,
    kind: Kind::Timed,
    read: |r| r.durable_secs(),
    phase: Some(PhaseColumn {
        key: "durable_secs",
        column: "Durable time (step + flush)",
        csv: "durable",
        terminal: Some("durable s"),
        only_when_measured: true,
    }),
};

/// The `syncfs` after a step that wrote.
pub const FLUSH: Figure = Figure {
    name: "flush",
    title: "flush",
    unit: Unit::Secs,
    worse: Worse::Slower,
    kind: Kind::Timed,
    read: |r| Some(r.flush.as_ref()?.secs),
    phase: Some(PhaseColumn {
        key: "flush_secs",
        column: "Flush",
        csv: "flush",
        terminal: Some("flush s"),
        only_when_measured: true,
    }),
};

/// What the step left dirty in the page cache (Dirty + Writeback just
/// before its flush).
pub const UNWRITTEN: Figure = Figure {
    name: "unwritten",
    title: "left unwritten",
    unit: Unit::Bytes,
    worse: Worse::Larger,
    kind: Kind::Timed,
    read: |r| Some(r.flush.as_ref()?.unwritten_bytes? as f64),
    phase: Some(PhaseColumn {
        key: "unwritten_bytes",
        column: "Left unwritten",
        csv: "unwritten",
        terminal: Some("unwritten"),
        only_when_measured: true,
    }),
};

pub const USER_CPU: Figure = Figure {
    name: "user_cpu",
    title: "user CPU",
    unit: Unit::Secs,
    worse: Worse::Slower,
    kind: Kind::Timed,
    read: |r| process(r).map(|r| r.user_secs),
    phase: Some(PhaseColumn {
        key: "user_secs",
        column: "User CPU",
        csv: "user_cpu",
        terminal: None,
        only_when_measured: false,
    }),
};

pub const SYSTEM_CPU: Figure = Figure {
    name: "system_cpu",
    title: "system CPU",
    unit: Unit::Secs,
    worse: Worse::Slower,
    kind: Kind::Timed,
    read: |r| process(r).map(|r| r.sys_secs),
    phase: Some(PhaseColumn {
        key: "sys_secs",
        column: "System CPU",
        csv: "system_cpu",
        terminal: None,
        only_when_measured: false,
    }),
};

/// User + system CPU of the tool process: what a comparison judges when a
/// record has no tree figures. Not a sample of its own (its parts are).
pub const PROCESS_CPU: Figure = Figure {
    name: "process_cpu",
    title: "CPU (process, user+sys)",
    unit: Unit::Secs,
    worse: Worse::Slower,
    kind: Kind::Timed,
    read: |r| process(r).map(|r| r.user_secs + r.sys_secs),
    phase: None,
};

pub const PEAK_MEMORY: Figure = Figure {
    name: "peak_memory",
    title: "peak memory (largest process)",
    unit: Unit::Mib,
    worse: Worse::Larger,
    kind: Kind::Timed,
    // `/usr/bin/time -v`'s figure; 0 KiB means "not measured".
    read: |r| (r.max_rss_kib > 0).then(|| r.max_rss_kib as f64 / 1024.0),
    phase: Some(PhaseColumn {
        key: "peak_memory_mib",
        column: "Peak memory (largest process)",
        csv: "peak_memory",
        terminal: Some("peak MiB"),
        only_when_measured: false,
    }),
};

pub const TREE_MEMORY: Figure = Figure {
    name: "tree_peak_memory",
    title: "peak memory (tree)",
    unit: Unit::Mib,
    worse: Worse::Larger,
    kind: Kind::Timed,
    read: |r| Some(tree(r)?.resident_peak_bytes? as f64 / BYTES_PER_MIB),
    phase: Some(PhaseColumn {
        key: "tree_memory_mib",
        column: "Peak memory (whole tree)",
        csv: "tree_memory",
        terminal: Some("tree MiB"),
        only_when_measured: false,
    }),
};

pub const TREE_CHARGED_MEMORY: Figure = Figure {
    name: "tree_charged_memory",
    title: "memory charged to the tree (page cache included)",
    unit: Unit::Mib,
    worse: Worse::Larger,
    kind: Kind::Timed,
    read: |r| Some(tree(r)?.charged_peak_bytes? as f64 / BYTES_PER_MIB),
    phase: None,
};

pub const TREE_CPU: Figure = Figure {
    name: "tree_cpu",
    title: "CPU (tree, user+sys)",
    unit: Unit::Secs,
    worse: Worse::Slower,
    kind: Kind::Timed,
    read: |r| {
        let t = tree(r)?;
        Some(t.user_secs? + t.sys_secs?)
    },
    phase: Some(PhaseColumn {
        key: "tree_cpu_secs",
        column: "CPU (whole tree)",
        csv: "tree_cpu",
        terminal: Some("tree CPU s"),
        only_when_measured: false,
    }),
};

pub const DISK_READ: Figure = Figure {
    name: "disk_read",
    title: "disk read (tree)",
    unit: Unit::Bytes,
    worse: Worse::Larger,
    kind: Kind::Timed,
    read: |r| Some(tree(r)?.disk_read_bytes? as f64),
    phase: Some(PhaseColumn {
        key: "disk_read_bytes",
        column: "Disk read (whole tree)",
        csv: "disk_read",
        terminal: Some("disk read"),
        only_when_measured: false,
    }),
};

pub const DISK_WRITTEN: Figure = Figure {
    name: "disk_written",
    title: "disk written (tree)",
    unit: Unit::Bytes,
    worse: Worse::Larger,
    kind: Kind::Timed,
    read: |r| Some(tree(r)?.disk_write_bytes? as f64),
    phase: Some(PhaseColumn {
        key: "disk_written_bytes",
        column: "Disk written (whole tree)",
        csv: "disk_written",
        terminal: Some("disk written"),
        only_when_measured: false,
    }),
};

pub const REPO_SIZE: Figure = Figure {
    name: "repo_size",
    title: "repository size",
    unit: Unit::Bytes,
    worse: Worse::Larger,
    kind: Kind::Exact,
    read: |r| r.repo_size_bytes.map(|b| b as f64),
    phase: None,
};

/// Size after a later backup minus size after the first: it needs two
/// records, so it is read by [`growth`], never from one record.
pub const GROWTH: Figure = Figure {
    name: "growth",
    title: "growth",
    unit: Unit::Bytes,
    worse: Worse::Larger,
    kind: Kind::Exact,
    read: |_| None,
    phase: None,
};

pub const BYTES: Figure = Figure {
    name: "bytes",
    title: "bytes",
    unit: Unit::Bytes,
    worse: Worse::Larger,
    kind: Kind::Exact,
    read: |r| r.bytes.map(|b| b as f64),
    phase: None,
};

pub const FILES: Figure = Figure {
    name: "files",
    title: "files",
    unit: Unit::Files,
    worse: Worse::Larger,
    kind: Kind::Exact,
    read: |r| r.files.map(|f| f as f64),
    phase: None,
};

/// Every figure a record gives, in the order samples, phase summaries,
/// columns and CSV cells list them.
pub const FIGURES: [&Figure; 15] = [
    &WALL_TIME,
    &DURABLE_TIME,
    &FLUSH,
    &UNWRITTEN,
    &USER_CPU,
    &SYSTEM_CPU,
    &PEAK_MEMORY,
    &TREE_MEMORY,
    &TREE_CHARGED_MEMORY,
    &TREE_CPU,
    &DISK_READ,
    &DISK_WRITTEN,
    &REPO_SIZE,
    &BYTES,
    &FILES,
];

/// The figures summarized per phase, in order.
pub fn per_phase() -> impl Iterator<Item = (&'static Figure, &'static PhaseColumn)> {
    FIGURES
        .iter()
        .copied()
        .filter_map(|f| Some((f, f.phase.as_ref()?)))
}

/// The figure a name stands for (a sample's metric, a comparison's row).
pub fn by_name(name: &str) -> Option<&'static Figure> {
    FIGURES
        .iter()
        .copied()
        .chain([&PROCESS_CPU, &GROWTH])
        .find(|f| f.name == name)
}

/// Size after `later` minus size after `first`, for records of one tool
/// cycle.
pub fn growth(first: &StepRecord, later: &StepRecord) -> Option<f64> {
    Some(later.repo_size_bytes? as f64 - first.repo_size_bytes? as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_keys_are_unique() {
        let mut names: Vec<&str> = FIGURES.iter().map(|f| f.name).collect();
        names.extend([PROCESS_CPU.name, GROWTH.name]);
        let keys: Vec<&str> = per_phase().map(|(_, c)| c.key).collect();
        let stems: Vec<&str> = per_phase().map(|(_, c)| c.csv).collect();
        for list in [names, keys, stems] {
            let mut sorted = list.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), list.len(), "{list:?}");
        }
    }

    #[test]
    fn a_record_without_a_measurement_has_no_figure() {
        let r = StepRecord::blank("r", "restic", 1, labrun_evidence::Step::BACKUP_FULL, 0);
        assert_eq!(PEAK_MEMORY.of(&r), None, "0 KiB is not measured");
        assert_eq!(USER_CPU.of(&r), None, "no process, no CPU");
        assert_eq!(DISK_READ.of(&r), None);
        assert_eq!(WALL_TIME.of(&r), Some(0.0));
    }
}
