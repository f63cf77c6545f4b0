//! The seed disk: a raw tar the guest's `vmseed.service` unpacks onto `/`
//! before sshd starts. It carries the client's authorized key and the host
//! key labrun generated, so the host key is known (and pinned) before boot.

use crate::error::VmError;
use std::path::Path;

/// Keys that go into the guest.
pub struct SeedKeys<'a> {
    /// `ssh-ed25519 AAAA... comment` of the client key.
    pub authorized_key: &'a str,
    /// OpenSSH private key file content of the guest's host key.
    pub host_private_key: &'a [u8],
    /// Public key line of the guest's host key.
    pub host_public_key: &'a str,
}

/// Writes the seed tar at `path` (mode 0644: libvirt-qemu must read it; the
/// private host key inside is throw-away, made for this one boot).
pub fn write_seed(path: &Path, keys: &SeedKeys<'_>) -> Result<(), VmError> {
    let bytes = seed_bytes(keys).map_err(VmError::io(path))?;
    crate::state::write_atomic(path, &bytes, 0o644)
}

fn seed_bytes(keys: &SeedKeys<'_>) -> std::io::Result<Vec<u8>> {
    let mut b = tar::Builder::new(Vec::new());
    dir(&mut b, "root/", 0o700)?;
    dir(&mut b, "root/.ssh/", 0o700)?;
    file(
        &mut b,
        "root/.ssh/authorized_keys",
        0o600,
        line(keys.authorized_key).as_bytes(),
    )?;
    dir(&mut b, "etc/", 0o755)?;
    dir(&mut b, "etc/ssh/", 0o755)?;
    file(
        &mut b,
        "etc/ssh/ssh_host_ed25519_key",
        0o600,
        keys.host_private_key,
    )?;
    file(
        &mut b,
        "etc/ssh/ssh_host_ed25519_key.pub",
        0o644,
        line(keys.host_public_key).as_bytes(),
    )?;
    b.into_inner()
}

fn line(s: &str) -> String {
    format!("{}\n", s.trim_end())
}

fn header(kind: tar::EntryType, mode: u32, size: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(kind);
    h.set_mode(mode);
    h.set_uid(0);
    h.set_gid(0);
    h.set_mtime(0);
    h.set_size(size);
    h
}

fn dir(b: &mut tar::Builder<Vec<u8>>, path: &str, mode: u32) -> std::io::Result<()> {
    let mut h = header(tar::EntryType::Directory, mode, 0);
    b.append_data(&mut h, path, std::io::empty())
}

fn file(b: &mut tar::Builder<Vec<u8>>, path: &str, mode: u32, data: &[u8]) -> std::io::Result<()> {
    let mut h = header(tar::EntryType::Regular, mode, data.len() as u64);
    b.append_data(&mut h, path, data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn seed_holds_the_keys_with_sshd_acceptable_modes() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("seed.img");
        let keys = SeedKeys {
            authorized_key: "ssh-ed25519 AAAAclient labrun",
            host_private_key:
                b"-----BEGIN OPENSSH PRIVATE KEY-----\nxx\n-----END OPENSSH PRIVATE KEY-----\n",
            host_public_key: "ssh-ed25519 AAAAhost labrun-host\n",
        };
        write_seed(&path, &keys).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o644
        );
        let mut ar = tar::Archive::new(std::fs::File::open(&path).unwrap());
        let mut seen = Vec::new();
        for e in ar.entries().unwrap() {
            let mut e = e.unwrap();
            let p = e.path().unwrap().to_string_lossy().into_owned();
            let h = e.header();
            assert_eq!((h.uid().unwrap(), h.gid().unwrap()), (0, 0));
            let mode = h.mode().unwrap();
            let mut body = String::new();
            e.read_to_string(&mut body).unwrap();
            seen.push((p, mode, body));
        }
        let get = |p: &str| seen.iter().find(|(q, _, _)| q == p).unwrap();
        assert_eq!(get("root/.ssh/").1, 0o700);
        assert_eq!(get("root/").1, 0o700);
        assert_eq!(get("root/.ssh/authorized_keys").1, 0o600);
        assert_eq!(
            get("root/.ssh/authorized_keys").2,
            "ssh-ed25519 AAAAclient labrun\n"
        );
        assert_eq!(get("etc/ssh/ssh_host_ed25519_key").1, 0o600);
        assert!(
            get("etc/ssh/ssh_host_ed25519_key")
                .2
                .starts_with("-----BEGIN OPENSSH")
        );
        assert_eq!(
            get("etc/ssh/ssh_host_ed25519_key.pub").2,
            "ssh-ed25519 AAAAhost labrun-host\n"
        );
        assert_eq!(get("etc/ssh/").1, 0o755);
        assert_eq!(seen.len(), 7);
    }
}
