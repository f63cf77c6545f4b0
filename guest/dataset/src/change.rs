//! The 5% change of SPEC section 3: rewrite 2,000 of the 40,000 small files
//! with new random content of the same size, and overwrite one contiguous
//! region of 5% of each large file's size in each of the 9 large files with
//! new content of the file's kind (random or low-entropy). Duplicates are
//! never touched. Proportional under `--scale`.
//!
//! Which files and where is decided by the change stream (key from seed and
//! change seed; see `stream`): the small files are the first `k` of a seeded
//! Fisher-Yates shuffle of the small-file indices, and each large file's
//! region starts at a uniform offset in `0..=size-len`, drawn in the order
//! random-0..3, lowentropy-0..4. New content comes from per-file streams of
//! the same key. So the change is a pure function of (seed, scale,
//! change_seed): applying it twice leaves the tree as after the first time.

use crate::error::DatasetError;
use crate::layout;
use crate::pool::{self, Worker};
use crate::scan::hash_into;
use crate::stream::{self, Content, Keys, Tag};
use crate::tree::{self, Class};
use crate::{DatasetParams, Progress};
use labrun_evidence::{EntryKind, Manifest};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;

/// What the change touches, for tests and evidence.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ChangePlan {
    /// Small files rewritten whole, sorted.
    pub small_files: Vec<String>,
    /// One region per large file, in file order.
    pub regions: Vec<ChangedRegion>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChangedRegion {
    pub path: String,
    pub offset: u64,
    pub len: u64,
}

#[derive(Debug, Clone)]
enum Job {
    Rewrite {
        path: String,
        index: u64,
        size: u64,
    },
    Overwrite {
        path: String,
        class: Class,
        index: u64,
        size: u64,
        offset: u64,
        len: u64,
    },
}

impl Job {
    fn path(&self) -> &str {
        match self {
            Job::Rewrite { path, .. } | Job::Overwrite { path, .. } => path,
        }
    }
    fn size(&self) -> u64 {
        match self {
            Job::Rewrite { size, .. } | Job::Overwrite { size, .. } => *size,
        }
    }
}

fn jobs(params: &DatasetParams, change_seed: u64) -> Vec<Job> {
    let scaled = layout::scaled(params.scale);
    let t = tree::tree(params);
    let mut rng = Keys::change(params.seed, change_seed).stream(Tag::ChangeChoice, 0);

    let n = scaled.small_files;
    let mut indices: Vec<u64> = (0..n).collect();
    for i in 0..scaled.change_small_files {
        let j = i + stream::below(&mut rng, n - i);
        indices.swap(i as usize, j as usize);
    }
    let mut chosen = indices[..scaled.change_small_files as usize].to_vec();
    chosen.sort_unstable();

    let mut jobs: Vec<Job> = chosen
        .into_iter()
        .map(|index| {
            let spec = &t.files[index as usize];
            Job::Rewrite {
                path: spec.path.clone(),
                index,
                size: spec.size,
            }
        })
        .collect();
    for spec in t.files.iter().filter(|f| f.class != Class::Small) {
        let len = layout::change_region_len(spec.size);
        let offset = stream::below(&mut rng, spec.size - len + 1);
        jobs.push(Job::Overwrite {
            path: spec.path.clone(),
            class: spec.class,
            index: spec.index,
            size: spec.size,
            offset,
            len,
        });
    }
    jobs
}

pub fn change_plan(params: &DatasetParams, change_seed: u64) -> ChangePlan {
    let mut plan = ChangePlan {
        small_files: Vec::new(),
        regions: Vec::new(),
    };
    for job in jobs(params, change_seed) {
        match job {
            Job::Rewrite { path, .. } => plan.small_files.push(path),
            Job::Overwrite {
                path, offset, len, ..
            } => plan.regions.push(ChangedRegion { path, offset, len }),
        }
    }
    plan
}

/// Applies the change; returns (relative path, new SHA-256) per changed file.
fn apply(
    dir: &Path,
    params: &DatasetParams,
    change_seed: u64,
    progress: Progress,
) -> Result<Vec<(String, String)>, DatasetError> {
    params.validate()?;
    let jobs = jobs(params, change_seed);
    // Check the whole tree first: a wrong --scale must not half-change it.
    for job in &jobs {
        check_target(&dir.join(job.path()), job.size())?;
    }
    let keys = Keys::change(params.seed, change_seed);
    let order = pool::biggest_first(jobs.iter().map(Job::size));
    let total = jobs.iter().map(Job::size).sum();
    let digests = pool::run(
        &jobs,
        &order,
        pool::threads(1),
        total,
        progress,
        |job, worker| run_job(dir, job, &keys, worker),
    )?;
    Ok(jobs
        .iter()
        .map(|j| j.path().to_string())
        .zip(digests)
        .collect())
}

/// Applies the change and rescans the whole tree for the new manifest.
pub fn apply_change(
    dir: &Path,
    params: &DatasetParams,
    change_seed: u64,
    progress: Progress,
) -> Result<Manifest, DatasetError> {
    let change_bytes: u64 = jobs(params, change_seed).iter().map(Job::size).sum();
    let tree_bytes = crate::layout(params).total_bytes();
    let total = change_bytes + tree_bytes;
    apply(dir, params, change_seed, &mut |done, _| {
        progress(done.min(change_bytes), total)
    })?;
    crate::scan::scan(dir, crate::scan::Detail::Content, &mut |done, _| {
        progress((change_bytes + done).min(total), total)
    })
}

/// Applies the change and updates `base` (the tree's manifest before it)
/// with the new digests of the changed files only: no rescan.
pub fn apply_change_from(
    dir: &Path,
    params: &DatasetParams,
    change_seed: u64,
    base: &Manifest,
    progress: Progress,
) -> Result<Manifest, DatasetError> {
    let mut manifest = base.clone();
    let mut by_path: HashMap<&str, usize> = HashMap::new();
    for (i, e) in base.entries.iter().enumerate() {
        if e.kind == EntryKind::File {
            by_path.insert(e.path.as_str(), i);
        }
    }
    // Check the base names every target before touching the tree.
    let targets: Vec<usize> = jobs(params, change_seed)
        .iter()
        .map(|j| {
            by_path
                .get(j.path())
                .copied()
                .ok_or_else(|| DatasetError::BaseManifestMismatch {
                    path: j.path().to_string(),
                })
        })
        .collect::<Result<_, _>>()?;
    let changed = apply(dir, params, change_seed, progress)?;
    for (i, (_, digest)) in targets.into_iter().zip(changed) {
        manifest.entries[i].sha256 = digest;
    }
    manifest.sort();
    Ok(manifest)
}

pub(crate) fn check_target(path: &Path, size: u64) -> Result<(), DatasetError> {
    let mismatch = |detail: String| DatasetError::TreeMismatch {
        path: path.to_path_buf(),
        detail,
    };
    let md = fs::symlink_metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => mismatch("no such file".into()),
        _ => DatasetError::io("reading the metadata of", path, e),
    })?;
    if !md.is_file() {
        return Err(mismatch("not a regular file".into()));
    }
    if md.len() != size {
        return Err(mismatch(format!("{} bytes, expected {size}", md.len())));
    }
    Ok(())
}

fn run_job(
    dir: &Path,
    job: &Job,
    keys: &Keys,
    worker: &mut Worker,
) -> Result<String, DatasetError> {
    let path = dir.join(job.path());
    match *job {
        Job::Rewrite { index, size, .. } => {
            let mut file = OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(&path)
                .map_err(|e| DatasetError::io("opening", &path, e))?;
            let mut rng = keys.stream(Tag::Small, index);
            let mut hasher = Sha256::new();
            write_stream(
                &mut file,
                &path,
                &mut rng,
                Content::Random,
                size,
                &mut hasher,
                worker,
            )?;
            Ok(hex::encode(hasher.finalize()))
        }
        Job::Overwrite {
            class,
            index,
            size,
            offset,
            len,
            ..
        } => {
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .map_err(|e| DatasetError::io("opening", &path, e))?;
            let mut hasher = Sha256::new();
            // Hash the untouched prefix, write (and hash) the new region,
            // hash the untouched rest: one pass over the file.
            let prefix = hash_into(&mut file, &path, offset, &mut hasher, worker)?;
            let mut rng = keys.stream(class.tag(), index);
            write_stream(
                &mut file,
                &path,
                &mut rng,
                class.content(),
                len,
                &mut hasher,
                worker,
            )?;
            let rest = hash_into(&mut file, &path, u64::MAX, &mut hasher, worker)?;
            if prefix != offset || prefix + len + rest != size {
                return Err(DatasetError::TreeMismatch {
                    path,
                    detail: "the file changed size while it was being changed".into(),
                });
            }
            Ok(hex::encode(hasher.finalize()))
        }
    }
}

pub(crate) fn write_stream(
    file: &mut File,
    path: &Path,
    rng: &mut stream::StreamRng,
    content: Content,
    len: u64,
    hasher: &mut Sha256,
    worker: &mut Worker,
) -> Result<(), DatasetError> {
    let mut left = len;
    while left > 0 {
        if worker.aborted() {
            return Err(crate::generate::aborted());
        }
        let n = left.min(pool::CHUNK as u64) as usize;
        let chunk = &mut worker.buf[..n];
        stream::fill(rng, content, chunk);
        hasher.update(&*chunk);
        file.write_all(chunk)
            .map_err(|e| DatasetError::io("writing", path, e))?;
        worker.add(n as u64);
        left -= n as u64;
    }
    Ok(())
}
