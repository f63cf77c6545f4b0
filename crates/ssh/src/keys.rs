//! ed25519 keys in OpenSSH formats: the per-lab client key and the per-VM host
//! key are made here, injected into the guest, and read back to connect.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use russh::keys::ssh_key::{self, LineEnding};
use russh::keys::{Algorithm, HashAlg, PrivateKey, PublicKey};

use crate::SshError;

fn key_error(path: &Path, reason: impl std::fmt::Display) -> SshError {
    SshError::Key {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

/// Creates a new ed25519 key pair: the private key in OpenSSH format at
/// `private` (mode 0600), returns the public key line (`ssh-ed25519 AAAA.. comment`)
/// and also writes it to `private` + `.pub` (mode 0644). Existing files are
/// replaced; each file is written under a temporary name and renamed, so a
/// crash never leaves half a key.
pub fn generate_ed25519(private: &Path, comment: &str) -> Result<String, SshError> {
    let mut key = PrivateKey::random(&mut rand::rng(), Algorithm::Ed25519)
        .map_err(|e| key_error(private, format!("cannot generate an ed25519 key: {e}")))?;
    key.set_comment(comment);
    let pem = key
        .to_openssh(LineEnding::LF)
        .map_err(|e| key_error(private, format!("cannot encode the key: {e}")))?;
    let line = key
        .public_key()
        .to_openssh()
        .map_err(|e| key_error(private, format!("cannot encode the public key: {e}")))?;

    write_atomically(private, pem.as_bytes(), 0o600)?;
    let public = public_path(private);
    write_atomically(&public, format!("{line}\n").as_bytes(), 0o644)?;
    Ok(line)
}

/// Reads the public key line of an OpenSSH private key file.
pub fn public_key_line(private: &Path) -> Result<String, SshError> {
    load_private_key(private)?
        .public_key()
        .to_openssh()
        .map_err(|e| key_error(private, format!("cannot encode the public key: {e}")))
}

/// The SHA-256 fingerprint (`SHA256:...`, as `ssh-keygen -l` prints it) of an
/// OpenSSH public key line.
pub fn fingerprint_of_line(line: &str) -> Result<String, SshError> {
    Ok(fingerprint(&parse_public_line(line)?))
}

pub(crate) fn fingerprint(key: &PublicKey) -> String {
    key.fingerprint(HashAlg::Sha256).to_string()
}

/// Refuses what the connection would refuse: a line that is not an OpenSSH
/// public key, including one whose type name does not match its key blob.
/// `labrun check` applies it to a lab's pinned host key.
pub fn check_host_key_line(line: &str) -> Result<(), SshError> {
    parse_public_line(line).map(|_| ())
}

/// Parses a pinned host key line (`ssh-ed25519 AAAA... [comment]`).
pub(crate) fn parse_public_line(line: &str) -> Result<PublicKey, SshError> {
    PublicKey::from_openssh(line.trim()).map_err(|e| {
        SshError::Protocol(format!(
            "the pinned host key `{}` is not an OpenSSH public key line ({e}); it should look like `ssh-ed25519 AAAA... comment`",
            line.trim()
        ))
    })
}

/// Loads an unencrypted OpenSSH private key file.
pub(crate) fn load_private_key(path: &Path) -> Result<PrivateKey, SshError> {
    let key = PrivateKey::read_openssh_file(path).map_err(|e| match e {
        ssh_key::Error::Io(kind) => key_error(path, format!("cannot read it ({kind:?})")),
        other => key_error(
            path,
            format!(
                "not an OpenSSH private key ({other}); make one with `ssh-keygen -t ed25519 -N ''`"
            ),
        ),
    })?;
    if key.is_encrypted() {
        return Err(key_error(
            path,
            "the key is passphrase-protected; labrun needs an unencrypted key (ssh-keygen -N '')",
        ));
    }
    Ok(key)
}

fn public_path(private: &Path) -> PathBuf {
    let mut name = private.as_os_str().to_owned();
    name.push(".pub");
    PathBuf::from(name)
}

fn write_atomically(path: &Path, contents: &[u8], mode: u32) -> Result<(), SshError> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let io = |e: std::io::Error| key_error(path, format!("cannot write it: {e}"));
    // NamedTempFile is created 0600, so the private key is never readable by
    // others, not even for a moment.
    let mut tmp = tempfile::Builder::new()
        .prefix(".labrun-key-")
        .tempfile_in(dir)
        .map_err(io)?;
    tmp.write_all(contents).map_err(io)?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(io)?;
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_key_round_trips_and_has_the_right_modes() {
        let dir = tempfile::tempdir().unwrap();
        let private = dir.path().join("id_ed25519");
        let line = generate_ed25519(&private, "labrun-test").unwrap();
        assert!(line.starts_with("ssh-ed25519 AAAA"), "{line}");
        assert!(line.ends_with(" labrun-test"), "{line}");
        assert_eq!(public_key_line(&private).unwrap(), line);
        let pub_file = std::fs::read_to_string(dir.path().join("id_ed25519.pub")).unwrap();
        assert_eq!(pub_file, format!("{line}\n"));
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&private), 0o600);
        assert_eq!(mode(&dir.path().join("id_ed25519.pub")), 0o644);
        // Only the two key files: no temporary left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn two_keys_differ() {
        let dir = tempfile::tempdir().unwrap();
        let a = generate_ed25519(&dir.path().join("a"), "x").unwrap();
        let b = generate_ed25519(&dir.path().join("b"), "x").unwrap();
        assert_ne!(a, b);
    }

    #[test]
    fn fingerprint_matches_the_sha256_format() {
        let dir = tempfile::tempdir().unwrap();
        let line = generate_ed25519(&dir.path().join("k"), "c").unwrap();
        let fp = fingerprint_of_line(&line).unwrap();
        assert!(fp.starts_with("SHA256:"), "{fp}");
        assert_eq!(fp.len(), "SHA256:".len() + 43, "{fp}");
        // The comment does not change the fingerprint.
        let without_comment: String = line.split(' ').take(2).collect::<Vec<_>>().join(" ");
        assert_eq!(fingerprint_of_line(&without_comment).unwrap(), fp);
    }

    #[test]
    fn bad_inputs_give_actionable_errors() {
        let dir = tempfile::tempdir().unwrap();
        let missing = public_key_line(&dir.path().join("nope")).unwrap_err();
        assert!(matches!(missing, SshError::Key { .. }), "{missing}");
        let junk = dir.path().join("junk");
        std::fs::write(&junk, "not a key").unwrap();
        let err = public_key_line(&junk).unwrap_err().to_string();
        assert!(err.contains("ssh-keygen"), "{err}");
        let err = fingerprint_of_line("ssh-ed25519 garbage")
            .unwrap_err()
            .to_string();
        assert!(err.contains("pinned host key"), "{err}");
    }
}
