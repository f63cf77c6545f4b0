//! Settling the disk before a timed step, as BorgBase's harness does: after
//! the cache drop, `fstrim -v` of the file system the run works on, so the
//! blocks the previous tool cycle freed are given back to the (virtual)
//! disk now instead of being discarded during the next tool's step. Then,
//! when the lab asks, a cool-down.
//!
//! A file system or disk without discard is normal (a virtio disk without
//! `discard='unmap'`, tmpfs, overlayfs in a container): recorded as not
//! supported, never an error. What runs `fstrim` is the executor
//! ([`crate::run::measure::Executor::fstrim`]), so tests run none.

use labrun_evidence::record::{Trim, TrimOutcome};
use std::io;
use std::path::{Path, PathBuf};
use std::process::Output;

/// The mount point of the file system holding `path`: the longest mount
/// point of `mounts` (`/proc/self/mounts` text) that is `path` or one of
/// its ancestors; `/` when none is.
pub fn mount_of(path: &Path, mounts: &str) -> PathBuf {
    mounts
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .map(unescape_mount)
        .filter(|m| path.starts_with(m))
        .max_by_key(|m| m.as_os_str().len())
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// `/proc/self/mounts` writes a space in a mount point as `\040` (tab,
/// newline and backslash likewise, in octal).
fn unescape_mount(field: &str) -> PathBuf {
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let code = rest.get(i + 1..i + 4);
        match code.and_then(|c| u8::from_str_radix(c, 8).ok()) {
            Some(b) => {
                out.push(char::from(b));
                rest = &rest[i + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    PathBuf::from(out)
}

/// What `fstrim -v MOUNT` answered, in the record's words.
pub fn outcome(mount: &Path, ran: io::Result<Output>) -> Trim {
    let outcome = match ran {
        Err(e) if e.kind() == io::ErrorKind::NotFound => TrimOutcome::NotRun {
            reason: "fstrim is not installed (Debian's util-linux package has it)".into(),
        },
        Err(e) => TrimOutcome::NotRun {
            reason: format!("fstrim could not run: {e}"),
        },
        Ok(out) => {
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            let said = stderr.trim().lines().last().unwrap_or("").to_string();
            if out.status.success() {
                TrimOutcome::Trimmed {
                    bytes: trimmed_bytes(&stdout),
                }
            } else if stderr.contains("not supported") {
                // "the discard operation is not supported": no discard here.
                TrimOutcome::NotSupported { detail: said }
            } else if stderr.contains("not permitted") || stderr.contains("must be root") {
                TrimOutcome::NotRun {
                    reason: format!("fstrim needs root: {said}"),
                }
            } else {
                TrimOutcome::Failed {
                    reason: format!(
                        "fstrim exited with {}: {said}",
                        out.status
                            .code()
                            .map_or("a signal".to_string(), |c| format!("status {c}"))
                    ),
                }
            }
        }
    };
    Trim {
        mount: mount.to_string_lossy().into_owned(),
        outcome,
    }
}

/// `/srv: 1.2 GiB (1288490188 bytes) trimmed` -> 1288490188.
fn trimmed_bytes(stdout: &str) -> Option<u64> {
    let open = stdout.find('(')?;
    let close = open + stdout[open..].find(" bytes)")?;
    stdout[open + 1..close].trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;
    use std::process::ExitStatus;

    fn output(code: i32, stdout: &str, stderr: &str) -> io::Result<Output> {
        Ok(Output {
            status: ExitStatus::from_raw(code << 8),
            stdout: stdout.as_bytes().to_vec(),
            stderr: stderr.as_bytes().to_vec(),
        })
    }

    #[test]
    fn each_answer_of_fstrim_has_its_kind() {
        let m = Path::new("/srv");
        let t = outcome(
            m,
            output(0, "/srv: 1.2 GiB (1288490188 bytes) trimmed\n", ""),
        );
        assert_eq!(t.mount, "/srv");
        assert_eq!(
            t.outcome,
            TrimOutcome::Trimmed {
                bytes: Some(1_288_490_188)
            }
        );
        // A file system that trims nothing new still trimmed.
        let t = outcome(m, output(0, "/srv: 0 B (0 bytes) trimmed\n", ""));
        assert_eq!(t.outcome, TrimOutcome::Trimmed { bytes: Some(0) });
        let t = outcome(
            m,
            output(
                1,
                "",
                "fstrim: /srv: the discard operation is not supported\n",
            ),
        );
        assert_eq!(
            t.outcome,
            TrimOutcome::NotSupported {
                detail: "fstrim: /srv: the discard operation is not supported".into()
            }
        );
        let t = outcome(
            m,
            output(
                1,
                "",
                "fstrim: /srv: FITRIM ioctl failed: Operation not permitted\n",
            ),
        );
        assert!(
            matches!(&t.outcome, TrimOutcome::NotRun { reason } if reason.starts_with("fstrim needs root")),
            "{t:?}"
        );
        let t = outcome(
            m,
            output(
                32,
                "",
                "fstrim: /srv: FITRIM ioctl failed: Input/output error\n",
            ),
        );
        assert_eq!(
            t.outcome,
            TrimOutcome::Failed {
                reason: "fstrim exited with status 32: fstrim: /srv: FITRIM ioctl failed: Input/output error".into()
            }
        );
        let t = outcome(m, Err(io::Error::from(io::ErrorKind::NotFound)));
        assert!(
            matches!(&t.outcome, TrimOutcome::NotRun { reason } if reason.contains("not installed")),
            "{t:?}"
        );
    }

    #[test]
    fn the_work_folders_mount_is_the_longest_that_holds_it() {
        let mounts = "/dev/vda / ext4 rw 0 0\nproc /proc proc rw 0 0\n\
                      /dev/vdc /srv/lab\\040data xfs rw 0 0\n/dev/vdd /srv/labx ext4 rw 0 0\n";
        assert_eq!(
            mount_of(Path::new("/srv/lab data/run-1/c1-restic"), mounts),
            PathBuf::from("/srv/lab data")
        );
        // A prefix of the name is not an ancestor.
        assert_eq!(mount_of(Path::new("/srv/lab"), mounts), PathBuf::from("/"));
        assert_eq!(mount_of(Path::new("/x"), ""), PathBuf::from("/"));
    }
}
