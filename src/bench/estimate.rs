//! How long a run will take, said before it starts. A crude model, stated as
//! such: each cycle of each tool moves the dataset about six times (generate,
//! full backup, change, incremental, restore, verify), at the write rate the
//! machine just showed.

/// Passes over the dataset per tool and cycle (see the module comment).
const PASSES: f64 = 6.0;

#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    pub secs: f64,
    pub dataset_bytes: u64,
    pub rate_bytes_per_sec: f64,
}

pub fn estimate(
    dataset_bytes: u64,
    tools: usize,
    cycles: u32,
    rate_bytes_per_sec: f64,
) -> Estimate {
    let rate = rate_bytes_per_sec.max(1.0);
    let secs = dataset_bytes as f64 * PASSES * tools as f64 * f64::from(cycles) / rate;
    Estimate {
        secs,
        dataset_bytes,
        rate_bytes_per_sec: rate,
    }
}

/// `dd` of 64 MiB with fdatasync, in the guest: prints bytes per second.
pub const PROBE_WRITE_RATE: &str = "d=$(mktemp -d) && s=$(date +%s.%N) && dd if=/dev/zero of=$d/probe bs=1M count=64 conv=fdatasync status=none && e=$(date +%s.%N) && rm -rf $d && echo \"$s $e\" | awk '{printf \"%.0f\\n\", 67108864/($2-$1)}'";

pub fn human_duration(secs: f64) -> String {
    let s = secs.round() as u64;
    match s {
        0..=119 => format!("{s} s"),
        120..=7199 => format!("{} min", s.div_ceil(60)),
        _ => format!("{:.1} h", s as f64 / 3600.0),
    }
}

/// The sentence `bench` prints, with the `--scale` hint when a run is long.
pub fn describe(e: &Estimate, scale: f64, emulated: bool) -> String {
    let mut text = format!(
        "estimated duration: about {} ({:.2} GB dataset, ~{} passes per tool and cycle at the {:.0} MB/s the machine just wrote; a rough guide)",
        human_duration(e.secs),
        e.dataset_bytes as f64 / 1e9,
        PASSES,
        e.rate_bytes_per_sec / 1e6
    );
    if emulated {
        text.push_str(
            "\nthe guest runs under software emulation (TCG): expect hours at full scale",
        );
    }
    if e.secs > 1800.0 {
        let quick = (scale * 1800.0 / e.secs).clamp(0.0001, 1.0);
        text.push_str(&format!(
            "\nfor a quick look, pass --scale {:.4} (about 30 min)",
            quick
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_scales_with_work() {
        let one = estimate(1_000_000_000, 1, 1, 100e6);
        assert!((one.secs - 60.0).abs() < 1e-6);
        let more = estimate(1_000_000_000, 3, 3, 100e6);
        assert!((more.secs - 540.0).abs() < 1e-6);
    }

    #[test]
    fn long_runs_suggest_a_scale() {
        let e = estimate(6_100_000_000, 3, 3, 30e6);
        let text = describe(&e, 1.0, true);
        assert!(text.contains("--scale"), "{text}");
        assert!(text.contains("software emulation"), "{text}");
        assert!(!describe(&estimate(1_000_000, 1, 1, 30e6), 1.0, false).contains("--scale"));
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(human_duration(42.0), "42 s");
        assert_eq!(human_duration(600.0), "10 min");
        assert_eq!(human_duration(9000.0), "2.5 h");
    }
}
