//! Image recipes compiled into the binary, so `labrun` builds the same image
//! wherever it runs, and the cache key is a digest of exactly these bytes.

use crate::config::ImageSpec;
use sha2::{Digest, Sha256};

/// One file of a recipe: path relative to the recipe folder, mode, content.
pub struct RecipeFile {
    pub path: &'static str,
    pub mode: u32,
    pub content: &'static str,
}

pub const RECIPES: &[&str] = &["debian12"];

macro_rules! recipe_file {
    ($path:literal, $mode:literal) => {
        RecipeFile {
            path: $path,
            mode: $mode,
            content: include_str!(concat!("../../../images/debian12/", $path)),
        }
    };
}

const DEBIAN12: &[RecipeFile] = &[
    recipe_file!("build.sh", 0o755),
    recipe_file!("rootfs/etc/ssh/sshd_config.d/10-labrun.conf", 0o644),
    recipe_file!("rootfs/etc/systemd/network/10-labrun.network", 0o644),
    recipe_file!("rootfs/etc/systemd/system/vmseed.service", 0o644),
    recipe_file!("rootfs/usr/local/sbin/vmseed", 0o755),
];

/// The files of a recipe by name.
pub fn recipe(name: &str) -> Option<&'static [RecipeFile]> {
    match name {
        "debian12" => Some(DEBIAN12),
        _ => None,
    }
}

/// The cache key of an image: SHA-256 over the recipe's files (path, mode,
/// content), the suite, the sorted extra package list and the disk size.
/// Returns None for an unknown recipe.
pub fn image_digest(spec: &ImageSpec) -> Option<String> {
    let files = recipe(&spec.recipe)?;
    let mut h = Sha256::new();
    let mut field = |bytes: &[u8]| {
        // Length-prefixed, so no two different inputs hash the same stream.
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(b"labrun-image-v1");
    field(spec.recipe.as_bytes());
    for f in files {
        field(f.path.as_bytes());
        field(&f.mode.to_le_bytes());
        field(f.content.as_bytes());
    }
    field(spec.suite.as_bytes());
    let mut packages = spec.extra_packages.clone();
    packages.sort();
    packages.dedup();
    for p in &packages {
        field(p.as_bytes());
    }
    field(&spec.disk_gib.to_le_bytes());
    Some(hex::encode(h.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_depends_on_packages_and_size_not_their_order() {
        let base = ImageSpec::default();
        let d0 = image_digest(&base).unwrap();
        assert_eq!(d0.len(), 64);
        let mut a = base.clone();
        a.extra_packages = vec!["python3-msgpack".into(), "libacl1".into()];
        let mut b = base.clone();
        b.extra_packages = vec!["libacl1".into(), "python3-msgpack".into()];
        assert_eq!(image_digest(&a), image_digest(&b));
        assert_ne!(image_digest(&a).unwrap(), d0);
        let mut c = base.clone();
        c.disk_gib = 20;
        assert_ne!(image_digest(&c).unwrap(), d0);
        let mut u = base;
        u.recipe = "nope".into();
        assert!(image_digest(&u).is_none());
    }

    #[test]
    fn embedded_recipe_has_what_the_guest_needs() {
        let files = recipe("debian12").unwrap();
        let build = files.iter().find(|f| f.path == "build.sh").unwrap();
        assert!(build.content.contains("MODULES=list"));
        assert!(build.content.contains("mkfs.ext4"));
        assert!(build.content.contains("--variant=minbase"));
        let unit = files
            .iter()
            .find(|f| f.path.ends_with("vmseed.service"))
            .unwrap();
        assert!(unit.content.contains("Before=ssh.service"));
    }
}
