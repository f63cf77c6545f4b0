//! Refusing a real tree the machine's memory cannot hold the agent's
//! bookkeeping of, before any tool runs: the agent streams a real tree's
//! manifests (issue 31), yet keeps a little per file (the change's lists,
//! a private tree's names while a log is redacted), so a tree of hundreds
//! of millions of files, or a machine with little memory, would otherwise
//! be killed by the OOM killer in the middle of a tool cycle instead of
//! told at the start what to do.

use crate::run::error::RunError;
use labrun_dataset::space::{AGENT_BYTES_PER_FILE, agent_memory_bytes, memory_fit};

/// `MemAvailable` of `/proc/meminfo`, in bytes.
pub fn available_bytes() -> Option<u64> {
    parse_available(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

fn parse_available(meminfo: &str) -> Option<u64> {
    let line = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    kib.checked_mul(1024)
}

/// Refuses a tree of `files` files when `available` bytes of memory cannot
/// hold what the agent keeps of it. `None` (no /proc/meminfo): not checked.
pub fn check(files: u64, available: Option<u64>) -> Result<(), RunError> {
    let Some(available) = available else {
        return Ok(());
    };
    let Err(fraction) = memory_fit(files, available) else {
        return Ok(());
    };
    Err(RunError::NotEnoughMemory {
        files,
        needed: agent_memory_bytes(files),
        available,
        per_file: AGENT_BYTES_PER_FILE,
        fraction,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn available_memory_is_read_from_meminfo() {
        let text = "MemTotal:        3000000 kB\nMemFree:          100000 kB\nMemAvailable:    2500000 kB\n";
        assert_eq!(parse_available(text), Some(2_560_000_000));
        assert_eq!(parse_available("MemTotal: 1 kB\n"), None);
        assert_eq!(parse_available("MemAvailable: lots\n"), None);
    }

    #[test]
    fn a_tree_that_fits_passes_and_one_that_does_not_says_what_to_do() {
        // Issue 31's sizes fit a 3 GiB guest, and its 512 MiB rung.
        assert!(check(4_000_000, Some(3 << 30)).is_ok());
        assert!(check(4_000_000, Some(512 << 20)).is_ok());
        assert!(check(u64::MAX, None).is_ok());
        let files = 400_000_000;
        let Err(fraction) = memory_fit(files, 3 << 30) else {
            panic!("{files} files fit in 3 GiB");
        };
        let err = check(files, Some(3 << 30)).unwrap_err().to_string();
        let sample = format!("fraction: {fraction}");
        for needle in ["400000000 files", "vm.memory", "sample", sample.as_str()] {
            assert!(err.contains(needle), "{needle:?} missing: {err}");
        }
    }
}
