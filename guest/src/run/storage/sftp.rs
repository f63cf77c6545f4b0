//! The sftp server: the machine's own OpenSSH `sshd`, with keys made for
//! the run, and the files the tools reach it with (an ssh_config naming
//! the run's key and pinning the server's host key).

use super::cmd::run;
use super::error::StorageError;
use super::netns::SERVER_ADDRESS;
use std::path::{Path, PathBuf};

pub const SSHD: &str = "/usr/sbin/sshd";
pub const SSH_KEYGEN: &str = "ssh-keygen";
/// sshd's privilege separation directory, which it refuses to start without.
const PRIVSEP_DIR: &str = "/run/sshd";

/// The run's SSH files, under the storage folder of the work tree.
#[derive(Debug, Clone, PartialEq)]
pub struct SshFiles {
    pub sshd_config: PathBuf,
    /// For the tools: `ssh -F {ssh_config}`.
    pub ssh_config: PathBuf,
    pub key: PathBuf,
    pub known_hosts: PathBuf,
}

/// Makes the keys and writes the configurations into `dir`.
pub fn prepare(dir: &Path, user: &str) -> Result<SshFiles, StorageError> {
    let host_key = dir.join("host_ed25519");
    let key = dir.join("client_ed25519");
    for k in [&host_key, &key] {
        let path = k.to_string_lossy();
        run(&[
            SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-C", "labrun", "-f", &path,
        ])?;
    }
    let read = |p: PathBuf| {
        std::fs::read_to_string(&p).map_err(|e| StorageError::io("cannot read the key", p, e))
    };
    let host_public = read(host_key.with_extension("pub"))?;
    let client_public = read(key.with_extension("pub"))?;
    let files = SshFiles {
        sshd_config: dir.join("sshd_config"),
        ssh_config: dir.join("ssh_config"),
        key,
        known_hosts: dir.join("known_hosts"),
    };
    let authorized = dir.join("authorized_keys");
    let write = |p: &Path, text: String| {
        std::fs::write(p, text).map_err(|e| StorageError::io("cannot write", p, e))
    };
    write(&authorized, client_public)?;
    write(&files.known_hosts, known_hosts_line(&host_public))?;
    write(&files.sshd_config, sshd_config(&host_key, &authorized))?;
    write(&files.ssh_config, ssh_config(user, &files))?;
    std::fs::create_dir_all(PRIVSEP_DIR)
        .map_err(|e| StorageError::io("cannot create sshd's directory", PRIVSEP_DIR, e))?;
    Ok(files)
}

pub fn sshd_argv(files: &SshFiles) -> Vec<String> {
    vec![
        SSHD.to_string(),
        "-D".into(),
        "-e".into(),
        "-f".into(),
        files.sshd_config.to_string_lossy().into_owned(),
    ]
}

fn sshd_config(host_key: &Path, authorized_keys: &Path) -> String {
    format!(
        "ListenAddress {SERVER_ADDRESS}:22\n\
         HostKey {}\n\
         AuthorizedKeysFile {}\n\
         PermitRootLogin prohibit-password\n\
         PubkeyAuthentication yes\n\
         PasswordAuthentication no\n\
         KbdInteractiveAuthentication no\n\
         UsePAM no\n\
         StrictModes no\n\
         PidFile none\n\
         PrintMotd no\n\
         X11Forwarding no\n\
         Subsystem sftp internal-sftp\n",
        host_key.display(),
        authorized_keys.display()
    )
}

fn ssh_config(user: &str, files: &SshFiles) -> String {
    format!(
        "Host {SERVER_ADDRESS}\n\
         \x20 User {user}\n\
         \x20 Port 22\n\
         \x20 IdentityFile {}\n\
         \x20 IdentitiesOnly yes\n\
         \x20 UserKnownHostsFile {}\n\
         \x20 GlobalKnownHostsFile /dev/null\n\
         \x20 StrictHostKeyChecking yes\n\
         \x20 BatchMode yes\n\
         \x20 LogLevel ERROR\n",
        files.key.display(),
        files.known_hosts.display()
    )
}

/// `10.250.0.2 ssh-ed25519 AAAA...` from the host key's `.pub` line.
fn known_hosts_line(host_public: &str) -> String {
    let mut words = host_public.split_whitespace();
    let kind = words.next().unwrap_or_default();
    let key = words.next().unwrap_or_default();
    format!("{SERVER_ADDRESS} {kind} {key}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_the_host_key_for_the_servers_address() {
        assert_eq!(
            known_hosts_line("ssh-ed25519 AAAAC3Nz labrun\n"),
            "10.250.0.2 ssh-ed25519 AAAAC3Nz\n"
        );
    }

    #[test]
    fn the_client_config_is_batch_and_pinned() {
        let files = SshFiles {
            sshd_config: "/s/sshd_config".into(),
            ssh_config: "/s/ssh_config".into(),
            key: "/s/key".into(),
            known_hosts: "/s/known_hosts".into(),
        };
        let text = ssh_config("root", &files);
        for line in [
            "Host 10.250.0.2",
            "User root",
            "IdentityFile /s/key",
            "UserKnownHostsFile /s/known_hosts",
            "StrictHostKeyChecking yes",
            "BatchMode yes",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        let text = sshd_config(Path::new("/s/h"), Path::new("/s/a"));
        assert!(text.contains("ListenAddress 10.250.0.2:22\n"), "{text}");
        assert!(text.contains("Subsystem sftp internal-sftp\n"), "{text}");
    }
}
