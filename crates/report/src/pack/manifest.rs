//! The manifest inside every pack: the run's name and, for each file, its
//! path, size and SHA-256. Its own digest addresses the run.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The manifest's name at the root of a pack; always the first entry.
pub const MANIFEST_FILE: &str = "labrun-pack.json";
/// Raised when the manifest's meaning changes.
pub const MANIFEST_FORMAT: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub format: u32,
    /// The packed folder's name: the run's id, and the folder a pack opens into.
    pub run: String,
    /// Sorted by path.
    pub files: Vec<ManifestEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestEntry {
    /// Relative to the run folder, `/`-separated.
    pub path: String,
    pub size: u64,
    pub sha256: String,
}

impl Manifest {
    /// The bytes written into the pack: one text, so one digest.
    pub fn to_bytes(&self) -> Vec<u8> {
        // A struct of strings and integers always serializes.
        let mut bytes = serde_json::to_vec_pretty(self).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
        let manifest: Manifest = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        if manifest.format != MANIFEST_FORMAT {
            return Err(format!(
                "format {} where this labrun reads {MANIFEST_FORMAT}",
                manifest.format
            ));
        }
        check_run_name(&manifest.run)?;
        Ok(manifest)
    }
}

/// Longest run name: a run id is `<lab>-<time>-<digest>`, with a lab name of
/// at most 40 characters.
pub const MAX_RUN_NAME: usize = 200;

/// The run's name becomes a folder and is printed, so it keeps to letters,
/// digits, `.`, `_` and `-`, starting with a letter or digit: never an
/// option (`--help`), a hidden folder, a space or a terminal escape. Every
/// run id `bench` makes is such a name. The message is one for writer and
/// reader; the value is escaped so it prints as it is.
pub(crate) fn check_run_name(name: &str) -> Result<(), String> {
    let ok = (1..=MAX_RUN_NAME).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "run name \"{}\" is not 1-{MAX_RUN_NAME} characters of a-z, A-Z, 0-9, `.`, `_` or `-` starting with a letter or digit",
            name.escape_default()
        ))
    }
}

/// `a/b/c` (a folder may end in `/`): plain names only, so the path stays
/// inside the folder it is joined to. The one rule for the paths a pack
/// holds: the writer refuses what the reader would.
pub(crate) fn safe_relative_path(name: &str) -> Result<String, String> {
    if name.starts_with('/') || name.starts_with('\\') || name.get(1..2) == Some(":") {
        return Err("an absolute path: a pack's paths are relative to the run".into());
    }
    let trimmed = name.strip_suffix('/').unwrap_or(name);
    let parts: Vec<&str> = trimmed.split('/').collect();
    if parts.contains(&"..") {
        return Err("a path with `..`, which would leave the run".into());
    }
    if trimmed.is_empty() || !parts.iter().all(|p| is_plain_name(p)) {
        return Err("not a plain relative path (empty, `.`, `\\` or NUL in a name)".into());
    }
    Ok(trimmed.to_string())
}

/// One path component: not empty, no separator, not `.` or `..`.
pub(crate) fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}

/// Lower-case hex SHA-256.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Hashes bytes as they go by, counting them.
pub(crate) struct Hashing {
    hasher: Sha256,
    pub(crate) size: u64,
}

impl Hashing {
    pub(crate) fn new() -> Self {
        Hashing {
            hasher: Sha256::new(),
            size: 0,
        }
    }

    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
        self.size += bytes.len() as u64;
    }

    pub(crate) fn finish(self) -> String {
        hex::encode(self.hasher.finalize())
    }
}
