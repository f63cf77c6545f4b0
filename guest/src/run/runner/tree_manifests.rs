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

impl TreeManifestWriter {
    /// `private`: the evidence's copy names paths by their hashes, and
    /// `plain` (if given) is where the copy with its paths goes, in the
    /// work folder (a public tree's evidence holds them: none is needed).
    pub fn create(
        evidence: &Path,
        private: bool,
        plain: Option<&Path>,
    ) -> Result<Self, DatasetError> {
        let evidence = match private {
            true => EvidenceCopy::Hashed(HashedManifestWriter::create(evidence)),
            false => EvidenceCopy::Plain(ManifestFileWriter::create(evidence)?),
        };
        let plain = match plain.filter(|_| private) {
            Some(path) => {
                // The work folder's copies sit in a folder of their own.
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)
                        .map_err(|e| DatasetError::io("creating", dir, e))?;
                }
                Some(ManifestFileWriter::create(path)?)
            }
            None => None,
        };
        Ok(TreeManifestWriter { evidence, plain })
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

    /// Finishes both copies; returns what the evidence's holds (its
    /// `sha256` is what the run records).
    pub fn finish(self) -> Result<WrittenManifest, DatasetError> {
        if let Some(plain) = self.plain {
            plain.finish()?;
        }
        match self.evidence {
            EvidenceCopy::Plain(w) => w.finish(),
            EvidenceCopy::Hashed(w) => w.finish(),
        }
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
