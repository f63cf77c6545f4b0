//! Which files the dataset has, where, how big, and which of them have
//! copies in the duplicates subtree. Pure: no disk, same answer everywhere.
//!
//! ```text
//! small/TT/MM/NNNNN.bin          small file NNNNN (100 per leaf, 20 leaves per top)
//! large/random-K.bin             large random file K (0..4)
//! large/lowentropy-K.bin         low-entropy file K (0..5)
//! duplicates/small/TT/MM/NNNNN.bin   copy of a small file whose size rank is a multiple of 5
//! duplicates/large/random-K.bin      copy of large random files 0 and 1
//! ```

use crate::DatasetParams;
use crate::layout::{self, Scaled};
use crate::stream::{self, Content, Keys, Tag};
use std::collections::BTreeSet;

pub const SMALL_DIR: &str = "small";
pub const LARGE_DIR: &str = "large";
pub const DUPLICATES_DIR: &str = "duplicates";
pub const FILE_MODE: u32 = 0o644;
pub const DIR_MODE: u32 = 0o755;

const FILES_PER_LEAF: u64 = 100;
const LEAVES_PER_TOP: u64 = 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Small,
    LargeRandom,
    LowEntropy,
}

impl Class {
    pub fn content(self) -> Content {
        match self {
            Class::Small | Class::LargeRandom => Content::Random,
            Class::LowEntropy => Content::LowEntropy,
        }
    }

    pub fn tag(self) -> Tag {
        match self {
            Class::Small => Tag::Small,
            Class::LargeRandom => Tag::LargeRandom,
            Class::LowEntropy => Tag::LowEntropy,
        }
    }
}

/// One generated file and the paths of its exact copies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSpec {
    /// Relative, `/`-separated.
    pub path: String,
    pub class: Class,
    /// Index within its class; with the class and seed it names the stream.
    pub index: u64,
    pub size: u64,
    pub copies: Vec<String>,
}

/// Every file of the dataset (in class, then index order) and every
/// directory (sorted).
#[derive(Debug, Clone)]
pub struct Tree {
    pub files: Vec<FileSpec>,
    pub dirs: Vec<String>,
}

fn digits(mut n: u64) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

/// Relative path of small file `index` of `n` (widths grow past scale 1 so
/// paths still sort in index order).
pub fn small_path(index: u64, n: u64) -> String {
    let last = n.saturating_sub(1);
    let top_width = digits(last / (FILES_PER_LEAF * LEAVES_PER_TOP)).max(2);
    let file_width = digits(last).max(5);
    format!(
        "{SMALL_DIR}/{:0tw$}/{:02}/{:0fw$}.bin",
        index / (FILES_PER_LEAF * LEAVES_PER_TOP),
        (index / FILES_PER_LEAF) % LEAVES_PER_TOP,
        index,
        tw = top_width,
        fw = file_width
    )
}

pub fn large_path(class: Class, index: u64) -> String {
    match class {
        Class::LowEntropy => format!("{LARGE_DIR}/lowentropy-{index}.bin"),
        _ => format!("{LARGE_DIR}/random-{index}.bin"),
    }
}

fn duplicate_of(path: &str) -> String {
    format!("{DUPLICATES_DIR}/{path}")
}

/// Size rank of each small file (by index): a seeded permutation.
fn small_ranks(seed: u64, n: u64) -> Vec<u64> {
    stream::permutation(&mut Keys::content(seed).stream(Tag::Shuffle, 0), n)
}

pub fn tree(params: &DatasetParams) -> Tree {
    let s: Scaled = layout::scaled(params.scale);
    let n = s.small_files;
    let sizes = layout::small_sizes(n);
    let ranks = small_ranks(params.seed, n);
    let mut files = Vec::with_capacity(n as usize + 9);
    for (index, &rank) in ranks.iter().enumerate() {
        let path = small_path(index as u64, n);
        let copies = if layout::is_duplicated_small_rank(rank) {
            vec![duplicate_of(&path)]
        } else {
            Vec::new()
        };
        files.push(FileSpec {
            path,
            class: Class::Small,
            index: index as u64,
            size: sizes[rank as usize],
            copies,
        });
    }
    for index in 0..layout::LARGE_RANDOM_FILES {
        let path = large_path(Class::LargeRandom, index);
        let copies = if index < layout::DUPLICATE_LARGE_RANDOM {
            vec![duplicate_of(&path)]
        } else {
            Vec::new()
        };
        files.push(FileSpec {
            path,
            class: Class::LargeRandom,
            index,
            size: s.large_random_bytes,
            copies,
        });
    }
    for index in 0..layout::LOW_ENTROPY_FILES {
        files.push(FileSpec {
            path: large_path(Class::LowEntropy, index),
            class: Class::LowEntropy,
            index,
            size: s.low_entropy_bytes,
            copies: Vec::new(),
        });
    }
    let dirs = parent_dirs(
        files
            .iter()
            .flat_map(|f| std::iter::once(&f.path).chain(&f.copies))
            .map(String::as_str),
    );
    Tree { files, dirs }
}

/// Every directory above the relative `paths`, sorted (so a parent always
/// comes before its children).
pub fn parent_dirs<'a>(paths: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut dirs = BTreeSet::new();
    for p in paths {
        let mut rest = p;
        while let Some(cut) = rest.rfind('/') {
            rest = &rest[..cut];
            if !dirs.insert(rest.to_string()) {
                break;
            }
        }
    }
    dirs.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_sort_in_index_order_and_nest() {
        assert_eq!(small_path(0, 40_000), "small/00/00/00000.bin");
        assert_eq!(small_path(12_345, 40_000), "small/06/03/12345.bin");
        assert_eq!(small_path(39_999, 40_000), "small/19/19/39999.bin");
        assert_eq!(small_path(0, 400_000), "small/000/00/000000.bin");
        let paths: Vec<String> = (0..4000).map(|i| small_path(i, 4000)).collect();
        assert!(paths.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn tree_has_every_parent_directory() {
        let t = tree(&DatasetParams::published(1, 0.001));
        assert!(t.dirs.contains(&"small".to_string()));
        assert!(t.dirs.contains(&"small/00/00".to_string()));
        assert!(t.dirs.contains(&"duplicates/large".to_string()));
        for f in &t.files {
            for p in std::iter::once(&f.path).chain(&f.copies) {
                let parent = &p[..p.rfind('/').unwrap()];
                assert!(t.dirs.iter().any(|d| d == parent), "{parent}");
            }
        }
    }

    #[test]
    fn the_seed_moves_sizes_between_paths_not_the_totals() {
        let a = tree(&DatasetParams::published(1, 0.01));
        let b = tree(&DatasetParams::published(2, 0.01));
        let sizes = |t: &Tree| t.files.iter().map(|f| f.size).collect::<Vec<_>>();
        assert_ne!(sizes(&a), sizes(&b));
        let sum = |t: &Tree| t.files.iter().map(|f| f.size).sum::<u64>();
        assert_eq!(sum(&a), sum(&b));
    }
}
