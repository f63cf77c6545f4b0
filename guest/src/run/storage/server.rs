//! The server process: started inside the namespace as the agent's child,
//! in a process group of its own, its output into the evidence; waited for
//! until its port takes connections; stopped with its group.

use super::error::StorageError;
use crate::run::interrupt::Interrupt;
use crate::run::process::signal_group;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to listen.
pub const READY_WITHIN: Duration = Duration::from_secs(30);
/// How long it gets to end after SIGTERM before SIGKILL.
const GRACE: Duration = Duration::from_secs(5);
const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

pub struct ServerProcess {
    child: Child,
    /// The server's name, for messages.
    name: String,
    /// Where its stderr goes, quoted when it fails to start.
    stderr: std::path::PathBuf,
    stopped: bool,
}

impl ServerProcess {
    /// `ip netns exec <ns> argv...`, with only a PATH in its environment.
    pub fn start(
        name: &str,
        ns: &str,
        argv: &[String],
        stdout: &Path,
        stderr: &Path,
    ) -> Result<ServerProcess, StorageError> {
        let create = |p: &Path| {
            std::fs::File::create(p).map_err(|e| StorageError::io("cannot create", p, e))
        };
        let child = Command::new("ip")
            .args(["netns", "exec", ns])
            .args(argv)
            .env_clear()
            .env("PATH", PATH)
            .stdin(Stdio::null())
            .stdout(create(stdout)?)
            .stderr(create(stderr)?)
            .process_group(0)
            .spawn()
            .map_err(|e| StorageError::Command {
                command: format!("ip netns exec {ns} {}", argv.join(" ")),
                message: format!("cannot start it ({e})"),
            })?;
        Ok(ServerProcess {
            child,
            name: name.to_string(),
            stderr: stderr.to_path_buf(),
            stopped: false,
        })
    }

    /// Polls until `address` accepts a TCP connection, the server ends, a
    /// stop signal comes, or [`READY_WITHIN`] has passed.
    pub fn wait_ready(
        &mut self,
        address: SocketAddr,
        interrupt: &Interrupt,
    ) -> Result<(), StorageError> {
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if let Some(signal) = interrupt.stopped_by() {
                return Err(StorageError::Interrupted(signal));
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                self.stopped = true;
                return Err(StorageError::ServerExited {
                    server: self.name.clone(),
                    status: status.to_string(),
                    log: self.log_tail(),
                });
            }
            if TcpStream::connect_timeout(&address, Duration::from_millis(500)).is_ok() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(StorageError::ServerTimeout {
                    server: self.name.clone(),
                    address: address.to_string(),
                    secs: READY_WITHIN.as_secs(),
                    log: self.log_tail(),
                });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        let lines: Vec<&str> = text.lines().rev().take(5).collect();
        let tail = lines.into_iter().rev().collect::<Vec<_>>().join(" | ");
        if tail.is_empty() {
            format!("{} is empty", self.stderr.display())
        } else {
            tail
        }
    }

    /// SIGTERM to its group, SIGKILL after [`GRACE`], reaped. Idempotent.
    pub fn stop(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        let Ok(group) = libc::pid_t::try_from(self.child.id()) else {
            return;
        };
        signal_group(group, libc::SIGTERM);
        let deadline = Instant::now() + GRACE;
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                // The group may hold more than its leader.
                signal_group(group, libc::SIGKILL);
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        signal_group(group, libc::SIGKILL);
        let _ = self.child.wait();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The first non-empty line `program flag` prints on stdout or stderr
/// (`sshd -V` prints its version to stderr).
pub fn version_line(program: &str, flag: &str) -> Option<String> {
    let out = Command::new(program)
        .arg(flag)
        .stdin(Stdio::null())
        .output()
        .ok()?;
    crate::run::tool_versions::first_nonempty_line(
        [out.stdout, out.stderr].map(|bytes| String::from_utf8_lossy(&bytes).into_owned()),
    )
}
