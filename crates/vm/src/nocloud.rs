//! The seed disk of a cloud image: a cloud-init NoCloud data source, i.e. a
//! FAT volume labelled `CIDATA` holding `meta-data` and `user-data`. It
//! carries the same keys as the raw-tar seed of labrun's own image: the
//! client's authorized key for root and the host key labrun generated, so
//! the host key is known (and pinned) before the guest boots.
//!
//! The user-data is JSON after the `#cloud-config` line: JSON is YAML, and
//! it quotes key material and comments safely whatever they contain.

use crate::error::VmError;
use crate::seed::SeedKeys;
use std::io::{Cursor, Write};
use std::path::Path;

/// The volume label cloud-init's NoCloud source looks for (it accepts
/// `cidata` in either case, on vfat or iso9660).
pub const LABEL: &[u8; 11] = b"CIDATA     ";

/// 1 MiB: a FAT12 volume with room to spare for a few KiB of text.
const VOLUME_BYTES: usize = 1 << 20;

/// Who the guest is for cloud-init.
pub struct Identity<'a> {
    /// Changes with every `up`, so cloud-init runs its first-boot modules
    /// (keys, users) on every fresh overlay.
    pub instance_id: &'a str,
    pub hostname: &'a str,
}

/// Writes the seed at `path` (mode 0644: libvirt-qemu must read it; the
/// private host key inside is throw-away, made for this one boot).
pub fn write_seed(path: &Path, keys: &SeedKeys<'_>, id: &Identity<'_>) -> Result<(), VmError> {
    let bytes = seed_bytes(keys, id).map_err(VmError::io(path))?;
    crate::state::write_atomic(path, &bytes, 0o644)
}

fn seed_bytes(keys: &SeedKeys<'_>, id: &Identity<'_>) -> std::io::Result<Vec<u8>> {
    let mut disk = Cursor::new(vec![0u8; VOLUME_BYTES]);
    fatfs::format_volume(
        &mut disk,
        fatfs::FormatVolumeOptions::new()
            .volume_label(*LABEL)
            .volume_id(0x6c61_6272), // "labr": fixed, so seeds are reproducible
    )?;
    {
        let fs = fatfs::FileSystem::new(&mut disk, fatfs::FsOptions::new())?;
        {
            let root = fs.root_dir();
            root.create_file("meta-data")?
                .write_all(meta_data(id).as_bytes())?;
            root.create_file("user-data")?
                .write_all(user_data(keys).as_bytes())?;
        }
        fs.unmount()?;
    }
    Ok(disk.into_inner())
}

fn meta_data(id: &Identity<'_>) -> String {
    let doc = serde_json::json!({
        "instance-id": id.instance_id,
        "local-hostname": id.hostname,
    });
    format!("{doc}\n")
}

/// Root logs in with the client key only; the image's own default user is
/// left as the image defines it. Host keys: only labrun's ed25519 key; any
/// baked into the image are deleted.
fn user_data(keys: &SeedKeys<'_>) -> String {
    let host_private = String::from_utf8_lossy(keys.host_private_key);
    let doc = serde_json::json!({
        "disable_root": false,
        "ssh_pwauth": false,
        "ssh_authorized_keys": [keys.authorized_key.trim()],
        "ssh_deletekeys": true,
        // Not `[]`: cloud-init's schema wants at least one type. It never
        // overwrites an existing key file, so this keeps labrun's key.
        "ssh_genkeytypes": ["ed25519"],
        "ssh_keys": {
            "ed25519_private": host_private,
            "ed25519_public": keys.host_public_key.trim(),
        },
        // The guest has no way out (slirp restrict=on): never wait on apt.
        "package_update": false,
        "package_upgrade": false,
    });
    format!("#cloud-config\n{doc}\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn keys() -> SeedKeys<'static> {
        SeedKeys {
            authorized_key: "ssh-ed25519 AAAAclient labrun \"quoted\": #not-a-comment",
            host_private_key:
                b"-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----\n",
            host_public_key: "ssh-ed25519 AAAAhost labrun-demo\n",
        }
    }

    fn read(fs: &fatfs::FileSystem<&mut Cursor<Vec<u8>>>, name: &str) -> String {
        let mut s = String::new();
        fs.root_dir()
            .open_file(name)
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        s
    }

    #[test]
    fn seed_is_a_cidata_volume_with_both_files() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("seed.img");
        let id = Identity {
            instance_id: "labrun-demo-1700000000000-42",
            hostname: "labrun-demo",
        };
        write_seed(&path, &keys(), &id).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o644
        );
        let mut disk = Cursor::new(std::fs::read(&path).unwrap());
        let fs = fatfs::FileSystem::new(&mut disk, fatfs::FsOptions::new()).unwrap();
        assert_eq!(fs.volume_label(), "CIDATA");

        let meta: serde_json::Value = serde_json::from_str(&read(&fs, "meta-data")).unwrap();
        assert_eq!(meta["instance-id"], "labrun-demo-1700000000000-42");
        assert_eq!(meta["local-hostname"], "labrun-demo");

        let user = read(&fs, "user-data");
        let (header, body) = user.split_once('\n').unwrap();
        assert_eq!(header, "#cloud-config");
        let doc: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(doc["disable_root"], false);
        assert_eq!(
            doc["ssh_authorized_keys"][0],
            "ssh-ed25519 AAAAclient labrun \"quoted\": #not-a-comment"
        );
        assert_eq!(
            doc["ssh_keys"]["ed25519_public"],
            "ssh-ed25519 AAAAhost labrun-demo"
        );
        assert!(
            doc["ssh_keys"]["ed25519_private"]
                .as_str()
                .unwrap()
                .starts_with("-----BEGIN OPENSSH PRIVATE KEY-----\n")
        );
        assert_eq!(doc["ssh_genkeytypes"], serde_json::json!(["ed25519"]));
    }

    #[test]
    fn equal_inputs_give_equal_seeds() {
        let id = Identity {
            instance_id: "i",
            hostname: "h",
        };
        assert_eq!(
            seed_bytes(&keys(), &id).unwrap(),
            seed_bytes(&keys(), &id).unwrap()
        );
    }

    /// blkid (util-linux, always there on Debian) is what cloud-init and
    /// ds-identify use to find the seed.
    #[test]
    fn blkid_sees_the_label_cloud_init_looks_for() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("seed.img");
        let id = Identity {
            instance_id: "i",
            hostname: "h",
        };
        write_seed(&path, &keys(), &id).unwrap();
        let out = std::process::Command::new("blkid")
            .args(["-p", "-o", "export"])
            .arg(&path)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("LABEL=CIDATA"), "{text}");
        assert!(text.contains("TYPE=vfat"), "{text}");
    }
}
