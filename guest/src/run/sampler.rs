//! The sampler of a step's cgroup: the tree's resident memory and process
//! count for their peaks, and once a second a timeline row of every figure.
//!
//! Its cost is the agent's measurable CPU during a step, which the evidence
//! reports (the sampler times itself with its thread's CPU clock) and which
//! must stay far below the step's own. The cgroup's files are opened once
//! and re-read from offset 0 (kernfs regenerates a file's text on every
//! read from its start), so a sample is one `pread` per file, with no path
//! walk, no open and no close, into buffers reused from sample to sample.
//! It samples every [`TreeMeters::SAMPLE_MS`] in a step's first
//! [`TreeMeters::FAST_SECS`] (a short step's peak is short too), then once
//! a second. The fast start is not thinned when samples are dear (a CPU
//! budget that did so was tried): on a loaded TCG guest it fell to once a
//! second, and fewer samples can only miss more of a short step's peak.

use labrun_evidence::{TimelineRow, TreeMeters};
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What one sample read.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sample {
    pub resident: Option<u64>,
    pub charged: Option<u64>,
    pub user_usec: Option<u64>,
    pub system_usec: Option<u64>,
    pub read: Option<u64>,
    pub written: Option<u64>,
    pub processes: Option<u64>,
}

/// What the sampler saw.
#[derive(Debug, Clone, Copy, Default)]
pub struct SamplerResult {
    pub resident_peak: Option<u64>,
    pub charged_peak: Option<u64>,
    pub processes_peak: Option<u64>,
    pub samples: u64,
    /// The sampler thread's own CPU (its share of the agent's).
    pub cpu_secs: f64,
}

/// One cgroup file, open for re-reading.
struct Figure {
    file: Option<File>,
}

impl Figure {
    fn open(dir: &Path, name: &str) -> Figure {
        Figure {
            file: File::open(dir.join(name)).ok(),
        }
    }

    /// The file's whole text, read again from its start into `buf`.
    fn read<'b>(&self, buf: &'b mut Vec<u8>) -> Option<&'b [u8]> {
        let file = self.file.as_ref()?;
        buf.clear();
        let mut chunk = [0u8; 4096];
        loop {
            let n = file.read_at(&mut chunk, buf.len() as u64).ok()?;
            if n == 0 {
                return Some(buf);
            }
            buf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// A step cgroup's files the sampler reads, open once.
pub struct CgroupFiles {
    memory_stat: Figure,
    memory_current: Figure,
    cpu_stat: Figure,
    io_stat: Figure,
    pids_current: Figure,
    buf: Vec<u8>,
}

impl CgroupFiles {
    /// Opens what `dir` has; a controller that is not enabled has no file,
    /// and its figures stay absent.
    pub fn open(dir: &Path) -> CgroupFiles {
        CgroupFiles {
            memory_stat: Figure::open(dir, "memory.stat"),
            memory_current: Figure::open(dir, "memory.current"),
            cpu_stat: Figure::open(dir, "cpu.stat"),
            io_stat: Figure::open(dir, "io.stat"),
            pids_current: Figure::open(dir, "pids.current"),
            buf: Vec::with_capacity(8192),
        }
    }

    /// What the peaks need: resident memory and the process count.
    pub fn peaks(&mut self) -> Sample {
        Sample {
            resident: self.resident(),
            processes: self.pids_current.read(&mut self.buf).and_then(number),
            ..Sample::default()
        }
    }

    /// Every figure.
    pub fn all(&mut self) -> Sample {
        let mut s = self.peaks();
        s.charged = self.memory_current.read(&mut self.buf).and_then(number);
        if let Some(text) = self.cpu_stat.read(&mut self.buf) {
            s.user_usec = keyed(text, b"user_usec");
            s.system_usec = keyed(text, b"system_usec");
        }
        if let Some(text) = self.io_stat.read(&mut self.buf) {
            let (read, written) = io_bytes(text);
            s.read = Some(read);
            s.written = Some(written);
        }
        s
    }

    /// `anon` + `file_mapped` of `memory.stat`: what the processes' RSS
    /// add up to.
    fn resident(&mut self) -> Option<u64> {
        let text = self.memory_stat.read(&mut self.buf)?;
        let anon = keyed(text, b"anon");
        match (anon, keyed(text, b"file_mapped")) {
            (Some(a), Some(f)) => Some(a + f),
            (a, _) => a,
        }
    }
}

/// Samples `dir` until `stopped` is dropped, writing a timeline row once a
/// second to `timeline`.
pub fn sample_until(
    dir: &Path,
    timeline: Option<PathBuf>,
    stopped: &mpsc::Receiver<()>,
) -> SamplerResult {
    let mut files = CgroupFiles::open(dir);
    let mut out = timeline.and_then(|p| File::create(p).ok().map(io::BufWriter::new));
    let mut result = SamplerResult::default();
    let started = Instant::now();
    let cpu_at_start = thread_cpu_secs();
    let max = |peak: &mut Option<u64>, v: Option<u64>| {
        if let Some(v) = v {
            *peak = Some(peak.map_or(v, |p| p.max(v)));
        }
    };
    let row_every = Duration::from_millis(TreeMeters::ROW_MS);
    let mut last_row: Option<Instant> = None;
    loop {
        // A row reads every figure; the samples between it only the peaks'.
        let row = last_row.is_none_or(|t| t.elapsed() + ROW_SLACK >= row_every);
        let s = if row { files.all() } else { files.peaks() };
        max(&mut result.resident_peak, s.resident);
        max(&mut result.charged_peak, s.charged);
        max(&mut result.processes_peak, s.processes);
        if row {
            last_row = Some(Instant::now());
            if let Some(w) = out.as_mut() {
                write_row(w, started, &s);
            }
        }
        result.samples += 1;
        let every = if started.elapsed() < Duration::from_secs(TreeMeters::FAST_SECS) {
            TreeMeters::SAMPLE_MS
        } else {
            TreeMeters::SLOW_SAMPLE_MS
        };
        match stopped.recv_timeout(Duration::from_millis(every)) {
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            _ => break,
        }
    }
    if let Some(mut w) = out {
        let _ = w.flush();
    }
    result.cpu_secs = (thread_cpu_secs() - cpu_at_start).max(0.0);
    result
}

/// A sample that wakes a little early still makes its row.
const ROW_SLACK: Duration = Duration::from_millis(50);

fn write_row(w: &mut impl Write, started: Instant, s: &Sample) {
    let row = TimelineRow {
        t_secs: (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
        resident_bytes: s.resident,
        charged_bytes: s.charged,
        cpu_secs: match (s.user_usec, s.system_usec) {
            (Some(u), Some(s)) => Some(usec(u + s)),
            _ => None,
        },
        disk_read_bytes: s.read,
        disk_write_bytes: s.written,
        processes: s.processes,
    };
    if let Ok(line) = serde_json::to_string(&row) {
        let _ = writeln!(w, "{line}");
    }
}

/// The value of the `key value` line named `key` (`memory.stat`,
/// `cpu.stat`, `memory.events`).
pub(crate) fn keyed(text: &[u8], key: &[u8]) -> Option<u64> {
    text.split(|&b| b == b'\n').find_map(|line| {
        let rest = line.strip_prefix(key)?.strip_prefix(b" ")?;
        number(rest)
    })
}

/// A file (or field) that is one decimal number.
fn number(text: &[u8]) -> Option<u64> {
    std::str::from_utf8(text).ok()?.trim().parse().ok()
}

/// `io.stat`: one line per device, `8:0 rbytes=N wbytes=N rios=N ...`.
pub fn io_bytes(text: &[u8]) -> (u64, u64) {
    let mut read = 0u64;
    let mut written = 0u64;
    for field in text.split(|b| b.is_ascii_whitespace()) {
        if let Some(v) = field.strip_prefix(b"rbytes=") {
            read = read.saturating_add(number(v).unwrap_or(0));
        } else if let Some(v) = field.strip_prefix(b"wbytes=") {
            written = written.saturating_add(number(v).unwrap_or(0));
        }
    }
    (read, written)
}

/// `cpu.stat` microseconds as seconds.
pub fn usec(v: u64) -> f64 {
    v as f64 / 1e6
}

/// This thread's CPU so far (user and system).
fn thread_cpu_secs() -> f64 {
    // SAFETY: zeroed timespec is a valid out-parameter.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: ts is valid and writable.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn stand_in_cgroup() -> tempfile::TempDir {
        // The files the sampler reads.
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::write(
            d.join("memory.stat"),
            "anon 4096\nfile 77\nfile_mapped 1024\nanon_thp 0\n",
        )
        .unwrap();
        fs::write(d.join("memory.current"), "8192\n").unwrap();
        fs::write(d.join("pids.current"), "2\n").unwrap();
        fs::write(
            d.join("cpu.stat"),
            "usage_usec 15\nuser_usec 10\nsystem_usec 5\n",
        )
        .unwrap();
        fs::write(
            d.join("io.stat"),
            "8:0 rbytes=100 wbytes=20 rios=1\n8:16 rbytes=5 wbytes=1\n",
        )
        .unwrap();
        dir
    }

    #[test]
    fn sampling_slows_after_the_first_seconds_and_rows_stay_once_a_second() {
        let dir = stand_in_cgroup();
        let timeline = dir.path().join("timeline.jsonl");
        let (stop, stopped) = mpsc::channel::<()>();
        let d = dir.path().to_path_buf();
        let t = timeline.clone();
        let thread = std::thread::spawn(move || sample_until(&d, Some(t), &stopped));
        let secs = TreeMeters::FAST_SECS + 3;
        std::thread::sleep(Duration::from_secs(secs));
        drop(stop);
        let result = thread.join().unwrap();
        // 4 a second for the first seconds, then 1 a second, not 4 a second
        // throughout.
        let fast = TreeMeters::FAST_SECS * 1000 / TreeMeters::SAMPLE_MS;
        let slow = (secs - TreeMeters::FAST_SECS) * 1000 / TreeMeters::SLOW_SAMPLE_MS;
        assert!(
            result.samples >= fast && result.samples <= fast + slow + 2,
            "{} samples in {secs} s",
            result.samples
        );
        let rows = fs::read_to_string(&timeline).unwrap();
        let rows: Vec<TimelineRow> = rows
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let n = rows.len() as u64;
        assert!((secs - 1..=secs + 1).contains(&n), "{n} rows in {secs} s");
        assert_eq!(rows[0].resident_bytes, Some(5120));
        assert_eq!(rows[0].charged_bytes, Some(8192));
        assert_eq!(rows[0].cpu_secs, Some(15e-6));
        assert_eq!(rows[0].disk_read_bytes, Some(105));
        assert_eq!(rows[0].disk_write_bytes, Some(21));
        assert_eq!(result.resident_peak, Some(5120));
        assert_eq!(result.processes_peak, Some(2));
        assert!(result.cpu_secs > 0.0 && result.cpu_secs < secs as f64);
    }

    #[test]
    fn a_file_is_read_again_from_its_start_each_time() {
        // kernfs makes a file's text anew on each read from offset 0; a
        // regular file rewritten in place shows the same through one fd.
        let dir = stand_in_cgroup();
        let mut files = CgroupFiles::open(dir.path());
        assert_eq!(files.peaks().resident, Some(5120));
        fs::write(dir.path().join("memory.stat"), "anon 9000\nfile_mapped 1\n").unwrap();
        assert_eq!(files.peaks().resident, Some(9001));
        fs::write(dir.path().join("memory.stat"), "anon 7\n").unwrap();
        assert_eq!(files.peaks().resident, Some(7));
    }

    #[test]
    fn a_missing_controller_leaves_its_figures_absent() {
        let dir = stand_in_cgroup();
        fs::remove_file(dir.path().join("io.stat")).unwrap();
        fs::remove_file(dir.path().join("memory.current")).unwrap();
        let s = CgroupFiles::open(dir.path()).all();
        assert_eq!((s.read, s.written, s.charged), (None, None, None));
        assert_eq!(s.user_usec, Some(10));
    }

    #[test]
    fn a_key_matches_whole_names_only() {
        // `anon_thp` and `file_mapped` must not be read as `anon`, `file`.
        let text = b"anon_thp 1\nanon 2\nfile_mapped 3\nfile 4\n";
        assert_eq!(keyed(text, b"anon"), Some(2));
        assert_eq!(keyed(text, b"file"), Some(4));
        assert_eq!(keyed(text, b"shmem"), None);
    }

    #[test]
    fn io_stat_sums_devices() {
        assert_eq!(
            io_bytes(b"8:0 rbytes=10 wbytes=20 rios=1\n8:16 rbytes=5 wbytes=1\n"),
            (15, 21)
        );
    }
}
