//! A real tree's manifest written as the tree (or a manifest file of it) is
//! read, never held (issue 31: millions of files): the evidence's copy,
//! whose paths a private tree has hashed and sorted by hash, and for a
//! private tree the work folder's copy with its paths, which a verify
//! merges with the sorted walk of a restore.

use labrun_dataset::{DatasetError, HashedManifestWriter, ManifestFileWriter, WrittenManifest};
use labrun_evidence::{ManifestEntry, ManifestReader};
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

/// The evidence's copy of a manifest.
enum EvidenceCopy {
    Plain(ManifestFileWriter),
    Hashed(HashedManifestWriter),
}

/// Writes one manifest to the evidence and, for a private tree, to the
/// work folder; entries come in manifest order (sorted by path).
pub(super) struct TreeManifestWriter {
    evidence: EvidenceCopy,
    plain: Option<ManifestFileWriter>,
}

/// What [`TreeManifestWriter::finish`] wrote.
pub(super) struct WrittenTreeManifest {
    /// The evidence's file (its `sha256` is what the run records).
    pub evidence: WrittenManifest,
    /// The SHA-256 of the manifest with its paths: the tree's content
    /// address, whichever copy holds it.
    pub plain_sha256: String,
}

impl TreeManifestWriter {
    /// `plain` is where a private tree's manifest with its paths goes;
    /// `None` for a public tree, whose evidence holds them.
    pub fn create(evidence: &Path, plain: Option<&Path>) -> Result<Self, DatasetError> {
        Ok(match plain {
            None => TreeManifestWriter {
                evidence: EvidenceCopy::Plain(ManifestFileWriter::create(evidence)?),
                plain: None,
            },
            Some(plain) => TreeManifestWriter {
                evidence: EvidenceCopy::Hashed(HashedManifestWriter::create(evidence)),
                plain: Some(ManifestFileWriter::create(plain)?),
            },
        })
    }

    pub fn push(&mut self, e: &ManifestEntry) -> Result<(), DatasetError> {
        if let Some(plain) = self.plain.as_mut() {
            plain.push(e)?;
        }
        match &mut self.evidence {
            EvidenceCopy::Plain(w) => w.push(e),
            EvidenceCopy::Hashed(w) => w.push(e),
        }
    }

    pub fn finish(self) -> Result<WrittenTreeManifest, DatasetError> {
        let plain = self.plain.map(ManifestFileWriter::finish).transpose()?;
        let evidence = match self.evidence {
            EvidenceCopy::Plain(w) => w.finish()?,
            EvidenceCopy::Hashed(w) => w.finish()?,
        };
        let plain_sha256 = match plain {
            Some(p) => p.sha256,
            None => evidence.sha256.clone(),
        };
        Ok(WrittenTreeManifest {
            evidence,
            plain_sha256,
        })
    }
}

/// Passes each entry of the manifest file `path` to `each`, as it reads
/// them.
pub(super) fn each_entry(
    path: &Path,
    each: &mut dyn FnMut(ManifestEntry) -> Result<(), DatasetError>,
) -> Result<(), DatasetError> {
    let file = File::open(path).map_err(|e| DatasetError::io("opening manifest", path, e))?;
    let reader = ManifestReader::new(BufReader::new(file))
        .map_err(|e| DatasetError::io("reading manifest", path, e))?;
    for entry in reader {
        each(entry.map_err(|e| DatasetError::io("reading manifest", path, e))?)?;
    }
    Ok(())
}
