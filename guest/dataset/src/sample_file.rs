//! [`crate::sample`] of a manifest file, written to a manifest file, for
//! trees of millions of files: the file is read three times, one entry at
//! a time, and what is held is small (the scores of hard-link groups, one
//! bit per folder, the open folders of `open_folders.rs`).
//!
//! 1. Scores: the lowest (for the keep-at-least-one rule, when nothing is
//!    below the fraction) and each link group's (by its first path).
//! 2. Folders: which hold a chosen entry. A folder precedes its entries,
//!    but not right before them (`a`, `a-b`, `a/x`), so it cannot be
//!    written when its first chosen entry is found: the pass before the
//!    writing one marks it.
//! 3. Writing: the marked folders and the chosen entries, link groups
//!    numbered again in order of first path.

use crate::error::DatasetError;
use crate::manifest_file::{ManifestFileWriter, WrittenManifest, read_entries};
use crate::open_folders::OpenFolders;
use crate::sample::{score, threshold};
use labrun_evidence::{EntryKind, ManifestEntry};
use std::collections::HashMap;
use std::path::Path;

/// Writes [`crate::sample`] of the manifest file `manifest` to `out`, byte
/// for byte what `write_manifest(out, &sample(&read_manifest(manifest)?,
/// fraction, seed))` writes, without holding either. A file that is not in
/// manifest order (labrun's writers all sort) is read whole and sampled so.
pub(crate) fn sample_to_file(
    manifest: &Path,
    fraction: f64,
    seed: u64,
    out: &Path,
) -> Result<WrittenManifest, DatasetError> {
    let Some(scores) = Scores::read(manifest, seed)? else {
        let held = crate::manifest_file::read_manifest(manifest)?;
        let mut w = ManifestFileWriter::create(out)?;
        for e in &crate::sample::sample(&held, fraction, seed).entries {
            w.push(e)?;
        }
        return w.finish();
    };
    let mut w = ManifestFileWriter::create(out)?;
    if fraction >= 1.0 {
        // The whole tree, empty folders included, as `sample` keeps it.
        for e in read_entries(manifest)? {
            w.push(&e?)?;
        }
        return w.finish();
    }
    let choice = Choice::new(fraction, &scores);
    let folders = marked_folders(manifest, &scores, &choice)?;
    let mut folder = 0usize;
    let mut renumber: HashMap<u32, u32> = HashMap::new();
    for e in read_entries(manifest)? {
        let mut e = e?;
        let keep = if e.kind == EntryKind::Dir {
            folder += 1;
            folders.get(folder - 1)
        } else {
            choice.chosen(scores.of(&e))
        };
        if !keep {
            continue;
        }
        if let Some(g) = e.link_group {
            let next = renumber.len() as u32;
            e.link_group = Some(*renumber.entry(g).or_insert(next));
        }
        w.push(&e)?;
    }
    w.finish()
}

/// What pass 1 learns.
struct Scores {
    seed: u64,
    /// Each link group's score: its first path's.
    groups: HashMap<u32, u64>,
    /// The lowest score of a file or symlink; `None`: there is none.
    lowest: Option<u64>,
}

impl Scores {
    /// `None` when the file is not in manifest order.
    fn read(manifest: &Path, seed: u64) -> Result<Option<Scores>, DatasetError> {
        let mut scores = Scores {
            seed,
            groups: HashMap::new(),
            lowest: None,
        };
        let mut last: Option<String> = None;
        for e in read_entries(manifest)? {
            let e = e?;
            if last.as_ref().is_some_and(|last| *last > e.path) {
                return Ok(None);
            }
            if e.kind != EntryKind::Dir {
                if let Some(g) = e.link_group {
                    scores
                        .groups
                        .entry(g)
                        .or_insert_with(|| score(seed, &e.path));
                }
                let s = scores.of(&e);
                scores.lowest = Some(scores.lowest.map_or(s, |l| l.min(s)));
            }
            last = Some(e.path);
        }
        Ok(Some(scores))
    }

    /// The score of a file or symlink (a link group's once pass 1 is done).
    fn of(&self, e: &ManifestEntry) -> u64 {
        match e.link_group.and_then(|g| self.groups.get(&g)) {
            Some(&s) => s,
            None => score(self.seed, &e.path),
        }
    }
}

/// Which scores are in the sample.
enum Choice {
    Below(u64),
    /// Nothing is below the fraction: the lowest score is kept (a link
    /// group whole, and any entry that ties).
    Lowest(u64),
}

impl Choice {
    fn new(fraction: f64, scores: &Scores) -> Choice {
        let below = threshold(fraction);
        match scores.lowest {
            Some(lowest) if lowest >= below => Choice::Lowest(lowest),
            _ => Choice::Below(below),
        }
    }

    fn chosen(&self, score: u64) -> bool {
        match *self {
            Choice::Below(threshold) => score < threshold,
            Choice::Lowest(lowest) => score == lowest,
        }
    }
}

/// One bit per folder, in manifest order.
struct Bits(Vec<u64>);

impl Bits {
    fn set(&mut self, i: usize) {
        let word = i / 64;
        if self.0.len() <= word {
            self.0.resize(word + 1, 0);
        }
        self.0[word] |= 1 << (i % 64);
    }

    fn get(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
}

/// Pass 2: the folders (numbered in manifest order) that hold a chosen
/// entry, however deep.
fn marked_folders(manifest: &Path, scores: &Scores, choice: &Choice) -> Result<Bits, DatasetError> {
    let mut marked = Bits(Vec::new());
    let mut open: OpenFolders<usize> = OpenFolders::new();
    let mut folders = 0usize;
    for e in read_entries(manifest)? {
        let e = e?;
        while open.close_passed(&e.path).is_some() {}
        if e.kind == EntryKind::Dir {
            open.open(&e.path, folders);
            folders += 1;
        } else if choice.chosen(scores.of(&e)) {
            for &mut folder in open.holding(&e.path) {
                marked.set(folder);
            }
        }
    }
    Ok(marked)
}
