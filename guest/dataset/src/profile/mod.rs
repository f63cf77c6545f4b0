//! The dataset's profiles: the published mix (SPEC 3) and three other
//! shapes the write-up's readers ask about, each seeded, sized by `--scale`
//! and with its own change (the protocol's `change` step):
//!
//! | profile | scale 1 | its change |
//! |---|---|---|
//! | `published` | 48,011 files, 6.10 GB (`layout.rs`) | 5% of the files and regions rewritten |
//! | `tiny-files` | 1,000,000 files of 0-4 KiB, 2.0 GB (`tiny_files.rs`) | 5% of the files rewritten, 0.1% added, 0.1% removed |
//! | `media` | 1,000 photos of 2-5.4 MB and 8 videos of 200-400 MB, 6.10 GB (`media.rs`) | new photos, 5% of the bytes |
//! | `vm-image` | one 20 GiB sparse file, 27.5% written (`vm_image.rs`) | 5% of the written blocks overwritten in place, a few holes filled |
//!
//! Every profile's bytes come from the ChaCha8 streams of `stream.rs`
//! (keys of its own, [`Keys::content_of`]), its files are written by
//! `generate.rs`'s writers and its manifests are the same hashing and
//! verify: only the layout and the change are a profile's own. The
//! published profile's code paths and bytes are untouched.

mod media;
mod streamed_change;
mod tiny_files;
mod vm_image;

pub(crate) use streamed_change::{apply_change_from_file, apply_change_to_file};

use crate::change::{self, ChangePlan, check_target, write_stream};
use crate::error::DatasetError;
use crate::generate::{self, dir_entry, file_entry};
use crate::manifest_file::{ManifestFileWriter, WrittenManifest};
use crate::pool::{self, Worker};
use crate::stream::{Content, Keys, Tag};
use crate::tree::{self, Tree};
use crate::{DatasetParams, DatasetProfile, Progress};
use labrun_evidence::{EntryKind, Manifest, ManifestEntry};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

pub use vm_image::BLOCK as VM_IMAGE_BLOCK;

/// One class of a profile's files, for the totals `gen` and `labrun check`
/// print.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FootprintRow {
    pub class: &'static str,
    pub files: u64,
    /// Apparent bytes (what a reader of the files sees).
    pub bytes: u64,
}

/// A profile's tree at a scale, computed without touching a disk.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Footprint {
    pub rows: Vec<FootprintRow>,
    pub files: u64,
    /// Apparent bytes: what verify reads and a tool backs up.
    pub bytes: u64,
    /// What the tree takes on a disk (less than `bytes` for a sparse file):
    /// the figure to check free space and estimate write times with.
    pub allocated_bytes: u64,
}

impl Footprint {
    fn of_rows(rows: Vec<FootprintRow>) -> Footprint {
        let files = rows.iter().map(|r| r.files).sum();
        let bytes = rows.iter().map(|r| r.bytes).sum();
        Footprint {
            rows,
            files,
            bytes,
            allocated_bytes: bytes,
        }
    }
}

/// The tree of `params` at its scale (the seed changes no total).
pub fn footprint(params: &DatasetParams) -> Footprint {
    match params.profile {
        DatasetProfile::Published => {
            let l = crate::layout(params);
            Footprint::of_rows(vec![
                row("small (random, 1-128 KiB)", l.small_files, l.small_bytes),
                row("large random", l.large_random_files, l.large_random_bytes),
                row(
                    "large low-entropy",
                    l.low_entropy_files,
                    l.low_entropy_bytes,
                ),
                row("duplicates", l.duplicate_files, l.duplicate_bytes),
            ])
        }
        DatasetProfile::TinyFiles => Footprint::of_rows(tiny_files::rows(params.scale)),
        DatasetProfile::Media => Footprint::of_rows(media::rows(params.scale)),
        DatasetProfile::VmImage => vm_image::footprint(params),
    }
}

fn row(class: &'static str, files: u64, bytes: u64) -> FootprintRow {
    FootprintRow {
        class,
        files,
        bytes,
    }
}

/// Generates the tree of `params` under `out` (new or empty).
pub(crate) fn generate(
    out: &Path,
    params: &DatasetParams,
    progress: Progress,
) -> Result<Manifest, DatasetError> {
    let tree = match params.profile {
        DatasetProfile::Published => return generate::generate(out, params, progress),
        DatasetProfile::VmImage => return vm_image::generate(out, params, progress),
        DatasetProfile::TinyFiles => tiny_files::tree(params),
        DatasetProfile::Media => media::tree(params),
    };
    params.validate()?;
    generate::prepare_out(out)?;
    generate::check_free_space(out, footprint(params).allocated_bytes)?;
    let keys = Keys::content_of(params.profile, params.seed);
    generate::write_tree(out, tree, &keys, progress)
}

/// Generates the tree of `params` under `out` (new or empty) and writes its
/// manifest to `manifest`, as [`generate`] and `write_manifest` would, byte
/// for byte. The tiny-files tree, the one of a million files, is written
/// with neither its list of files nor its manifest held; the others hold a
/// few thousand entries at most.
pub(crate) fn generate_to_file(
    out: &Path,
    params: &DatasetParams,
    manifest: &Path,
    progress: Progress,
) -> Result<WrittenManifest, DatasetError> {
    let mut w = ManifestFileWriter::create(manifest)?;
    if params.profile == DatasetProfile::TinyFiles {
        params.validate()?;
        generate::prepare_out(out)?;
        generate::check_free_space(out, footprint(params).allocated_bytes)?;
        tiny_files::write_streamed(out, params, &mut w, progress)?;
    } else {
        for e in &generate(out, params, progress)?.entries {
            w.push(e)?;
        }
    }
    w.finish()
}

/// What the change of `params` with `change_seed` touches in place (files
/// rewritten whole, regions overwritten); files it adds or removes are
/// not named: whoever resets the tree finds those by comparing it.
pub fn change_plan(params: &DatasetParams, change_seed: u64) -> ChangePlan {
    let mut plan = ChangePlan {
        small_files: Vec::new(),
        regions: Vec::new(),
    };
    match params.profile {
        DatasetProfile::Published => return change::change_plan(params, change_seed),
        DatasetProfile::VmImage => plan.regions = vm_image::regions(params, change_seed),
        DatasetProfile::TinyFiles | DatasetProfile::Media => {
            for edit in file_edits(params, change_seed) {
                if let Edit::Rewrite { path, .. } = edit {
                    plan.small_files.push(path);
                }
            }
            plan.small_files.sort();
        }
    }
    plan
}

/// How much of the tree a change touches in place, counted without listing
/// it (the tiny-files change names tens of thousands of files).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ChangeExtent {
    pub files_rewritten: u64,
    pub regions: u64,
    pub region_bytes: u64,
}

pub fn change_extent(params: &DatasetParams, change_seed: u64) -> ChangeExtent {
    if params.profile == DatasetProfile::TinyFiles {
        return ChangeExtent {
            files_rewritten: tiny_files::rewritten_count(params),
            regions: 0,
            region_bytes: 0,
        };
    }
    let plan = change_plan(params, change_seed);
    ChangeExtent {
        files_rewritten: plan.small_files.len() as u64,
        regions: plan.regions.len() as u64,
        region_bytes: plan.regions.iter().map(|r| r.len).sum(),
    }
}

/// A file profile's change, file by file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Edit {
    /// New random content of the same size from the change stream
    /// `(Tag::Small, index)`; a file already gone (removed by an earlier
    /// change) stays gone.
    Rewrite {
        path: String,
        index: u64,
        size: u64,
    },
    /// A new file (or the same one again, if this change ran before) from
    /// the change stream `(Tag::Added, index)`.
    Add {
        path: String,
        index: u64,
        size: u64,
    },
    Remove {
        path: String,
    },
}

impl Edit {
    pub(crate) fn path(&self) -> &str {
        match self {
            Edit::Rewrite { path, .. } | Edit::Add { path, .. } | Edit::Remove { path } => path,
        }
    }
    pub(crate) fn size(&self) -> u64 {
        match self {
            Edit::Rewrite { size, .. } | Edit::Add { size, .. } => *size,
            Edit::Remove { .. } => 0,
        }
    }
}

fn file_edits(params: &DatasetParams, change_seed: u64) -> Vec<Edit> {
    match params.profile {
        DatasetProfile::TinyFiles => tiny_files::edits(params, change_seed),
        DatasetProfile::Media => media::edits(params, change_seed),
        DatasetProfile::Published | DatasetProfile::VmImage => Vec::new(),
    }
}

/// What a change left: entries written (new content, new files, new
/// directories) and paths removed, to update a manifest without a rescan.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    pub written: Vec<ManifestEntry>,
    pub removed: Vec<String>,
}

/// Bytes a change writes (its progress total).
fn change_bytes(params: &DatasetParams, change_seed: u64) -> u64 {
    match params.profile {
        DatasetProfile::VmImage => footprint(params).bytes,
        _ => file_edits(params, change_seed).iter().map(Edit::size).sum(),
    }
}

fn apply(
    dir: &Path,
    params: &DatasetParams,
    change_seed: u64,
    progress: Progress,
) -> Result<Applied, DatasetError> {
    params.validate()?;
    if params.profile == DatasetProfile::VmImage {
        return vm_image::apply(dir, params, change_seed, progress);
    }
    let edits = file_edits(params, change_seed);
    check_edits(dir, &edits)?;
    let mut applied = Applied::default();
    let new_dirs = tree::parent_dirs(edits.iter().filter_map(|e| match e {
        Edit::Add { path, .. } => Some(path.as_str()),
        _ => None,
    }));
    for d in new_dirs {
        let abs = dir.join(&d);
        if fs::symlink_metadata(&abs).is_err() {
            generate::make_dir(&abs)?;
        }
        applied.written.push(dir_entry(d));
    }
    let keys = Keys::change_of(params.profile, params.seed, change_seed);
    let order = pool::biggest_first(edits.iter().map(Edit::size));
    let total = edits.iter().map(Edit::size).sum();
    let results = pool::run(
        &edits,
        &order,
        pool::threads(1),
        total,
        progress,
        |edit, worker| run_edit(dir, edit, &keys, worker),
    )?;
    for (edit, result) in edits.iter().zip(results) {
        match result {
            Some(entry) => applied.written.push(entry),
            None => applied.removed.push(edit.path().to_string()),
        }
    }
    Ok(applied)
}

/// Refuses a tree the change was not made for before touching it: a
/// rewritten file present with another size, most of them missing (an
/// earlier change removes a few), or a file to remove in a directory that
/// is not there, means another `--scale` or profile.
fn check_edits<'a>(
    dir: &Path,
    edits: impl IntoIterator<Item = &'a Edit>,
) -> Result<(), DatasetError> {
    let mut check = EditCheck::default();
    for edit in edits {
        check.edit(dir, edit)?;
    }
    check.finish()
}

/// [`check_edits`] an edit at a time, for a change that is never held.
#[derive(Default)]
pub(crate) struct EditCheck {
    rewrites: u64,
    /// The first rewritten file missing, and how many are.
    missing: Option<(std::path::PathBuf, u64)>,
}

impl EditCheck {
    pub(crate) fn edit(&mut self, dir: &Path, edit: &Edit) -> Result<(), DatasetError> {
        let path = dir.join(edit.path());
        match edit {
            Edit::Rewrite { size, .. } => {
                self.rewrites += 1;
                if fs::symlink_metadata(&path).is_ok() {
                    check_target(&path, *size)?
                } else {
                    self.missing.get_or_insert((path, 0)).1 += 1;
                }
            }
            _ => {
                let parent = path.parent().unwrap_or(dir);
                let is_dir = fs::metadata(parent).is_ok_and(|m| m.is_dir());
                let added = matches!(edit, Edit::Add { .. });
                if !is_dir && !added {
                    return Err(DatasetError::TreeMismatch {
                        path: parent.to_path_buf(),
                        detail: "no such directory".into(),
                    });
                }
            }
        }
        Ok(())
    }

    pub(crate) fn finish(self) -> Result<(), DatasetError> {
        match self.missing {
            Some((path, n)) if n * 2 > self.rewrites => Err(DatasetError::TreeMismatch {
                path,
                detail: format!(
                    "no such file, nor {} other of the {} to rewrite",
                    n - 1,
                    self.rewrites
                ),
            }),
            _ => Ok(()),
        }
    }
}

/// Runs one edit; returns the file's new entry, or `None` when it is gone.
pub(crate) fn run_edit(
    dir: &Path,
    edit: &Edit,
    keys: &Keys,
    worker: &mut Worker,
) -> Result<Option<ManifestEntry>, DatasetError> {
    let path = dir.join(edit.path());
    let (tag, index, size) = match *edit {
        Edit::Remove { .. } => {
            return match fs::remove_file(&path) {
                Ok(()) => Ok(None),
                Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
                Err(e) => Err(DatasetError::io("removing", &path, e)),
            };
        }
        Edit::Rewrite { index, size, .. } => {
            if fs::symlink_metadata(&path).is_err() {
                return Ok(None);
            }
            (Tag::Small, index, size)
        }
        Edit::Add { index, size, .. } => (Tag::Added, index, size),
    };
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(tree::FILE_MODE)
        .open(&path)
        .map_err(|e| DatasetError::io("opening", &path, e))?;
    // The umask may have cleared bits of a new file.
    file.set_permissions(fs::Permissions::from_mode(tree::FILE_MODE))
        .map_err(|e| DatasetError::io("setting the mode of", &path, e))?;
    let mut hasher = Sha256::new();
    let mut rng = keys.stream(tag, index);
    write_stream(
        &mut file,
        &path,
        &mut rng,
        Content::Random,
        size,
        &mut hasher,
        worker,
    )?;
    Ok(Some(file_entry(
        edit.path().to_string(),
        size,
        hex::encode(hasher.finalize()),
    )))
}

/// Applies the change and rescans the whole tree for the new manifest.
pub(crate) fn apply_change(
    dir: &Path,
    params: &DatasetParams,
    change_seed: u64,
    progress: Progress,
) -> Result<Manifest, DatasetError> {
    if params.profile == DatasetProfile::Published {
        return change::apply_change(dir, params, change_seed, progress);
    }
    let change_bytes = change_bytes(params, change_seed);
    let total = change_bytes + footprint(params).bytes;
    apply(dir, params, change_seed, &mut |done, _| {
        progress(done.min(change_bytes), total)
    })?;
    crate::scan::scan(dir, crate::scan::Detail::Content, &mut |done, _| {
        progress((change_bytes + done).min(total), total)
    })
}

/// Applies the change and updates `base` with what it wrote and removed.
pub(crate) fn apply_change_from(
    dir: &Path,
    params: &DatasetParams,
    change_seed: u64,
    base: &Manifest,
    progress: Progress,
) -> Result<Manifest, DatasetError> {
    if params.profile == DatasetProfile::Published {
        return change::apply_change_from(dir, params, change_seed, base, progress);
    }
    // The base must describe this tree: every file rewritten in place is in it.
    let known: HashMap<&str, &ManifestEntry> =
        base.entries.iter().map(|e| (e.path.as_str(), e)).collect();
    let plan = change_plan(params, change_seed);
    for path in plan
        .small_files
        .iter()
        .chain(plan.regions.iter().map(|r| &r.path))
    {
        let in_base = known
            .get(path.as_str())
            .is_some_and(|e| e.kind == EntryKind::File);
        if !in_base && dir.join(path).exists() {
            return Err(DatasetError::BaseManifestMismatch { path: path.clone() });
        }
    }
    let applied = apply(dir, params, change_seed, progress)?;
    let mut by_path: HashMap<String, ManifestEntry> = base
        .entries
        .iter()
        .map(|e| (e.path.clone(), e.clone()))
        .collect();
    for path in &applied.removed {
        by_path.remove(path);
    }
    for entry in applied.written {
        by_path.insert(entry.path.clone(), entry);
    }
    let mut manifest = Manifest {
        entries: by_path.into_values().collect(),
    };
    manifest.sort();
    Ok(manifest)
}

/// `n` sizes, stratified: the `r`th of `n` is the midpoint quantile
/// `min + span * (2r+1) / (2n)` of a uniform law on `[min, min + span)`,
/// so totals depend on `n` only (the seed decides which path gets which).
fn stratified(n: u64, min: u64, span: u64) -> impl Iterator<Item = u64> {
    (0..n).map(move |r| min + (span as u128 * (2 * r as u128 + 1) / (2 * n as u128)) as u64)
}

/// `k` distinct values of `0..n`, in the order drawn (partial Fisher-Yates).
fn choose(rng: &mut crate::stream::StreamRng, n: u64, k: u64) -> Vec<u64> {
    let k = k.min(n);
    let mut picked: HashMap<u64, u64> = HashMap::new();
    let mut out = Vec::with_capacity(k as usize);
    for i in 0..k {
        let j = i + crate::stream::below(rng, n - i);
        let at_j = *picked.get(&j).unwrap_or(&j);
        let at_i = *picked.get(&i).unwrap_or(&i);
        picked.insert(j, at_i);
        out.push(at_j);
    }
    out
}

/// `tree` with its parent directories filled in from its files.
fn with_dirs(files: Vec<tree::FileSpec>) -> Tree {
    let dirs = tree::parent_dirs(files.iter().map(|f| f.path.as_str()));
    Tree { files, dirs }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stratified_sizes_stay_in_range_and_sum_as_computed() {
        let sizes: Vec<u64> = stratified(1000, 10, 100).collect();
        assert!(sizes.iter().all(|&s| (10..110).contains(&s)));
        assert!(sizes.windows(2).all(|w| w[0] <= w[1]));
        // Sum of floor(100 (2r+1) / 2000) + 10, by a direct loop in floats.
        let direct: f64 = (0..1000)
            .map(|r| 10.0 + ((100.0 * (2.0 * r as f64 + 1.0)) / 2000.0).floor())
            .sum();
        assert_eq!(sizes.iter().sum::<u64>() as f64, direct);
    }

    #[test]
    fn choose_picks_distinct_values_in_range() {
        let mut rng = Keys::content(1).stream(Tag::ChangeChoice, 0);
        let mut picked = choose(&mut rng, 50, 20);
        assert_eq!(picked.len(), 20);
        assert!(picked.iter().all(|&v| v < 50));
        picked.sort();
        picked.dedup();
        assert_eq!(picked.len(), 20);
        let mut all = choose(&mut rng, 7, 10);
        all.sort();
        assert_eq!(all, (0..7).collect::<Vec<_>>());
    }
}
