//! How much a pack may hold: one set of bounds, which the reader enforces
//! on every pack it opens and the writer checks before it writes one, so
//! `pack` never writes a pack that `report` refuses.

/// How much a pack may unpack to. The bounds stop a damaged or hostile pack
/// from filling the disk or the memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_file_bytes: u64,
    pub max_total_bytes: u64,
    pub max_entries: usize,
    /// The manifest is read into memory whole.
    pub max_manifest_bytes: u64,
}

/// A whole run, unpacked: what the temporary folder may take.
pub const MAX_PACK_BYTES: u64 = 4 << 30;
/// A run keeps every tool log whole (runs have written 200 and 300 MB
/// logs), so one file may take as much as the whole run may.
pub const MAX_PACK_FILE_BYTES: u64 = MAX_PACK_BYTES;
/// Files of a run, the manifest among them.
pub const MAX_PACK_ENTRIES: usize = 200_000;
/// At most some 300 bytes a file (path, size, digest): room for every
/// entry with long paths.
pub const MAX_MANIFEST_BYTES: u64 = 64 << 20;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_file_bytes: MAX_PACK_FILE_BYTES,
            max_total_bytes: MAX_PACK_BYTES,
            max_entries: MAX_PACK_ENTRIES,
            max_manifest_bytes: MAX_MANIFEST_BYTES,
        }
    }
}

impl Limits {
    /// One file of `size` bytes.
    pub(crate) fn check_file(&self, size: u64) -> Result<(), String> {
        if size > self.max_file_bytes {
            return Err(format!(
                "{size} bytes, more than the {} a file of a pack may hold",
                self.max_file_bytes
            ));
        }
        Ok(())
    }

    /// Files of `total` bytes in all (so far, for the reader).
    pub(crate) fn check_total(&self, total: u64) -> Result<(), String> {
        if total > self.max_total_bytes {
            return Err(format!(
                "the files come to {total} bytes, more than the {} a pack may hold",
                self.max_total_bytes
            ));
        }
        Ok(())
    }

    /// `count` entries, the manifest among them.
    pub(crate) fn check_entries(&self, count: usize) -> Result<(), String> {
        if count > self.max_entries {
            return Err(format!(
                "{count} entries or more, but a pack holds at most {} entries",
                self.max_entries
            ));
        }
        Ok(())
    }

    /// A manifest of `size` bytes.
    pub(crate) fn check_manifest(&self, size: u64) -> Result<(), String> {
        if size > self.max_manifest_bytes {
            return Err(format!(
                "a manifest of {size} bytes, more than the {} a pack's may be",
                self.max_manifest_bytes
            ));
        }
        Ok(())
    }
}
