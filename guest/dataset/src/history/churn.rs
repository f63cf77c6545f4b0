//! The files of each commit: the first commit's tree, then per commit a
//! seeded set of edits, renames, removals and additions.
//!
//! Per commit `k` (from 2): `t = max(1, round(churn * files))` distinct
//! files are picked; each is edited (72%), renamed (10%, half of them also
//! edited) or removed (18%; never the last file); then `max(1, t / 4)` files
//! are added, one in ten in a new directory; one commit in four removes a
//! folder of at most 4 files whole. An edit rewrites 1-3 hunks of a
//! file: up to 3 lines removed and up to 5 new lines at a random place.
//! Every random number of commit `k` comes from the ChaCha20 stream `k` of
//! the history's key, so commits never shift one another.

use super::text::MEAN_LINE_BYTES;
use super::{FileState, HistoryGenerator};
use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, HashSet};

const TOP_DIRS: &[&str] = &[
    "arch", "block", "crypto", "drivers", "fs", "include", "kernel", "lib", "mm", "net", "scripts",
    "sound", "tools", "docs",
];
const DIR_WORDS: &[&str] = &[
    "core", "net", "usb", "pci", "gpu", "sched", "ext4", "btrfs", "nfs", "ipv4", "ipv6", "wifi",
    "input", "media", "acpi", "power", "misc", "char", "block", "scsi", "ata", "hid", "i2c", "spi",
    "gpio", "clk", "dma", "iommu", "virtio", "xen", "bpf", "trace",
];
const NAME_WORDS: &[&str] = &[
    "main", "core", "util", "init", "table", "queue", "buffer", "cache", "driver", "device",
    "probe", "ioctl", "sysfs", "debug", "trace", "alloc", "map", "list", "hash", "timer", "irq",
    "power", "config", "link", "route", "socket", "file", "inode", "super", "dir", "namei",
    "xattr", "acl", "journal", "extent", "balloc",
];
/// Extensions by weight: mostly C, as in a kernel tree.
const EXTENSIONS: &[&str] = &[
    "c", "c", "c", "c", "h", "h", "h", "rs", "py", "sh", "txt", "rst",
];

pub(crate) fn key(seed: u64) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"labrun-history/v1/");
    h.update(seed.to_le_bytes());
    h.finalize().into()
}

struct Draw(ChaCha20Rng);

impl Draw {
    fn commit(seed: u64, index: u32) -> Draw {
        let mut rng = ChaCha20Rng::from_seed(key(seed));
        rng.set_stream(u64::from(index));
        Draw(rng)
    }
    fn u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn below(&mut self, n: u64) -> u64 {
        self.0.next_u64() % n.max(1)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len() as u64) as usize]
    }
}

#[derive(Debug, Clone)]
pub(crate) struct State {
    pub(crate) files: BTreeMap<String, FileState>,
    dirs: Vec<String>,
    next_revision: u64,
}

impl State {
    pub(crate) fn first_commit(p: &HistoryGenerator) -> State {
        let mut d = Draw::commit(p.seed, 1);
        let mut s = State {
            files: BTreeMap::new(),
            dirs: Vec::new(),
            next_revision: 1,
        };
        let wanted_dirs = (p.files / 8).max(1);
        let mut seen = BTreeSet::new();
        // A bounded number of tries: the name space is large, but a tiny
        // vocabulary must not loop forever.
        for _ in 0..wanted_dirs.saturating_mul(4) {
            if s.dirs.len() as u32 >= wanted_dirs {
                break;
            }
            let dir = new_dir(&mut d);
            if seen.insert(dir.clone()) {
                s.dirs.push(dir);
            }
        }
        for _ in 0..p.files {
            s.add_file(&mut d, p, false);
        }
        s
    }

    pub(crate) fn next_commit(&mut self, p: &HistoryGenerator, index: u32) {
        let mut d = Draw::commit(p.seed, index);
        let paths: Vec<String> = self.files.keys().cloned().collect();
        let touched = ((p.churn * paths.len() as f64).round() as usize).clamp(1, paths.len());
        let mut picked = Vec::with_capacity(touched);
        let mut taken = HashSet::with_capacity(touched);
        while picked.len() < touched {
            let i = d.below(paths.len() as u64) as usize;
            if taken.insert(i) {
                picked.push(&paths[i]);
            }
        }
        for path in picked {
            let roll = d.below(100);
            if roll < 72 || (roll >= 82 && self.files.len() == 1) {
                self.edit(&mut d, path);
            } else if roll < 82 {
                let Some(file) = self.files.remove(path) else {
                    continue;
                };
                let to = self.free_path(&mut d);
                self.files.insert(to.clone(), file);
                if d.below(2) == 0 {
                    self.edit(&mut d, &to);
                }
            } else {
                self.files.remove(path);
            }
        }
        for _ in 0..(touched / 4).max(1) {
            let new_dir = d.below(10) == 0;
            self.add_file(&mut d, p, new_dir);
        }
        // Now and then a small folder goes away whole, as a retired driver
        // does: the work tree then loses the folder itself.
        if d.below(4) == 0 {
            let dir = self.dirs[d.below(self.dirs.len() as u64) as usize].clone();
            let prefix = format!("{dir}/");
            let inside: Vec<String> = self
                .files
                .keys()
                .filter(|k| k.starts_with(&prefix))
                .cloned()
                .collect();
            if inside.len() <= 4 && inside.len() < self.files.len() {
                for k in inside {
                    self.files.remove(&k);
                }
            }
        }
    }

    fn revision(&mut self) -> u64 {
        self.next_revision += 1;
        self.next_revision - 1
    }

    fn edit(&mut self, d: &mut Draw, path: &str) {
        let revision = self.revision();
        let Some(file) = self.files.get_mut(path) else {
            return;
        };
        for _ in 0..1 + d.below(3) {
            let len = file.lines.len() as u64;
            let at = d.below(len + 1) as usize;
            let removed = (d.below(4) as usize).min(file.lines.len() - at);
            let mut inserted = d.below(6) as usize;
            if removed == 0 && inserted == 0 {
                inserted = 1;
            }
            let new: Vec<u64> = (0..inserted).map(|_| d.u64()).collect();
            file.lines.splice(at..at + removed, new);
        }
        if file.lines.is_empty() {
            file.lines.push(d.u64());
        }
        file.revision = revision;
    }

    fn add_file(&mut self, d: &mut Draw, p: &HistoryGenerator, in_new_dir: bool) {
        let path = if in_new_dir || self.dirs.is_empty() {
            let dir = new_dir(d);
            if !self.dirs.contains(&dir) {
                self.dirs.push(dir.clone());
            }
            self.free_path_in(d, &dir)
        } else {
            self.free_path(d)
        };
        let executable = path.ends_with(".sh") || (path.ends_with(".py") && d.below(2) == 0);
        let lines = (file_size(d, p.mean_file_bytes) / MEAN_LINE_BYTES).max(1);
        let lines = (0..lines).map(|_| d.u64()).collect();
        let revision = self.revision();
        self.files.insert(
            path,
            FileState {
                revision,
                executable,
                lines,
            },
        );
    }

    /// An unused path in a known directory. Skewed (the square of a uniform
    /// draw) so that, as in real trees, a few folders hold many files and
    /// many hold a few, and some get emptied and removed.
    fn free_path(&self, d: &mut Draw) -> String {
        let u = d.unit();
        let i = ((u * u) * self.dirs.len() as f64) as usize;
        let dir = self.dirs[i.min(self.dirs.len() - 1)].clone();
        self.free_path_in(d, &dir)
    }

    fn free_path_in(&self, d: &mut Draw, dir: &str) -> String {
        let stem = if d.below(3) == 0 {
            format!("{}_{}", d.pick(NAME_WORDS), d.pick(NAME_WORDS))
        } else {
            d.pick(NAME_WORDS).to_string()
        };
        let ext = d.pick(EXTENSIONS);
        let mut path = format!("{dir}/{stem}.{ext}");
        let mut n = 2;
        while self.files.contains_key(&path) {
            path = format!("{dir}/{stem}{n}.{ext}");
            n += 1;
        }
        path
    }
}

/// A directory path: a top-level folder and 0-2 levels below it. Directory
/// names never hold a `.` and file names always do, so a path is never
/// both a file and a directory.
fn new_dir(d: &mut Draw) -> String {
    let mut dir = d.pick(TOP_DIRS).to_string();
    for _ in 0..d.below(3) {
        dir.push('/');
        dir.push_str(d.pick(DIR_WORDS));
    }
    dir
}

/// Log-uniform over [m/8, 4m] / 1.118: its mean is `m` (the mean of a
/// log-uniform law on [a, b] is (b - a) / ln(b / a), here 1.118 m before
/// the division).
fn file_size(d: &mut Draw, mean: u32) -> u64 {
    let m = f64::from(mean) / 1.118;
    let (lo, hi) = (m / 8.0, 4.0 * m);
    (lo * (hi / lo).powf(d.unit())) as u64
}
