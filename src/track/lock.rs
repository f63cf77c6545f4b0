//! One tracker at a time per track folder: an exclusive `flock` on
//! `track.lock` in it, held while the tracker runs and released by the
//! kernel however the process ends (Ctrl-C, a crash, a reboot), so a stale
//! lock never needs clearing by hand. The holder writes its process id and
//! start time into the file, for the one refused to say who holds it.

use anyhow::Context as _;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read as _, Seek as _, Write as _};
use std::path::Path;

pub const LOCK_FILE: &str = "track.lock";

/// Held while the tracker runs; dropping it releases the lock.
#[derive(Debug)]
pub struct TrackLock {
    _file: File,
}

/// The lock on `folder`'s track, or an error naming who holds it.
pub fn acquire(folder: &Path) -> anyhow::Result<TrackLock> {
    std::fs::create_dir_all(folder)
        .with_context(|| format!("cannot create {}", folder.display()))?;
    let path = folder.join(LOCK_FILE);
    // Not truncated on open: the holder's words stay for the one refused.
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            anyhow::bail!(
                "another labrun track is running on {} ({}); it keeps going: let it finish (a timer's next start \
                 continues after it), or stop that process if it is stuck",
                folder.display(),
                if holder.is_empty() {
                    "its process is starting".to_string()
                } else {
                    holder.to_string()
                }
            );
        }
        Err(TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("cannot lock {}", path.display()));
        }
    }
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let words = format!(
        "held by process {} since {}\n",
        std::process::id(),
        crate::bench::timestamp::utc_stamp(since)
    );
    file.set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| file.write_all(words.as_bytes()))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(TrackLock { _file: file })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_tracker_is_refused_and_told_who_holds_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let held = acquire(dir.path()).unwrap();
        let err = acquire(dir.path()).unwrap_err().to_string();
        assert!(err.contains("another labrun track is running"), "{err}");
        assert!(
            err.contains(&format!("held by process {}", std::process::id())),
            "{err}"
        );
        drop(held);
        // Released: the next tracker takes it.
        acquire(dir.path()).unwrap();
    }
}
