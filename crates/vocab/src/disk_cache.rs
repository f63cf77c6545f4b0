//! The guest disk's QEMU cache mode, as the lab writes it, the VM gives it to
//! libvirt and `environment.json` records it.

use serde::{Deserialize, Serialize};

/// libvirt's disk `cache=` modes. `none` (the default) also sets
/// `io='native'`: O_DIRECT on the host, so the host page cache does not
/// flatter the guest's disk numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DiskCache {
    #[default]
    #[serde(rename = "none")]
    NoCache,
    Writeback,
    Writethrough,
    Directsync,
    Unsafe,
}

impl DiskCache {
    /// The libvirt `<driver cache=...>` value.
    pub fn as_str(self) -> &'static str {
        match self {
            DiskCache::NoCache => "none",
            DiskCache::Writeback => "writeback",
            DiskCache::Writethrough => "writethrough",
            DiskCache::Directsync => "directsync",
            DiskCache::Unsafe => "unsafe",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_names_are_libvirts() {
        for c in [
            DiskCache::NoCache,
            DiskCache::Writeback,
            DiskCache::Writethrough,
            DiskCache::Directsync,
            DiskCache::Unsafe,
        ] {
            let text = format!("\"{}\"", c.as_str());
            assert_eq!(serde_json::to_string(&c).unwrap(), text);
            assert_eq!(serde_json::from_str::<DiskCache>(&text).unwrap(), c);
        }
    }
}
