//! A throw-away OpenSSH server on 127.0.0.1, for tests (feature `test-sshd`).
//!
//! ```text
//! let sshd = labrun_ssh::test_support::Sshd::start()?;   // keys, config, sshd -D
//! let session = labrun_ssh::connect(&sshd.target(), Duration::from_secs(10)).await?;
//! ```
//!
//! Each server has its own temporary directory with a host key and a client
//! key made by [`crate::generate_ed25519`] (so every test also proves OpenSSH
//! accepts those keys), an `sshd_config` and the log. The server (and the
//! per-connection processes it forked) is killed when the [`Sshd`] is dropped.
//! Needs `/usr/sbin/sshd` (Debian package openssh-server). As root it logs in
//! as root; otherwise as the current user.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use crate::{Target, generate_ed25519};

const SSHD: &str = "/usr/sbin/sshd";
const START_TIMEOUT: Duration = Duration::from_secs(15);

/// The keys and directory of a test server, made before it starts so a test
/// can build its [`Target`] (and, e.g., try to connect) before sshd listens.
pub struct SshdKeys {
    dir: tempfile::TempDir,
    /// The server's host key (private; `.pub` beside it).
    pub host_key: PathBuf,
    /// Its public line, what a [`Target`] pins.
    pub host_key_line: String,
    /// The client key in `authorized_keys`.
    pub client_key: PathBuf,
    pub client_key_line: String,
    /// The user the server lets in (the current user).
    pub user: String,
}

impl SshdKeys {
    pub fn generate() -> std::io::Result<SshdKeys> {
        let dir = tempfile::Builder::new().prefix("labrun-sshd-").tempdir()?;
        let host_key = dir.path().join("ssh_host_ed25519_key");
        let client_key = dir.path().join("client_ed25519");
        let host_key_line =
            generate_ed25519(&host_key, "labrun-test-host").map_err(std::io::Error::other)?;
        let client_key_line =
            generate_ed25519(&client_key, "labrun-test-client").map_err(std::io::Error::other)?;
        std::fs::write(
            dir.path().join("authorized_keys"),
            format!("{client_key_line}\n"),
        )?;
        Ok(SshdKeys {
            dir,
            host_key,
            host_key_line,
            client_key,
            client_key_line,
            user: current_user()?,
        })
    }

    /// The directory holding keys, config and log.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A target for this server on `port`, pinning its host key.
    pub fn target(&self, port: u16) -> Target {
        Target {
            host: "127.0.0.1".into(),
            port,
            user: self.user.clone(),
            client_key: self.client_key.clone(),
            host_key: self.host_key_line.clone(),
            via: None,
        }
    }
}

/// A running `sshd -D -e` on 127.0.0.1.
pub struct Sshd {
    keys: SshdKeys,
    port: u16,
    child: Child,
    log: Arc<Mutex<String>>,
}

impl Sshd {
    /// Fresh keys, a free port, and a started server.
    pub fn start() -> std::io::Result<Sshd> {
        // Another process may take the free port between our probe and
        // sshd's bind; try a few ports. (A server that cannot start at all
        // fails fast: its log pipe closes when it exits.)
        let mut last = None;
        for _ in 0..5 {
            match Sshd::start_with(SshdKeys::generate()?, free_port()?) {
                Ok(sshd) => return Ok(sshd),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("sshd did not start")))
    }

    /// [`Sshd::start`] with `extra` appended to its `sshd_config` (lines
    /// such as `PermitOpen 127.0.0.1:2222`).
    pub fn start_configured(extra: &str) -> std::io::Result<Sshd> {
        let mut last = None;
        for _ in 0..5 {
            match Sshd::start_with_config(SshdKeys::generate()?, free_port()?, extra) {
                Ok(sshd) => return Ok(sshd),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("sshd did not start")))
    }

    /// Starts a server with these keys on `port`; returns once sshd logs
    /// that it listens.
    pub fn start_with(keys: SshdKeys, port: u16) -> std::io::Result<Sshd> {
        Sshd::start_with_config(keys, port, "")
    }

    /// [`Sshd::start_with`] with `extra` appended to its `sshd_config`.
    pub fn start_with_config(keys: SshdKeys, port: u16, extra: &str) -> std::io::Result<Sshd> {
        // sshd running as root insists on its privilege-separation directory.
        let _ = std::fs::create_dir_all("/run/sshd");
        let dir = keys.dir();
        let config = dir.join("sshd_config");
        std::fs::write(&config, format!("{}{extra}\n", sshd_config(&keys, port)))?;
        let mut child = Command::new(SSHD)
            .arg("-D")
            .arg("-e")
            .arg("-f")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            // Its own process group, so Drop can take the forked
            // per-connection processes down with it.
            .process_group(0)
            .spawn()
            .map_err(|e| std::io::Error::new(e.kind(), format!("cannot run {SSHD}: {e}")))?;
        let log = Arc::new(Mutex::new(String::new()));
        let (ready_tx, ready_rx) = mpsc::channel();
        if let Some(stderr) = child.stderr.take() {
            let log = Arc::clone(&log);
            let wanted = format!("Server listening on 127.0.0.1 port {port}");
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if line.contains(&wanted) {
                        let _ = ready_tx.send(());
                    }
                    if let Ok(mut log) = log.lock() {
                        log.push_str(&line);
                        log.push('\n');
                    }
                }
            });
        }
        let sshd = Sshd {
            keys,
            port,
            child,
            log,
        };
        match ready_rx.recv_timeout(START_TIMEOUT) {
            Ok(()) => Ok(sshd),
            Err(_) => Err(std::io::Error::other(format!(
                "sshd did not start listening on port {port}; its log:\n{}",
                sshd.log()
            ))),
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn keys(&self) -> &SshdKeys {
        &self.keys
    }

    /// A target that pins this server's host key, with the authorized client key.
    pub fn target(&self) -> Target {
        self.keys.target(self.port)
    }

    /// What sshd logged so far (useful in assertion messages).
    pub fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// How many logins sshd accepted so far (its `Accepted publickey` lines).
    pub fn logins(&self) -> usize {
        self.log().matches("Accepted publickey for ").count()
    }

    /// Waits until sshd's log contains `text`, for at most `limit`; whether
    /// it did. For what sshd logs after the client is done (a disconnect):
    /// the caller asserts on the answer, the limit only bounds a failure.
    /// Async, so the client's own tasks keep running meanwhile.
    pub async fn wait_for_log(&self, text: &str, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if self.log().contains(text) {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        // sshd puts each connection in a session of its own (setsid), out of
        // the listener's process group: find them by parent before the
        // listener dies and they are handed to init.
        let connections = descendants(self.child.id());
        let mut kill = Command::new("kill");
        kill.arg("-KILL")
            .arg("--")
            .arg(format!("-{}", self.child.id()));
        for pid in connections {
            kill.arg(pid.to_string());
        }
        let _ = kill.stderr(Stdio::null()).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The processes under `root` (children, theirs, ...), from /proc.
fn descendants(root: u32) -> Vec<u32> {
    let mut parent_of = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            // "pid (comm) state ppid ...": comm may hold spaces and ')'.
            let ppid = std::fs::read_to_string(entry.path().join("stat"))
                .ok()
                .and_then(|stat| {
                    let (_, rest) = stat.rsplit_once(')')?;
                    rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                });
            if let Some(ppid) = ppid {
                parent_of.push((pid, ppid));
            }
        }
    }
    let mut found = vec![root];
    let mut next = 0;
    while let Some(&parent) = found.get(next) {
        found.extend(
            parent_of
                .iter()
                .filter(|&&(_, ppid)| ppid == parent)
                .map(|&(pid, _)| pid),
        );
        next += 1;
    }
    found.split_off(1)
}

/// A port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

fn sshd_config(keys: &SshdKeys, port: u16) -> String {
    let dir = keys.dir().display();
    format!(
        "# written by labrun_ssh::test_support\n\
         ListenAddress 127.0.0.1\n\
         Port {port}\n\
         HostKey {host_key}\n\
         AuthorizedKeysFile {dir}/authorized_keys\n\
         PidFile {dir}/sshd.pid\n\
         StrictModes no\n\
         UsePAM no\n\
         PermitRootLogin prohibit-password\n\
         PubkeyAuthentication yes\n\
         PasswordAuthentication no\n\
         KbdInteractiveAuthentication no\n\
         UseDNS no\n\
         PrintMotd no\n\
         PrintLastLog no\n\
         X11Forwarding no\n\
         LogLevel VERBOSE\n\
         Subsystem sftp internal-sftp\n",
        host_key = keys.host_key.display(),
    )
}

fn current_user() -> std::io::Result<String> {
    let out = Command::new("id").arg("-un").output()?;
    let name = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || name.is_empty() {
        return Err(std::io::Error::other(
            "cannot tell the current user (id -un)",
        ));
    }
    Ok(name)
}
