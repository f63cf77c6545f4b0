//! A throw-away PostgreSQL server on 127.0.0.1, for tests (feature
//! `test-postgres`): Debian's own server binaries (`postgresql` package),
//! a data folder of its own, a free loopback port, stopped when dropped
//! (also when the test panics). As root it runs as the `postgres` user,
//! since the server refuses root.

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How clients log in over TCP.
pub enum Auth {
    /// Any user, no password: most tests.
    Trust,
    /// The superuser `labrun` with this password (SCRAM).
    Password(String),
}

pub struct TestPostgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    user: Option<(u32, u32)>,
}

impl TestPostgres {
    pub fn start(auth: Auth) -> std::io::Result<TestPostgres> {
        let bin = server_bin()?;
        let dir = tempfile::Builder::new().prefix("labrun-pg-").tempdir()?;
        let user = if is_root() {
            Some(postgres_ids()?)
        } else {
            None
        };
        let data = dir.path().join("data");
        let pwfile = dir.path().join("pw");
        let (host_auth, pw) = match &auth {
            Auth::Trust => ("trust", "unused".to_string()),
            Auth::Password(p) => ("scram-sha-256", p.clone()),
        };
        std::fs::write(&pwfile, format!("{pw}\n"))?;
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))?;
            std::os::unix::fs::chown(&pwfile, Some(uid), Some(gid))?;
        }
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))?;
        let this = TestPostgres {
            dir,
            bin,
            port: free_port()?,
            user,
        };
        this.run(
            this.cmd("initdb")
                .args([
                    "-U",
                    "labrun",
                    "--no-sync",
                    "-E",
                    "UTF8",
                    "--locale=C.UTF-8",
                ])
                .arg("--auth-local=trust")
                .arg(format!("--auth-host={host_auth}"))
                .arg(format!("--pwfile={}", pwfile.display()))
                .arg("-D")
                .arg(&data),
        )?;
        let log = this.dir.path().join("server.log");
        this.run(
            this.cmd("pg_ctl")
                .arg("-D")
                .arg(&data)
                .arg("-l")
                .arg(&log)
                .arg("-o")
                .arg(format!(
                    "-h 127.0.0.1 -p {} -k {} -c fsync=off",
                    this.port,
                    this.dir.path().display()
                ))
                .args(["-w", "-t", "60", "start"]),
        )?;
        // pg_ctl -w waits for the server; check the port answers too.
        let deadline = Instant::now() + START_TIMEOUT;
        while std::net::TcpStream::connect(("127.0.0.1", this.port)).is_err() {
            if Instant::now() > deadline {
                return Err(std::io::Error::other(format!(
                    "PostgreSQL did not listen on 127.0.0.1:{} within {START_TIMEOUT:?}; its log: {}",
                    this.port,
                    log.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(this)
    }

    /// A URL for database `db` as user `labrun` (no password in it).
    pub fn url(&self, db: &str) -> String {
        format!("postgres://labrun@127.0.0.1:{}/{db}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Creates an empty database `name` (over the local socket, trusted).
    pub fn create_database(&self, name: &str) -> std::io::Result<()> {
        self.run(self.cmd("createdb").arg("-h").arg(self.dir.path()).args([
            "-p",
            &self.port.to_string(),
            "-U",
            "labrun",
            name,
        ]))
    }

    /// Runs `sql` in database `db` with psql (for tests that plant a
    /// foreign table or a newer schema).
    pub fn psql(&self, db: &str, sql: &str) -> std::io::Result<()> {
        self.run(
            self.cmd("psql")
                .arg("-h")
                .arg(self.dir.path())
                .args([
                    "-p",
                    &self.port.to_string(),
                    "-U",
                    "labrun",
                    "-v",
                    "ON_ERROR_STOP=1",
                ])
                .args(["-d", db, "-c", sql]),
        )
    }

    fn cmd(&self, tool: &str) -> Command {
        let mut c = Command::new(self.bin.join(tool));
        if let Some((uid, gid)) = self.user {
            c.uid(uid).gid(gid);
            c.env("HOME", self.dir.path());
        }
        c.current_dir(self.dir.path());
        c
    }

    fn run(&self, cmd: &mut Command) -> std::io::Result<()> {
        let out = cmd.output()?;
        if out.status.success() {
            Ok(())
        } else {
            Err(std::io::Error::other(format!(
                "{:?} failed ({}): {}{}",
                cmd.get_program(),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )))
        }
    }
}

impl Drop for TestPostgres {
    fn drop(&mut self) {
        let data = self.dir.path().join("data");
        let _ = self
            .cmd("pg_ctl")
            .arg("-D")
            .arg(&data)
            .args(["-m", "immediate", "-w", "stop"])
            .output();
    }
}

/// The newest `/usr/lib/postgresql/N/bin`.
fn server_bin() -> std::io::Result<PathBuf> {
    let root = Path::new("/usr/lib/postgresql");
    let newest = std::fs::read_dir(root)
        .ok()
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n: u32 = e.file_name().to_str()?.parse().ok()?;
            Some((n, e.path().join("bin")))
        })
        .filter(|(_, bin)| bin.join("initdb").is_file())
        .max();
    newest.map(|(_, bin)| bin).ok_or_else(|| {
        std::io::Error::other(
            "no PostgreSQL server under /usr/lib/postgresql: install Debian's postgresql package (`make test` does, through scripts/host-setup.sh)",
        )
    })
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
}

/// The `postgres` user's uid and gid, from /etc/passwd.
fn postgres_ids() -> std::io::Result<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd")?;
    passwd
        .lines()
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.first() == Some(&"postgres") && f.len() > 3)
        .and_then(|f| Some((f[2].parse().ok()?, f[3].parse().ok()?)))
        .ok_or_else(|| {
            std::io::Error::other(
                "no `postgres` user to run the test server as (the server refuses root): install Debian's postgresql package",
            )
        })
}
