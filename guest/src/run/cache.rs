//! Cold cache before a timed step: `sync`, then `echo 3 >
//! /proc/sys/vm/drop_caches`. Only root can; a container may forbid it even
//! to root. Either way the record says honestly whether it happened.

use std::path::Path;

const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheDrop {
    Dropped,
    /// Not dropped, and why (for a warning a user can act on).
    NotDropped(String),
}

impl CacheDrop {
    pub fn dropped(&self) -> bool {
        *self == CacheDrop::Dropped
    }
}

/// Flushes dirty pages and drops the page cache, dentries and inodes.
pub fn drop_page_cache() -> CacheDrop {
    // SAFETY: geteuid cannot fail and touches no memory.
    if unsafe { libc::geteuid() } != 0 {
        return CacheDrop::NotDropped(
            "the agent is not root, so it cannot drop the page cache: timed steps ran with a warm cache (run the agent as root for cold-cache figures)".into(),
        );
    }
    drop_via(Path::new(DROP_CACHES))
}

fn drop_via(control: &Path) -> CacheDrop {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    match std::fs::write(control, b"3") {
        Ok(()) => CacheDrop::Dropped,
        Err(e) => CacheDrop::NotDropped(format!(
            "cannot drop the page cache ({}: {e}): timed steps ran with a warm cache (a container may forbid it; run in the VM or on a host)",
            control.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_control_file_that_cannot_be_written_is_reported() {
        let r = drop_via(Path::new("/nonexistent/drop_caches"));
        match r {
            CacheDrop::NotDropped(why) => {
                assert!(why.contains("/nonexistent/drop_caches"), "{why}")
            }
            CacheDrop::Dropped => panic!("reported a drop that cannot have happened"),
        }
    }

    #[test]
    fn as_root_the_drop_is_honest() {
        let r = drop_page_cache();
        // SAFETY: as above.
        let root = unsafe { libc::geteuid() } == 0;
        let writable = std::fs::OpenOptions::new()
            .write(true)
            .open(DROP_CACHES)
            .is_ok();
        assert_eq!(r.dropped(), root && writable, "{r:?}");
    }
}
