//! The artifact cache: content-addressed, `artifacts/<sha256>/<file name>`,
//! with extracted binaries in `artifacts/<sha256>/extracted/<tool>`.
//!
//! Bytes are written to a `.partial-*` file in the final folder and renamed
//! only once their digest matched, so a name in the cache always holds the
//! bytes its folder promises (re-hashed before use all the same, since disks
//! and people can change files). A partial a killed process left is removed
//! before the next download ([`crate::stale`]).

use crate::digest::to_hex;
use crate::source::FileName;
use crate::stale::{self, Swept};
use sha2::{Digest, Sha256};
use std::io;
use std::path::{Path, PathBuf};
use tempfile::NamedTempFile;
use tokio::io::AsyncWriteExt;

pub(crate) const PARTIAL_PREFIX: &str = ".partial-";

/// Beside a downloaded file: the URL it was asked for and every redirect
/// that led to the bytes, for the evidence of the runs that use it.
const DOWNLOAD_RECORD: &str = ".download.json";

#[derive(Debug, Clone)]
pub struct Cache {
    root: PathBuf,
}

impl Cache {
    /// `cache_dir` is labrun's cache folder; artifacts live in `artifacts/`.
    pub fn new(cache_dir: &Path) -> Cache {
        Cache {
            root: cache_dir.join("artifacts"),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The folder for the file whose digest is `sha256`.
    pub fn dir_for(&self, sha256: &str) -> PathBuf {
        self.root.join(sha256)
    }

    /// Where extracted binaries of that file go.
    pub fn extracted_dir(&self, sha256: &str) -> PathBuf {
        self.dir_for(sha256).join("extracted")
    }

    /// The cached file for `sha256` named like `name`, if one is there
    /// (not yet re-hashed: the caller does that).
    pub fn find(&self, sha256: &str, name: &FileName) -> Option<PathBuf> {
        find_in(&self.dir_for(sha256), name).into_iter().next()
    }

    /// A new partial file in the folder of `sha256`, ready for bytes, and
    /// what was swept first: the partials that killed processes left in
    /// any folder of the cache.
    pub async fn partial(&self, sha256: &str) -> io::Result<(Partial, Swept)> {
        let dir = self.dir_for(sha256);
        tokio::fs::create_dir_all(&dir).await?;
        let root = self.root.clone();
        let made = tokio::task::spawn_blocking(move || {
            let swept = stale::sweep_cache(&root, PARTIAL_PREFIX, crate::apt::TEMP_PREFIX);
            stale::temp_file_in(&dir, PARTIAL_PREFIX).map(|(temp, more)| (temp, swept, more))
        })
        .await
        .map_err(|e| io::Error::other(e.to_string()))?;
        let (temp, mut swept, more) = made?;
        swept.add(more);
        let file = tokio::fs::File::from_std(temp.as_file().try_clone()?);
        Ok((
            Partial {
                temp,
                file,
                hasher: Sha256::new(),
                bytes: 0,
            },
            swept,
        ))
    }

    /// Gives the verified `temp` its final name in the folder of `sha256`.
    pub fn commit(&self, temp: NamedTempFile, sha256: &str, name: &str) -> io::Result<PathBuf> {
        let path = self.dir_for(sha256).join(name);
        temp.persist(&path).map_err(|e| e.error)?;
        Ok(path)
    }

    /// Records that the file of `sha256` came from `url` through `redirects`.
    pub fn record_download(
        &self,
        sha256: &str,
        file_name: &str,
        url: &str,
        redirects: &[String],
    ) -> io::Result<()> {
        let dir = self.dir_for(sha256);
        // Kept on disk: a URL's credentials never are.
        let redirects: Vec<_> = redirects
            .iter()
            .map(|r| crate::without_credentials(r))
            .collect();
        let record = serde_json::json!({
            "file": file_name,
            "url": crate::without_credentials(url),
            "redirects": redirects,
        });
        // Written whole, then renamed: a reader never sees half a record.
        let (mut temp, _) = stale::temp_file_in(&dir, PARTIAL_PREFIX)?;
        std::io::Write::write_all(&mut temp, record.to_string().as_bytes())?;
        temp.persist(dir.join(DOWNLOAD_RECORD))
            .map_err(|e| e.error)?;
        Ok(())
    }

    /// Drops the download record of `sha256` (its file comes from somewhere
    /// else this time).
    pub fn forget_download(&self, sha256: &str) {
        let _ = std::fs::remove_file(self.dir_for(sha256).join(DOWNLOAD_RECORD));
    }

    /// The download record of `sha256`, if its file was downloaded:
    /// `{"file", "url", "redirects": [...]}`.
    pub fn download_record(&self, sha256: &str) -> Option<serde_json::Value> {
        let text = std::fs::read_to_string(self.dir_for(sha256).join(DOWNLOAD_RECORD)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Removes the folder of `sha256` if nothing is left in it (after a
    /// refused download), so the cache holds no misleading empty folders.
    pub fn tidy(&self, sha256: &str) {
        let _ = std::fs::remove_dir(self.dir_for(sha256));
    }
}

/// Regular files in `dir` whose name `name` matches, sorted, partials skipped.
pub(crate) fn find_in(dir: &Path, name: &FileName) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_type()
                .map(|t| t.is_file() || t.is_symlink())
                .unwrap_or(false)
        })
        .filter_map(|e| {
            let n = e.file_name().into_string().ok()?;
            (!n.starts_with(PARTIAL_PREFIX) && name.matches(&n)).then(|| e.path())
        })
        .collect();
    found.sort();
    found
}

/// A file being written into the cache and hashed on the way. It holds the
/// lock that tells a sweep it is alive; dropped, it is deleted.
pub struct Partial {
    temp: NamedTempFile,
    file: tokio::fs::File,
    hasher: Sha256,
    bytes: u64,
}

impl Partial {
    pub async fn write(&mut self, chunk: &[u8]) -> io::Result<()> {
        self.file.write_all(chunk).await?;
        self.hasher.update(chunk);
        self.bytes += chunk.len() as u64;
        Ok(())
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Flushes to disk; returns the file (deleted when dropped unless
    /// committed), its digest and its size.
    pub async fn finish(mut self) -> io::Result<(NamedTempFile, String, u64)> {
        self.file.flush().await?;
        self.file.sync_all().await?;
        Ok((self.temp, to_hex(self.hasher), self.bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The download record is evidence (`run_facts`): the URL and its
    /// redirects are kept without their credentials.
    #[test]
    fn a_download_record_keeps_no_credentials() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path());
        let sha = "ab".repeat(32);
        std::fs::create_dir_all(cache.dir_for(&sha)).unwrap();
        cache
            .record_download(
                &sha,
                "t.bz2",
                "https://user:TOKEN@example.invalid/t.bz2",
                &["https://u:SECRET@mirror.invalid/t.bz2".to_string()],
            )
            .unwrap();
        let record = cache.download_record(&sha).unwrap().to_string();
        assert!(
            !record.contains("TOKEN") && !record.contains("SECRET"),
            "{record}"
        );
        assert!(record.contains("example.invalid/t.bz2"), "{record}");
    }
}
