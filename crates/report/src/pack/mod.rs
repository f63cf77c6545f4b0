//! A run as one file: a deterministic `.tar.gz` of the run folder with a
//! SHA-256 manifest inside, so a run can be shared, committed and addressed
//! by checksum, and opened by `report` and `compare` as a folder is.
//!
//! [`write`] packs a folder (sorted entries, fixed mtimes, owners and modes,
//! so the same run packs to the same bytes); [`open`] takes a folder or a
//! pack and gives back a folder to read, after refusing any entry that could
//! write outside it and any file the manifest does not vouch for.

mod error;
mod manifest;
mod read;
mod write;

pub use error::PackError;
pub use manifest::{MANIFEST_FILE, Manifest, ManifestEntry};
pub use read::{Limits, OpenedRun, open, open_with};
pub use write::{Packed, write};
