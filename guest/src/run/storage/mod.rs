//! Repositories on a storage server behind a network of the agent's own
//! (the plan's `storage`, [`labrun_evidence::storage`]): a namespace and a
//! veth pair ([`netns`]), `tc netem` on both ends ([`netem`]), the server
//! inside the namespace ([`sftp`], [`rest`], [`server`]), the round trip
//! measured ([`probe`]). Everything is taken down again on every way out of
//! the run: [`Storage::stop`], and its drop should the run end otherwise.

mod cmd;
pub mod error;
pub mod netem;
pub mod netns;
pub mod probe;
pub mod rest;
pub mod s3;
pub mod server;
pub mod sftp;

use crate::run::interrupt::Interrupt;
use crate::run::placeholders::RepoLocation;
pub use error::StorageError;
use labrun_evidence::{Plan, Server, StoragePlan, StorageRecord};
use netns::{Namespace, SERVER_ADDRESS};
use server::ServerProcess;
use sftp::SshFiles;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The plan's storage when it is a server (a local one needs nothing).
pub fn wanted(plan: &Plan) -> Option<&StoragePlan> {
    plan.storage.as_ref().filter(|s| s.server != Server::Local)
}

/// Before the run: what the storage network needs of this machine (root,
/// `ip`, `tc` for a shaped network, OpenSSH for sftp).
pub fn preflight(plan: &Plan) -> Result<(), StorageError> {
    let Some(spec) = wanted(plan) else {
        return Ok(());
    };
    let server = spec.server.to_string();
    // SAFETY: geteuid(2) cannot fail and has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(StorageError::NotRoot { server });
    }
    let mut needed = vec![(
        "ip",
        "-V",
        "the network namespace and veth pair",
        "iproute2",
    )];
    if spec.network.is_some() {
        needed.push(("tc", "-V", "the network's delay and rate", "iproute2"));
    }
    if spec.server == Server::Sftp {
        needed.push((sftp::SSHD, "-V", "the sftp server", "openssh-server"));
        needed.push((
            sftp::SSH_KEYGEN,
            "-?",
            "the run's SSH keys",
            "openssh-client",
        ));
        // restic's sftp and borg's ssh repositories run `ssh` themselves.
        needed.push(("ssh", "-V", "the tools' SSH client", "openssh-client"));
    }
    for (program, arg, why, package) in needed {
        if !cmd::exists(program, arg) {
            return Err(StorageError::MissingProgram {
                server,
                program: program.to_string(),
                why: why.to_string(),
                package,
            });
        }
    }
    Ok(())
}

/// Removes the storage networks of agents that are gone (killed before they
/// could take theirs down); a warning for each.
pub fn remove_leftovers() -> Vec<String> {
    netns::remove_leftovers(std::process::id())
}

/// The network and the server, up.
pub struct Storage {
    server: Server,
    user: String,
    /// The server's root folder: the run's work root.
    root: PathBuf,
    ssh: Option<SshFiles>,
    s3: Option<s3::S3Keys>,
    // Stopped before the namespace goes (fields drop in this order).
    process: Option<ServerProcess>,
    ns: Option<Namespace>,
}

impl Storage {
    /// Brings up the network and the server for a run whose work root is
    /// `root`, the server's output into `logs`; measures the round trip.
    /// On an error whatever was made is taken down again.
    pub fn start(
        spec: &StoragePlan,
        root: &Path,
        logs: &Path,
        interrupt: &Interrupt,
    ) -> Result<(Storage, StorageRecord), StorageError> {
        // Dropped (so deleted) on any error below.
        let ns = Namespace::create(std::process::id())?;
        if let Some(network) = &spec.network {
            netem::apply(&ns, network)?;
        }
        let ns_name = ns.name.clone();
        let mut storage = Storage {
            server: spec.server,
            user: user_name(),
            root: root.to_path_buf(),
            ssh: None,
            s3: None,
            process: None,
            ns: Some(ns),
        };
        let port = spec.server.port().unwrap_or_default();
        let address = SocketAddr::from(([10, 250, 0, 2], port));
        let (argv, version) = match spec.server {
            Server::Sftp => {
                let dir = root.join("storage");
                std::fs::create_dir_all(&dir)
                    .map_err(|e| StorageError::io("cannot create", &dir, e))?;
                let files = sftp::prepare(&dir, &storage.user)?;
                let argv = sftp::sshd_argv(&files);
                storage.ssh = Some(files);
                (argv, server::version_line(sftp::SSHD, "-V"))
            }
            Server::S3 => {
                let binary = spec.binary.clone().unwrap_or_default();
                let keys = s3::S3Keys::generate()?;
                let argv = s3::argv(&binary, &keys, root, &address.to_string());
                storage.s3 = Some(keys);
                (argv, server::version_line(&binary, "--version"))
            }
            Server::Rest | Server::Local => {
                let binary = spec.binary.clone().unwrap_or_default();
                (
                    rest::argv(&binary, root, &address.to_string()),
                    server::version_line(&binary, "--version"),
                )
            }
        };
        std::fs::create_dir_all(logs).map_err(|e| StorageError::io("cannot create", logs, e))?;
        let mut process = ServerProcess::start(
            spec.server.as_str(),
            &ns_name,
            &argv,
            &logs.join("server.out"),
            &logs.join("server.err"),
        )?;
        let ready = process.wait_ready(address, interrupt);
        storage.process = Some(process);
        ready?;
        let connect_rtt_ms = probe::connect_rtts(address, probe::CONNECTS);
        let qdiscs = storage.ns.as_ref().map(netem::show).unwrap_or_default();
        let record = StorageRecord {
            server: spec.server,
            network: spec.network,
            address: address.to_string(),
            connect_rtt_ms,
            qdiscs,
            server_version: version,
        };
        Ok((storage, record))
    }

    /// Where a repository folder is, as the tools reach it.
    pub fn location(&self, folder: &Path) -> RepoLocation {
        location(
            self.server,
            &self.user,
            &self.root,
            self.ssh.as_ref(),
            self.s3.as_ref(),
            folder,
        )
    }

    /// Stops the server and deletes the namespace; what could not be done,
    /// for warnings. Idempotent.
    pub fn stop(&mut self) -> Vec<String> {
        if let Some(p) = self.process.as_mut() {
            p.stop();
        }
        let mut warnings = Vec::new();
        if let Some(ns) = self.ns.as_mut()
            && let Err(e) = ns.delete()
        {
            warnings.push(format!(
                "the storage network could not be removed ({e}): remove it with `ip netns delete {}`",
                ns.name
            ));
        }
        warnings
    }
}

/// A repository folder on the machine's own disk.
pub fn local_location(folder: &Path) -> RepoLocation {
    location(Server::Local, "", Path::new("/"), None, None, folder)
}

fn location(
    server: Server,
    user: &str,
    root: &Path,
    ssh: Option<&SshFiles>,
    s3: Option<&s3::S3Keys>,
    folder: &Path,
) -> RepoLocation {
    let path = folder.to_string_lossy().into_owned();
    let port = server.port().map(|p| p.to_string()).unwrap_or_default();
    let file = |p: Option<&PathBuf>| p.map(|p| p.to_string_lossy().into_owned());
    let (host, user) = match server {
        Server::Local => (String::new(), String::new()),
        Server::Sftp | Server::Rest => (SERVER_ADDRESS.to_string(), user.to_string()),
        // S3 has keys, not users.
        Server::S3 => (SERVER_ADDRESS.to_string(), String::new()),
    };
    let under = folder.strip_prefix(root).unwrap_or(folder);
    let under = under.to_string_lossy();
    let under = under.trim_matches('/');
    let url = match server {
        Server::Local => path.clone(),
        // The path absolute after the host's slash, as restic and
        // duplicity read `sftp://host//abs/path`.
        Server::Sftp => format!("sftp://{user}@{host}:{port}/{path}"),
        Server::Rest => format!("http://{host}:{port}/{under}/"),
        // The bucket, then the key prefix: `<root>/c1-restic/repo`.
        Server::S3 => format!("http://{host}:{port}/{under}"),
    };
    let bucket = match server {
        Server::S3 => under.split('/').next().unwrap_or_default().to_string(),
        _ => String::new(),
    };
    RepoLocation {
        path,
        host,
        port,
        user,
        url,
        ssh_config: file(ssh.map(|s| &s.ssh_config)).unwrap_or_default(),
        ssh_key: file(ssh.map(|s| &s.key)).unwrap_or_default(),
        known_hosts: file(ssh.map(|s| &s.known_hosts)).unwrap_or_default(),
        s3_bucket: bucket,
        s3_access_key: s3.map(|k| k.access.clone()).unwrap_or_default(),
        s3_secret_key: s3.map(|k| k.secret.clone()).unwrap_or_default(),
    }
}

/// The agent's user name (the server lets it in with the run's key).
fn user_name() -> String {
    // SAFETY: getuid(2) cannot fail; getpwuid_r writes only into the buffers
    // given, and `result` points into `pwd` (or is null) when it returns.
    unsafe {
        let uid = libc::getuid();
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut buf = vec![0 as libc::c_char; 4096];
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut result);
        if rc == 0 && !result.is_null() && !pwd.pw_name.is_null() {
            std::ffi::CStr::from_ptr(pwd.pw_name)
                .to_string_lossy()
                .into_owned()
        } else if uid == 0 {
            "root".to_string()
        } else {
            uid.to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ssh() -> SshFiles {
        SshFiles {
            sshd_config: "/w/r/storage/sshd_config".into(),
            ssh_config: "/w/r/storage/ssh_config".into(),
            key: "/w/r/storage/client_ed25519".into(),
            known_hosts: "/w/r/storage/known_hosts".into(),
        }
    }

    #[test]
    fn local_is_the_folder() {
        let l = local_location(Path::new("/w/r/c1-restic/repo"));
        assert_eq!(l.path, "/w/r/c1-restic/repo");
        assert_eq!(l.url, "/w/r/c1-restic/repo");
        assert_eq!(
            (l.host.as_str(), l.port.as_str(), l.user.as_str()),
            ("", "", "")
        );
        assert_eq!(l.ssh_config, "");
    }

    #[test]
    fn sftp_url_and_files() {
        let files = ssh();
        let l = location(
            Server::Sftp,
            "root",
            Path::new("/w/r"),
            Some(&files),
            None,
            Path::new("/w/r/c2-borg/repo"),
        );
        assert_eq!(l.url, "sftp://root@10.250.0.2:22//w/r/c2-borg/repo");
        assert_eq!((l.host.as_str(), l.port.as_str()), ("10.250.0.2", "22"));
        assert_eq!(l.user, "root");
        assert_eq!(l.path, "/w/r/c2-borg/repo");
        assert_eq!(l.ssh_config, "/w/r/storage/ssh_config");
        assert_eq!(l.ssh_key, "/w/r/storage/client_ed25519");
        assert_eq!(l.known_hosts, "/w/r/storage/known_hosts");
    }

    #[test]
    fn rest_url_is_relative_to_the_server_root() {
        let l = location(
            Server::Rest,
            "root",
            Path::new("/w/r"),
            None,
            None,
            Path::new("/w/r/c1-restic/repo"),
        );
        assert_eq!(l.url, "http://10.250.0.2:8000/c1-restic/repo/");
        assert_eq!(l.port, "8000");
        assert_eq!(l.ssh_config, "");
        assert_eq!(l.s3_bucket, "");
    }

    #[test]
    fn s3_url_is_the_bucket_then_the_prefix() {
        let keys = s3::S3Keys {
            access: "labrunab12".into(),
            secret: "5ec".into(),
        };
        let l = location(
            Server::S3,
            "root",
            Path::new("/w/r"),
            None,
            Some(&keys),
            Path::new("/w/r/c1-restic/repo"),
        );
        assert_eq!(l.url, "http://10.250.0.2:7070/c1-restic/repo");
        assert_eq!(l.s3_bucket, "c1-restic");
        assert_eq!(
            (l.host.as_str(), l.port.as_str(), l.user.as_str()),
            ("10.250.0.2", "7070", "")
        );
        assert_eq!(
            (l.s3_access_key.as_str(), l.s3_secret_key.as_str()),
            ("labrunab12", "5ec")
        );
        assert_eq!(l.path, "/w/r/c1-restic/repo");
    }
}
