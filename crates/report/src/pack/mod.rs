//! A run as one file: a deterministic `.tar.gz` of the run folder with a
//! SHA-256 manifest inside, so a run can be shared, committed and addressed
//! by checksum, and opened by `report` and `compare` as a folder is.
//!
//! [`write`] packs a folder (sorted entries, fixed mtimes, owners and modes,
//! so the same run packs to the same bytes); [`open`] takes a folder or a
//! pack and gives back a folder to read, after refusing any entry that could
//! write outside it and any file the manifest does not vouch for.

mod error;
mod limits;
mod manifest;
mod read;
mod write;

pub use error::PackError;
pub use limits::{
    Limits, MAX_MANIFEST_BYTES, MAX_PACK_BYTES, MAX_PACK_ENTRIES, MAX_PACK_FILE_BYTES,
};
pub use manifest::{MANIFEST_FILE, Manifest, ManifestEntry};
pub use read::{OpenedRun, PackInMemory, open, open_with, read_in_memory, report_dir_of};
pub use write::{Packed, write, write_with};

/// A folder holding a run: its `raw/` evidence, or a variants run's index.
pub(crate) fn is_run_folder(dir: &std::path::Path) -> bool {
    dir.join(crate::RAW_DIR).is_dir() || crate::variants::is_variants_run(dir)
}
