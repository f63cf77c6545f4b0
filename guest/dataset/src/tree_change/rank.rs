//! Which files the change takes, without holding the tree: every eligible
//! file gets a seeded rank from its path alone, and the change takes the
//! lowest ranks. A file's rank does not depend on the other files, so a pass
//! over the tree keeps only the `k` lowest seen so far ([`Lowest`]).

use sha2::{Digest, Sha256};
use std::collections::BinaryHeap;

/// The domain of the ranks' hash: `v3` since ranks replaced the seeded
/// permutation of `v2` (the same seed chooses other files).
const RANK_DOMAIN: &[u8] = b"labrun-dataset/v3/tree-change/rank";

/// A file's place in the seeded order: its rank, then (for the ties a
/// 64-bit hash may have) its position in the sorted manifest, so the order
/// is total and the same from any source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Key {
    pub rank: u64,
    pub position: u64,
}

/// Ranks of one seed: the first 8 bytes (little-endian) of
/// SHA-256(`labrun-dataset/v3/tree-change/rank` || seed (u64 LE) || path).
pub(super) struct Ranks {
    keyed: Sha256,
}

impl Ranks {
    pub fn new(seed: u64) -> Ranks {
        let mut keyed = Sha256::new();
        keyed.update(RANK_DOMAIN);
        keyed.update(seed.to_le_bytes());
        Ranks { keyed }
    }

    pub fn key(&self, path: &str, position: u64) -> Key {
        let digest = self.keyed.clone().chain_update(path.as_bytes()).finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        Key {
            rank: u64::from_le_bytes(first),
            position,
        }
    }
}

/// The `k` lowest items offered, in a max-heap of at most `k`.
pub(super) struct Lowest<T> {
    k: usize,
    heap: BinaryHeap<T>,
}

impl<T: Ord> Lowest<T> {
    pub fn new(k: usize) -> Lowest<T> {
        Lowest {
            k,
            heap: BinaryHeap::with_capacity(k),
        }
    }

    pub fn offer(&mut self, item: T) {
        if self.heap.len() < self.k {
            self.heap.push(item);
        } else if let Some(mut highest) = self.heap.peek_mut()
            && item < *highest
        {
            *highest = item;
        }
    }

    /// The items kept, lowest first.
    pub fn into_sorted_vec(self) -> Vec<T> {
        self.heap.into_sorted_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowest_keeps_the_k_lowest_whatever_the_order() {
        let values = [9u64, 3, 7, 1, 8, 2, 6, 0, 5, 4];
        for k in [0, 1, 3, 10, 20] {
            let mut lowest = Lowest::new(k);
            values.iter().for_each(|&v| lowest.offer(v));
            let want: Vec<u64> = (0..k.min(10) as u64).collect();
            assert_eq!(lowest.into_sorted_vec(), want, "k = {k}");
        }
    }

    #[test]
    fn a_rank_depends_on_the_seed_and_the_path_only() {
        let (one, two) = (Ranks::new(1), Ranks::new(2));
        assert_eq!(one.key("a/b", 0).rank, one.key("a/b", 9).rank);
        assert_ne!(one.key("a/b", 0).rank, one.key("a/c", 0).rank);
        assert_ne!(one.key("a/b", 0).rank, two.key("a/b", 0).rank);
        // Ties of rank fall to the manifest's order.
        let (a, b) = (
            Key {
                rank: 5,
                position: 1,
            },
            Key {
                rank: 5,
                position: 2,
            },
        );
        assert!(a < b);
    }
}
