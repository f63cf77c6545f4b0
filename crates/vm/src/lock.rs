//! One `up` (or `down`) per lab at a time: an advisory `flock` on the lab's
//! lock file. The kernel drops it when the process dies, so a `kill -9`'d
//! `up` never leaves a stale lock.

use crate::error::VmError;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::Path;

/// Held until dropped.
#[derive(Debug)]
pub struct LabLock {
    _file: File,
}

impl LabLock {
    /// Takes the lock without waiting. `what` (e.g. "labrun up") is written
    /// into the file with the pid, so a second caller can say who holds it.
    pub fn acquire(path: &Path, lab: &str, what: &str) -> Result<LabLock, VmError> {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(VmError::io(path))?;
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(VmError::Locked {
                    lab: lab.to_string(),
                    holder: if holder.is_empty() {
                        "unknown process".into()
                    } else {
                        holder.to_string()
                    },
                });
            }
            Err(e) => return Err(VmError::io(path)(e.into())),
        }
        let note = format!(
            "`{what}`, pid {}, since {}",
            std::process::id(),
            humantime::format_rfc3339_seconds(std::time::SystemTime::now())
        );
        (|| {
            file.set_len(0)?;
            file.rewind()?;
            file.write_all(note.as_bytes())
        })()
        .map_err(VmError::io(path))?;
        Ok(LabLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_holder_is_refused_with_the_first_ones_name() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("lock");
        let first = LabLock::acquire(&p, "demo", "labrun up").unwrap();
        let err = LabLock::acquire(&p, "demo", "labrun up")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("labrun up") && err.contains(&std::process::id().to_string()),
            "{err}"
        );
        drop(first);
        // Released with the drop. Retried briefly: a process another test
        // forks in this instant shares the lock's open file until it execs
        // (the fd is close-on-exec), and flock belongs to that open file.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            match LabLock::acquire(&p, "demo", "labrun down") {
                Ok(_) => break,
                Err(e) if std::time::Instant::now() > deadline => {
                    panic!("the lock was not released by the drop: {e}")
                }
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        }
    }
}
