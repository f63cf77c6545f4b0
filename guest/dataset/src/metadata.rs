//! What a metadata scan records besides content: modification times, the
//! `user.` extended attributes, holes, and which names share an inode.
//! Only the fidelity fixture and its restores are scanned this way; the
//! published dataset's scan never calls into this file.

use crate::error::DatasetError;
use labrun_evidence::{Manifest, Mtime};
use rustix::io::Errno;
use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The namespace recorded: `security.`, `system.` and `trusted.` belong to
/// the system the tree sits on (SELinux labels, ACLs), not to the data.
const USER_NAMESPACE: &str = "user.";

/// A file is called sparse when at most this fraction of its apparent size
/// is allocated (and a hole is found): a restore that fills the holes
/// allocates all of it.
const SPARSE_MAX_ALLOCATED_FRACTION: u64 = 2;

/// Bytes per `st_blocks` unit, whatever the filesystem's block size.
const STAT_BLOCK: u64 = 512;

/// The recorded metadata of one file or directory.
#[derive(Debug, Default)]
pub struct Recorded {
    pub mtime: Option<Mtime>,
    pub xattrs: Option<BTreeMap<String, String>>,
    pub sparse: bool,
    /// (device, inode) of a file with more than one link, to find its other
    /// names in the tree.
    pub inode: Option<(u64, u64)>,
}

pub fn mtime(md: &fs::Metadata) -> Mtime {
    Mtime {
        secs: md.mtime(),
        // stat guarantees 0..1e9.
        nanos: md.mtime_nsec().clamp(0, 999_999_999) as u32,
    }
}

pub fn file(abs: &Path, md: &fs::Metadata) -> Result<Recorded, DatasetError> {
    Ok(Recorded {
        mtime: Some(mtime(md)),
        xattrs: user_xattrs(abs)?,
        sparse: is_sparse(abs, md)?,
        inode: (md.nlink() > 1).then(|| (md.dev(), md.ino())),
    })
}

pub fn dir(abs: &Path, md: &fs::Metadata) -> Result<Recorded, DatasetError> {
    Ok(Recorded {
        mtime: Some(mtime(md)),
        xattrs: user_xattrs(abs)?,
        ..Recorded::default()
    })
}

/// Holes kept: little allocated, and the kernel reports a hole before the
/// end. Both, because a filesystem that compresses (ZFS) allocates little
/// for a file without holes, and one without `SEEK_HOLE` reports none.
fn is_sparse(abs: &Path, md: &fs::Metadata) -> Result<bool, DatasetError> {
    let size = md.len();
    let allocated = md.blocks().saturating_mul(STAT_BLOCK);
    if size == 0 || allocated.saturating_mul(SPARSE_MAX_ALLOCATED_FRACTION) > size {
        return Ok(false);
    }
    let file = File::open(abs).map_err(|e| DatasetError::io("opening", abs, e))?;
    match rustix::fs::seek(&file, rustix::fs::SeekFrom::Hole(0)) {
        Ok(first_hole) => Ok(first_hole < size),
        // No SEEK_HOLE here: no hole can be shown.
        Err(Errno::INVAL | Errno::OPNOTSUPP) => Ok(false),
        Err(e) => Err(DatasetError::io("looking for holes in", abs, e.into())),
    }
}

/// The `user.` attributes of `abs` (not following a symlink), values in
/// lowercase hex; `None` when it has none or the filesystem has no xattrs.
pub fn user_xattrs(abs: &Path) -> Result<Option<BTreeMap<String, String>>, DatasetError> {
    let Some(list) = read_sized(abs, "listing the xattrs of", |buf| match buf {
        None => rustix::fs::llistxattr_query(abs),
        Some(buf) => rustix::fs::llistxattr(abs, buf),
    })?
    else {
        return Ok(None);
    };
    let mut out = BTreeMap::new();
    for name in list.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let name_str = String::from_utf8_lossy(name);
        if !name_str.starts_with(USER_NAMESPACE) {
            continue;
        }
        let value = read_sized(abs, "reading an xattr of", |buf| match buf {
            None => rustix::fs::lgetxattr_query(abs, name),
            Some(buf) => rustix::fs::lgetxattr(abs, name, buf),
        })?;
        // Removed between the listing and the read: it is not there.
        if let Some(value) = value {
            out.insert(name_str.into_owned(), hex::encode(value));
        }
    }
    Ok((!out.is_empty()).then_some(out))
}

/// Calls `call(None)` for the size, then `call(Some(buf))`, again if the
/// value grew in between. `None` when the filesystem has no xattrs or the
/// attribute went away.
fn read_sized(
    abs: &Path,
    action: &'static str,
    mut call: impl FnMut(Option<&mut [u8]>) -> rustix::io::Result<usize>,
) -> Result<Option<Vec<u8>>, DatasetError> {
    let absent = |e: Errno| matches!(e, Errno::OPNOTSUPP | Errno::NODATA);
    let fail = |e: Errno| DatasetError::io(action, abs, e.into());
    loop {
        let size = match call(None) {
            Ok(size) => size,
            Err(e) if absent(e) => return Ok(None),
            Err(e) => return Err(fail(e)),
        };
        if size == 0 {
            return Ok(Some(Vec::new()));
        }
        let mut buf = vec![0u8; size];
        match call(Some(&mut buf)) {
            Ok(n) => {
                buf.truncate(n);
                return Ok(Some(buf));
            }
            Err(Errno::RANGE) => continue,
            Err(e) if absent(e) => return Ok(None),
            Err(e) => return Err(fail(e)),
        }
    }
}

/// Numbers the names that share an inode: one group per inode with two or
/// more names in the tree, 0, 1, ... in the order of each group's first
/// path (`manifest` is sorted). An inode whose other names lie outside the
/// tree is no link within it.
pub fn number_link_groups(manifest: &mut Manifest, inodes: &[(String, (u64, u64))]) {
    if inodes.is_empty() {
        return; // always so for a content scan: not a single lookup
    }
    let mut names: HashMap<(u64, u64), usize> = HashMap::new();
    for (_, inode) in inodes {
        *names.entry(*inode).or_default() += 1;
    }
    let inode_of: HashMap<&str, (u64, u64)> = inodes
        .iter()
        .filter(|(_, inode)| names[inode] > 1)
        .map(|(path, inode)| (path.as_str(), *inode))
        .collect();
    let mut groups: HashMap<(u64, u64), u32> = HashMap::new();
    for entry in &mut manifest.entries {
        if let Some(inode) = inode_of.get(entry.path.as_str()) {
            let next = groups.len() as u32;
            entry.link_group = Some(*groups.entry(*inode).or_insert(next));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use labrun_evidence::ManifestEntry;

    #[test]
    fn link_groups_are_numbered_in_path_order_and_need_two_names() {
        let mut m = Manifest {
            entries: ["a", "b", "c", "d", "e"]
                .iter()
                .map(|p| ManifestEntry {
                    path: (*p).into(),
                    ..ManifestEntry::default()
                })
                .collect(),
        };
        let inodes = vec![
            ("e".to_string(), (1, 10)),
            ("b".to_string(), (1, 20)),
            ("d".to_string(), (1, 20)),
            ("c".to_string(), (1, 10)),
            // Its other name is outside the tree.
            ("a".to_string(), (1, 30)),
        ];
        number_link_groups(&mut m, &inodes);
        let groups: Vec<_> = m.entries.iter().map(|e| e.link_group).collect();
        assert_eq!(groups, [None, Some(0), Some(1), Some(0), Some(1)]);
    }
}
