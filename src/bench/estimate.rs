//! How long a run will take, said before it starts: a model fed with three
//! figures the machine shows just before the run ([`PROBE`]): its disk write
//! rate, its SHA-256 rate (a stand-in for the CPU work backup tools do:
//! hashing, compressing, encrypting) and the time of a cache drop.
//!
//! Per tool and cycle, counted from the run's protocol ([`Workload::of`]),
//! a step inside a per-commit block once per commit it runs for:
//! - each step that runs a tool command (4 in the published cycle: init,
//!   full, incremental, restore; 25 in the 12-commit history study) starts a
//!   tool process and drops the cache first: a fixed cost, [`STARTUP_WORK`]
//!   worth of hashing each (a Go binary starts in ~2 s, a Python one in
//!   ~4-6 s under TCG; ~0.1 s under KVM);
//! - the tool moves the data once per full backup ([`FULL_PASS`]) and
//!   restore ([`RESTORE_PASS`]) and part-way per later backup
//!   ([`RESCAN_PASS`]: the rescan), each pass writing to disk and doing
//!   [`TOOL_WORK`] times the hashing of the bytes: 2.5 passes in the
//!   published cycle, 18.5 in the history study, which restores every one
//!   of its 12 snapshots;
//! - the agent hashes the tree once per step of its own (source or commit,
//!   change, verify): 3 in the published cycle, 24 in the history study.
//!
//! Calibrated on the runs committed (packed) under `docs/` (`make bench` at 0.01,
//! bench-scale's 0.002-0.02, both runs at 0.1, the memory ladder and the
//! regression lab; restic, borg and kopia under TCG on 2-core hosts whose
//! probe hashed at 5 to 37 MB/s): the constants below are the least-squares
//! fit (of the log of actual over estimated) of the nine runs its test lists,
//! which puts every one within 0.72x to 1.36x of its estimate; the constants
//! before (fitted on an older harness and tool set) said 1.3x to 3x the time
//! the runs took. It is still a rough guide: the probe is seconds long, and
//! the timed steps' own figures are the evidence.

use labrun_evidence::protocol::ProtocolStep;

/// Bytes of SHA-256 that take as long as one tool start.
const STARTUP_WORK: f64 = 100e6;
/// Passes of the dataset through a backup tool: its first backup of a
/// cycle, each restore, and each backup after the first (a rescan that
/// reads what changed). The published cycle's 2.5 passes, which the
/// constants were fitted with.
const FULL_PASS: f64 = 1.0;
const RESTORE_PASS: f64 = 1.0;
const RESCAN_PASS: f64 = 0.5;
/// A tool's CPU work per byte, in bytes of SHA-256.
const TOOL_WORK: f64 = 4.5;

/// What one tool cycle of a protocol does, in the model's units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Workload {
    /// Tool processes started (each after a cache drop).
    pub tool_starts: f64,
    /// Passes of the dataset through the tool.
    pub tool_passes: f64,
    /// The agent's hash passes over the tree.
    pub agent_passes: f64,
}

impl Workload {
    /// The published cycle with `tool_steps` tool commands (its 4, or more
    /// when a lab adds steps that move no data, such as `check`): what the
    /// calibration runs did (their records give only the step count).
    #[cfg(test)]
    pub fn published(tool_steps: usize) -> Workload {
        Workload {
            tool_starts: tool_steps as f64,
            tool_passes: FULL_PASS + RESCAN_PASS + RESTORE_PASS,
            agent_passes: 3.0,
        }
    }

    /// One tool cycle of `protocol` over a dataset of `commits` commits
    /// (1 for a dataset without a history): a per-commit block counts once
    /// per commit it runs for.
    pub fn of(protocol: &[ProtocolStep], commits: u32) -> Workload {
        let mut w = Workload {
            tool_starts: 0.0,
            tool_passes: 0.0,
            agent_passes: 0.0,
        };
        let mut backups = 0u32;
        w.add(protocol, 1.0, &mut backups, commits);
        w
    }

    fn add(&mut self, steps: &[ProtocolStep], times: f64, backups: &mut u32, commits: u32) {
        for step in steps {
            match step {
                ProtocolStep::EachCommit(block) => {
                    let runs = commits.saturating_sub(block.from.saturating_sub(1));
                    self.add(&block.steps, times * f64::from(runs), backups, commits);
                }
                ProtocolStep::Run(run) => {
                    self.tool_starts += times;
                    if run.makes.is_some() {
                        // The cycle's first backup reads the whole tree
                        // once; every later one (however many) rescans.
                        let first = if *backups == 0 { times.min(1.0) } else { 0.0 };
                        self.tool_passes += first * FULL_PASS + (times - first) * RESCAN_PASS;
                        *backups += times as u32;
                    }
                    if run.restores.is_some() {
                        self.tool_passes += times * RESTORE_PASS;
                    }
                }
                ProtocolStep::Source
                | ProtocolStep::Commit
                | ProtocolStep::Change { .. }
                | ProtocolStep::Verify { .. } => self.agent_passes += times,
                ProtocolStep::Fixture => {}
            }
        }
    }
}

/// What the probe measured.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct MachineRates {
    pub write_bytes_per_sec: f64,
    pub sha256_bytes_per_sec: f64,
    /// `sync; echo 3 > drop_caches` (0 where it is not allowed).
    pub cache_drop_secs: f64,
}

impl MachineRates {
    /// Parses the probe's line: `WRITE_RATE SHA256_RATE DROP_SECS`.
    pub fn parse(line: &str) -> Option<MachineRates> {
        let mut it = line.split_whitespace().map(|w| w.parse::<f64>().ok());
        let rates = MachineRates {
            write_bytes_per_sec: it.next()??,
            sha256_bytes_per_sec: it.next()??,
            cache_drop_secs: it.next()??,
        };
        let ok = rates.write_bytes_per_sec > 0.0
            && rates.sha256_bytes_per_sec > 0.0
            && rates.cache_drop_secs >= 0.0
            && it.next().is_none();
        ok.then_some(rates)
    }
}

/// Run in the guest: 32 MiB written with fdatasync, 8 MiB of it hashed from
/// the page cache, one cache drop. Prints the three figures on one line.
/// Small: it runs before every run, and under emulation the guest hashes at
/// 6-50 MB/s (32 MiB hashed took 5 s of a 0.01 run's 9 s probe); a rate
/// over a second or two is as good a guide.
pub const PROBE: &str = "d=$(mktemp -d) && t() { date +%s.%N; } && a=$(t) && dd if=/dev/zero of=$d/probe bs=1M count=32 conv=fdatasync status=none && b=$(t) && head -c 8388608 $d/probe | sha256sum >/dev/null && c=$(t) && { sync; echo 3 > /proc/sys/vm/drop_caches; } 2>/dev/null; e=$(t); rm -rf $d; echo \"$a $b $c $e\" | awk '{printf \"%.0f %.0f %.3f\\n\", 33554432/($2-$1), 8388608/($3-$2), $4-$3}'";

/// `raw/estimate.json`: what `bench` estimated before it started.
pub const ESTIMATE_FILE: &str = "estimate.json";

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Estimate {
    pub secs: f64,
    /// The part that does not grow with the dataset (tool starts, drops).
    pub fixed_secs: f64,
    pub dataset_bytes: u64,
    pub rates: MachineRates,
}

/// The bytes a run of `lab` at `scale` moves through the disk: its
/// dataset profile's allocated bytes. A sparse image's holes are neither
/// written nor read from the disk (a tool reads them as zeros the kernel
/// makes), so the vm-image profile counts its written blocks only.
pub fn dataset_bytes(lab: &labrun_lab::Lab, scale: Option<f64>) -> u64 {
    lab.dataset_footprint(scale).allocated_bytes
}

/// `work`: one tool cycle's, from [`Workload::of`]. Steps that move no data
/// (a `check` that reads everything included) count as tool starts only.
pub fn estimate(
    dataset_bytes: u64,
    tools: usize,
    cycles: u32,
    work: Workload,
    rates: MachineRates,
) -> Estimate {
    let sha = rates.sha256_bytes_per_sec.max(1.0);
    let write = rates.write_bytes_per_sec.max(1.0);
    let bytes = dataset_bytes as f64;
    let per_step = rates.cache_drop_secs + STARTUP_WORK / sha;
    let tool_pass = bytes / write + TOOL_WORK * bytes / sha;
    let runs = tools as f64 * f64::from(cycles);
    let fixed_secs = runs * work.tool_starts * per_step;
    let data_secs = runs * (work.tool_passes * tool_pass + work.agent_passes * bytes / sha);
    Estimate {
        secs: fixed_secs + data_secs,
        fixed_secs,
        dataset_bytes,
        rates,
    }
}

pub fn human_duration(secs: f64) -> String {
    let s = secs.round() as u64;
    match s {
        0..=119 => format!("{s} s"),
        120..=7199 => format!("{} min", s.div_ceil(60)),
        _ => format!("{:.1} h", s as f64 / 3600.0),
    }
}

/// A run of about half an hour, when this one is longer.
const QUICK_LOOK_SECS: f64 = 1800.0;

/// The sentence `bench` prints, with the `--scale` hint when a run is long
/// and its dataset has a scale (`None`: a history, which has none).
pub fn describe(e: &Estimate, scale: Option<f64>, emulated: bool) -> String {
    let mut text = format!(
        "estimated duration: about {} ({} dataset; this machine wrote {:.0} MB/s and hashed {:.0} MB/s just now; a rough guide)",
        human_duration(e.secs),
        labrun_evidence::human::bytes(e.dataset_bytes as f64),
        e.rates.write_bytes_per_sec / 1e6,
        e.rates.sha256_bytes_per_sec / 1e6,
    );
    if emulated {
        text.push_str(
            "\nthe guest runs under software emulation (TCG): expect hours at full scale",
        );
    }
    let data_secs = e.secs - e.fixed_secs;
    if let Some(scale) = scale
        && e.secs > QUICK_LOOK_SECS
        && e.fixed_secs < QUICK_LOOK_SECS
        && data_secs > 0.0
    {
        // Only the data part shrinks with --scale.
        let quick = (scale * (QUICK_LOOK_SECS - e.fixed_secs) / data_secs).clamp(0.0001, 1.0);
        text.push_str(&format!(
            "\nfor a quick look, pass --scale {quick:.4} (about 30 min)"
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the probe said in the guest of the calibration run (TCG).
    const TCG: MachineRates = MachineRates {
        write_bytes_per_sec: 43e6,
        sha256_bytes_per_sec: 48e6,
        cache_drop_secs: 0.26,
    };

    #[test]
    fn the_committed_runs_come_out_near_what_they_took() {
        // (dataset bytes, tools, cycles run, tool steps per cycle, the
        // probe's rates, seconds from the first step to the last), from
        // each run's raw/estimate.json and records.jsonl, in its pack under docs/.
        type Run = (u64, usize, u32, usize, (f64, f64, f64), f64, &'static str);
        #[rustfmt::skip]
        let runs: &[Run] = &[
            (60913320, 3, 3, 6, (40707070.0, 5257010.0, 1.204), 1927.0, "harness 0.01"),
            (12142251, 3, 1, 6, (43235511.0, 6543165.0, 0.858), 479.0, "scale 0.002"),
            (30431022, 3, 1, 6, (34133500.0, 7050926.0, 0.358), 548.0, "scale 0.005"),
            (60913320, 3, 1, 6, (65269651.0, 7039103.0, 0.309), 725.0, "scale 0.01"),
            (121878311, 3, 1, 6, (51106064.0, 6153844.0, 0.557), 844.0, "scale 0.02"),
            (609599088, 3, 2, 6, (49962827.0, 10987090.0, 0.868), 5079.0, "scale 0.1, 2 cycles"),
            (12142251, 3, 1, 6, (67203429.0, 8281965.0, 0.562), 248.0, "memory ladder 512m"),
            (12142251, 5, 5, 4, (76281350.0, 12138976.0, 0.5), 1139.0, "regression"),
            (609599088, 3, 3, 6, (108546252.0, 37305052.0, 0.305), 3236.0, "scale 0.1, 3 cycles"),
        ];
        for &(bytes, tools, cycles, steps, (w, sha, drop), took, name) in runs {
            let rates = MachineRates {
                write_bytes_per_sec: w,
                sha256_bytes_per_sec: sha,
                cache_drop_secs: drop,
            };
            let e = estimate(bytes, tools, cycles, Workload::published(steps), rates);
            let ratio = took / e.secs;
            assert!(
                (0.7..=1.4).contains(&ratio),
                "{name}: took {took} s, estimated {e:?}"
            );
        }
    }

    #[test]
    fn more_tool_steps_cost_more_tool_starts() {
        let published = estimate(1_000_000, 3, 1, Workload::published(4), TCG);
        let maintenance = estimate(1_000_000, 3, 1, Workload::published(9), TCG);
        assert!(
            maintenance.secs > published.secs,
            "{maintenance:?} vs {published:?}"
        );
    }

    #[test]
    fn estimate_grows_with_work_and_keeps_a_fixed_part() {
        let one = estimate(1_000_000_000, 1, 1, Workload::published(4), TCG);
        let nine = estimate(1_000_000_000, 3, 3, Workload::published(4), TCG);
        assert!((nine.secs - 9.0 * one.secs).abs() < 1e-6);
        let tiny = estimate(1, 1, 1, Workload::published(4), TCG);
        // Four tool starts and cache drops: seconds, even for no data.
        assert!(
            tiny.secs > 4.0 * TCG.cache_drop_secs + 4.0,
            "tool starts cost time even for no data: {tiny:?}"
        );
        assert!((tiny.fixed_secs - one.fixed_secs).abs() < 1e-9);
    }

    #[test]
    fn long_runs_suggest_a_scale_that_fits_half_an_hour() {
        let e = estimate(6_100_000_000, 3, 3, Workload::published(4), TCG);
        assert!(
            e.secs > 3.0 * 3600.0,
            "full scale under TCG takes hours: {e:?}"
        );
        let text = describe(&e, Some(1.0), true);
        assert!(text.contains("software emulation"), "{text}");
        let quick: f64 = text
            .split("--scale ")
            .nth(1)
            .and_then(|t| t.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no --scale hint in {text}"));
        let at_quick = estimate((6.1e9 * quick) as u64, 3, 3, Workload::published(4), TCG);
        assert!(
            (1600.0..=2000.0).contains(&at_quick.secs),
            "--scale {quick} gives {at_quick:?}"
        );
        assert!(
            !describe(
                &estimate(1_000_000, 1, 1, Workload::published(4), TCG),
                Some(1.0),
                false
            )
            .contains("--scale")
        );
    }

    #[test]
    fn the_published_protocol_is_the_calibrated_workload() {
        let published = labrun_evidence::protocol::published();
        assert_eq!(Workload::of(&published, 1), Workload::published(4));
    }

    #[test]
    fn a_history_counts_every_commit_s_backup_and_restore() {
        // init, 12 backups, 12 restores; the first backup reads the whole
        // tree, the 11 after it rescan; 12 commits written, 12 verifies.
        let history = labrun_evidence::protocol::history();
        let w = Workload::of(&history, 12);
        assert_eq!(
            w,
            Workload {
                tool_starts: 25.0,
                tool_passes: 1.0 + 11.0 * 0.5 + 12.0,
                agent_passes: 24.0,
            }
        );
        // The run that showed it: about 7x the published cycle's data work
        // (the old model said 8 min for a 50-min history run).
        let (one, twelve) = (
            estimate(36_000_000, 4, 1, Workload::of(&history, 1), TCG),
            estimate(36_000_000, 4, 1, w, TCG),
        );
        assert!(twelve.secs > 6.0 * one.secs, "{one:?} vs {twelve:?}");
        // A history has no --scale to suggest.
        let long = estimate(600_000_000, 4, 1, w, TCG);
        assert!(long.secs > QUICK_LOOK_SECS, "{long:?}");
        assert!(!describe(&long, None, true).contains("--scale"));
    }

    #[test]
    fn a_block_that_runs_for_no_commit_adds_nothing() {
        let history = labrun_evidence::protocol::history();
        // One commit: the blocks from commit 2 never run.
        let w = Workload::of(&history, 1);
        assert_eq!(w.tool_starts, 3.0, "{w:?}");
        assert_eq!(w.tool_passes, 2.0, "{w:?}");
        assert_eq!(w.agent_passes, 2.0, "{w:?}");
    }

    #[test]
    fn probe_line_parses_or_is_refused() {
        assert_eq!(MachineRates::parse("43000000 48000000 0.260\n"), Some(TCG));
        for bad in ["", "1 2", "1 2 3 4", "0 2 3", "a b c", "1 2 -1"] {
            assert_eq!(MachineRates::parse(bad), None, "{bad}");
        }
    }

    fn lab_with(profile: &str) -> labrun_lab::Lab {
        let text = format!(
            r#"name: shapes
vm: {{vcpus: 1, memory: 1GiB, disk: 4GiB}}
dataset: {{kind: synthetic, profile: {profile}, seed: 1, scale: 0.01}}
cycles: 1
tools:
  - name: restic
    version: "0.14.0"
    artifact:
      url: "https://example.invalid/restic.bz2"
      sha256: 9d7e8c210736f3f15ed7cf425ab56aa5259b07d8422b958494bfd4359b5024d1
      extract: bz2
    env: {{RESTIC_PASSWORD: x}}
    commands:
      version: ["{{bin}}", version]
      init: ["{{bin}}", init, -r, "{{repo}}"]
      backup: ["{{bin}}", backup, -r, "{{repo}}", "{{source}}"]
      restore: ["{{bin}}", restore, latest, -r, "{{repo}}", --target, "{{target}}"]
      snapshots: ["{{bin}}", snapshots, -r, "{{repo}}"]
"#
        );
        labrun_lab::Lab::from_text(&text, "shapes.yaml").expect("a valid lab")
    }

    #[test]
    fn the_dataset_bytes_are_what_the_profile_puts_on_disk() {
        // The published 6,096,458,350 bytes, at 0.01.
        let published = dataset_bytes(&lab_with("published"), None) as f64;
        assert!((published / 60_964_583.5 - 1.0).abs() < 0.01, "{published}");
        let doubled = dataset_bytes(&lab_with("published"), Some(0.02)) as f64;
        assert!((doubled / published - 2.0).abs() < 0.01, "{doubled}");
        // 20 GiB apparent at scale 1, about 27.5% of it written.
        let apparent = 0.01 * 20.0 * (1u64 << 30) as f64;
        let vm = dataset_bytes(&lab_with("vm-image"), None) as f64;
        assert!(
            (0.25..0.30).contains(&(vm / apparent)),
            "{vm} of {apparent}"
        );
        // A million tiny files at scale 1, about 2 KiB each.
        let tiny = dataset_bytes(&lab_with("tiny-files"), None) as f64;
        assert!(
            (tiny / (10_000.0 * 0.98 * 2048.0) - 1.0).abs() < 0.01,
            "{tiny}"
        );
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(human_duration(42.0), "42 s");
        assert_eq!(human_duration(600.0), "10 min");
        assert_eq!(human_duration(9000.0), "2.5 h");
    }
}
