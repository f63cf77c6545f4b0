//! After a timed step that wrote: put what it left in the page cache on
//! disk (`syncfs` of the file system it wrote) and time that, so a tool that
//! defers its writes is not faster for it. Without this the `sync` of the
//! next step's cold cache pays for them, outside any timing.
//!
//! What was left unwritten is the kernel's Dirty + Writeback
//! (`/proc/meminfo`) just before the flush. The step's cgroup would count
//! only its own pages, but its memory.stat is gone once the step's tree is
//! removed, and the harness settles everything of its own before a timed
//! step, so machine-wide dirty pages at this point are the step's.

use labrun_evidence::record::Flush;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::Instant;

const MEMINFO: &str = "/proc/meminfo";

/// Flushes the file system `folder` is on and says what it cost.
pub fn flush(folder: &Path) -> Result<Flush, String> {
    let unwritten_bytes = std::fs::read_to_string(MEMINFO)
        .ok()
        .and_then(|text| unwritten(&text));
    let dir = std::fs::File::open(folder).map_err(|e| {
        format!(
            "cannot open {} to flush what the step wrote: {e}",
            folder.display()
        )
    })?;
    let started = Instant::now();
    // SAFETY: syncfs takes a file descriptor we own and touches no memory.
    let rc = unsafe { libc::syncfs(dir.as_raw_fd()) };
    let secs = started.elapsed().as_secs_f64();
    if rc != 0 {
        return Err(format!(
            "cannot flush the file system of {} (syncfs: {})",
            folder.display(),
            std::io::Error::last_os_error()
        ));
    }
    Ok(Flush {
        path: folder.display().to_string(),
        secs,
        unwritten_bytes,
    })
}

/// Dirty + Writeback of a `/proc/meminfo` text, in bytes (None when either
/// line is missing).
fn unwritten(meminfo: &str) -> Option<u64> {
    let kib = |key: &str| {
        meminfo.lines().find_map(|l| {
            let rest = l.strip_prefix(key)?.strip_prefix(':')?;
            rest.split_whitespace().next()?.parse::<u64>().ok()
        })
    };
    Some((kib("Dirty")? + kib("Writeback")?) * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn dirty_and_writeback_are_added_in_bytes() {
        let text = "MemTotal: 100 kB\nDirty:  12 kB\nWriteback:   3 kB\nWritebackTmp: 9 kB\n";
        assert_eq!(unwritten(text), Some(15 * 1024));
        assert_eq!(unwritten("MemTotal: 100 kB\n"), None);
    }

    #[test]
    fn a_file_written_without_fsync_is_left_unwritten_and_flushed() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let mut f = std::fs::File::create(dir.path().join("data")).expect("a file");
        // 8 MiB the kernel keeps dirty until something writes it back.
        f.write_all(&vec![7u8; 8 << 20]).expect("written");
        drop(f);
        let flushed = flush(dir.path()).expect("flushed");
        assert!(
            flushed.unwritten_bytes.is_some_and(|b| b > 0),
            "{flushed:?}"
        );
        assert!(flushed.secs >= 0.0);
        let after = unwritten(&std::fs::read_to_string(MEMINFO).expect("meminfo"));
        assert!(after.is_some());
    }

    #[test]
    fn a_folder_that_is_gone_is_a_clear_error() {
        let why = flush(Path::new("/nonexistent/target")).unwrap_err();
        assert!(why.contains("/nonexistent/target"), "{why}");
    }
}
