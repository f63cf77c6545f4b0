//! The change of a tree from its base manifest FILE to its new manifest
//! file, holding neither: the base is read twice, as it comes (once to
//! check that it describes the tree, once to merge in what the change
//! wrote and removed), and the new manifest is written entry by entry.
//! What the change itself wrote is held: a few percent of the tree.

use super::{Applied, apply, apply_change_from, change_plan};
use crate::error::DatasetError;
use crate::manifest_file::{ManifestFileWriter, read_manifest, write_manifest};
use crate::{DatasetParams, DatasetProfile, Progress};
use labrun_evidence::{EntryKind, ManifestEntry, ManifestReader};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

/// Applies the change and writes the tree's new manifest to `out`, from
/// its manifest before the change, `base` (both as
/// [`super::apply_change_from`] reads and returns them).
pub(crate) fn apply_change_from_file(
    dir: &Path,
    params: &DatasetParams,
    change_seed: u64,
    base: &Path,
    out: &Path,
    progress: Progress,
) -> Result<(), DatasetError> {
    // The published and vm-image trees hold a few thousand files at most;
    // their changes have code of their own, which takes the manifest whole.
    // A base out of manifest order (not labrun's) is merged whole as well.
    let small_tree = matches!(
        params.profile,
        DatasetProfile::Published | DatasetProfile::VmImage
    );
    if small_tree || !check_base(dir, params, change_seed, base)? {
        let base = read_manifest(base)?;
        let manifest = apply_change_from(dir, params, change_seed, &base, progress)?;
        return write_manifest(out, &manifest);
    }
    let applied = apply(dir, params, change_seed, progress)?;
    merge(base, applied, out)
}

fn entries(
    base: &Path,
) -> Result<impl Iterator<Item = Result<ManifestEntry, DatasetError>>, DatasetError> {
    let file = File::open(base).map_err(|e| DatasetError::io("opening manifest", base, e))?;
    let reader = ManifestReader::new(BufReader::new(file))
        .map_err(|e| DatasetError::io("reading manifest", base, e))?;
    let base = base.to_path_buf();
    Ok(reader.map(move |e| e.map_err(|e| DatasetError::io("reading manifest", &base, e))))
}

/// As `apply_change_from` checks: every file the change rewrites in place is
/// a file of the base, or absent from the tree. Returns whether the base
/// is in manifest order (which the merge needs).
fn check_base(
    dir: &Path,
    params: &DatasetParams,
    change_seed: u64,
    base: &Path,
) -> Result<bool, DatasetError> {
    let plan = change_plan(params, change_seed);
    let touched: Vec<&String> = plan
        .small_files
        .iter()
        .chain(plan.regions.iter().map(|r| &r.path))
        .collect();
    let mut in_base: HashSet<&str> = HashSet::new();
    let wanted: HashSet<&str> = touched.iter().map(|p| p.as_str()).collect();
    let (mut sorted, mut last) = (true, String::new());
    for e in entries(base)? {
        let e = e?;
        let wanted_file = (e.kind == EntryKind::File)
            .then(|| wanted.get(e.path.as_str()))
            .flatten();
        if let Some(&p) = wanted_file {
            in_base.insert(p);
        }
        sorted &= last <= e.path;
        last = e.path;
    }
    for path in touched {
        if !in_base.contains(path.as_str()) && dir.join(path).exists() {
            return Err(DatasetError::BaseManifestMismatch { path: path.clone() });
        }
    }
    Ok(sorted)
}

/// The base with the removed entries left out and the written ones in
/// their place (a path written and removed is written, as in
/// `apply_change_from`).
fn merge(base: &Path, applied: Applied, out: &Path) -> Result<(), DatasetError> {
    let mut by_path: HashMap<String, ManifestEntry> = HashMap::new();
    for e in applied.written {
        by_path.insert(e.path.clone(), e);
    }
    let mut written: Vec<ManifestEntry> = by_path.into_values().collect();
    written.sort_by(|a, b| a.path.cmp(&b.path));
    let removed: HashSet<String> = applied.removed.into_iter().collect();
    let mut written = written.into_iter().peekable();
    let mut w = ManifestFileWriter::create(out)?;
    for e in entries(base)? {
        let e = e?;
        while let Some(new) = written.next_if(|n| n.path < e.path) {
            w.push(&new)?;
        }
        if let Some(new) = written.next_if(|n| n.path == e.path) {
            w.push(&new)?;
        } else if !removed.contains(&e.path) {
            w.push(&e)?;
        }
    }
    for new in written {
        w.push(&new)?;
    }
    w.finish()?;
    Ok(())
}
