//! The names of a private tree as [`crate::run::private_paths`] looks them
//! up: keyed 64-bit hashes kept in 4 bytes each, whatever the name's
//! length (issue 31: 4 million names in 16 MiB, where the agent's whole
//! target is 64 MiB).
//!
//! A hash's top 16 bits pick one of 65,536 buckets; the next 32 bits are
//! kept, sorted within the bucket, and found by a binary search: 48 bits
//! of the hash are compared, so a span of a log that is no name matches
//! one by chance with odds of the number of names in 2^48 (one in 70
//! million at 4 million names), and is then hashed too: over-redaction,
//! harmless.
//!
//! It is built in two passes over the hashes (count each bucket, then
//! place), so building takes 4 bytes a hash given, not a growing vector's
//! double: give each name once where that is cheap (a manifest lists every
//! folder, so the last name of each path is every name of the tree).

use std::io;

const BUCKETS: usize = 1 << 16;

/// Gives each hash of a set to the function it is given; called twice by
/// [`NameSet::with`], it must give the same hashes both times.
pub type EachHash<'a> = &'a mut dyn FnMut(&mut dyn FnMut(u64)) -> io::Result<()>;

/// A set of 64-bit hashes, kept as 48 bits each in 4 bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameSet {
    /// Where each bucket's fingerprints start, and the end of the last:
    /// `BUCKETS + 1` entries (none while the set is empty).
    offsets: Vec<u32>,
    /// Bits 16..48 of each hash, sorted within its bucket, no repeats.
    fingerprints: Vec<u32>,
}

fn bucket(hash: u64) -> usize {
    (hash >> 48) as usize
}

fn fingerprint(hash: u64) -> u32 {
    (hash >> 16) as u32
}

impl NameSet {
    /// The set of the hashes `each` gives, and of `self`'s own: `each` is
    /// called twice and must give the same hashes both times.
    pub fn with(&self, each: EachHash) -> io::Result<NameSet> {
        let mut counts = vec![0u32; BUCKETS];
        for h in self.hashes() {
            counts[bucket(h)] += 1;
        }
        each(&mut |h| counts[bucket(h)] += 1)?;
        let mut offsets = Vec::with_capacity(BUCKETS + 1);
        let mut total = 0u32;
        for c in &counts {
            offsets.push(total);
            total = total.checked_add(*c).ok_or_else(|| {
                io::Error::other(
                    "more than 4 billion names: a private tree this large is not supported",
                )
            })?;
        }
        offsets.push(total);
        // Where the next fingerprint of each bucket goes.
        let mut next: Vec<u32> = offsets[..BUCKETS].to_vec();
        let mut fingerprints = vec![0u32; total as usize];
        let mut place = |h: u64| {
            let slot = &mut next[bucket(h)];
            if let Some(f) = fingerprints.get_mut(*slot as usize) {
                *f = fingerprint(h);
            }
            *slot += 1;
        };
        for h in self.hashes() {
            place(h);
        }
        each(&mut place)?;
        if next.iter().zip(&offsets[1..]).any(|(n, end)| n != end) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the names changed between two reads of the tree's manifest",
            ));
        }
        Ok(NameSet::compacted(offsets, fingerprints))
    }

    /// Sorts each bucket and drops its repeats.
    fn compacted(offsets: Vec<u32>, mut fingerprints: Vec<u32>) -> NameSet {
        let mut kept = Vec::with_capacity(BUCKETS + 1);
        let mut write = 0usize;
        for b in 0..BUCKETS {
            kept.push(write as u32);
            let (start, end) = (offsets[b] as usize, offsets[b + 1] as usize);
            fingerprints[start..end].sort_unstable();
            let mut last = None;
            for read in start..end {
                let f = fingerprints[read];
                if last != Some(f) {
                    fingerprints[write] = f;
                    write += 1;
                    last = Some(f);
                }
            }
        }
        kept.push(write as u32);
        fingerprints.truncate(write);
        fingerprints.shrink_to_fit();
        NameSet {
            offsets: kept,
            fingerprints,
        }
    }

    /// Every hash of the set, as far as it keeps them (bits 16..64): what
    /// [`NameSet::with`] puts back in the same places.
    fn hashes(&self) -> impl Iterator<Item = u64> + '_ {
        self.offsets.windows(2).enumerate().flat_map(|(b, w)| {
            self.fingerprints[w[0] as usize..w[1] as usize]
                .iter()
                .map(move |&f| ((b as u64) << 48) | (u64::from(f) << 16))
        })
    }

    pub fn contains(&self, hash: u64) -> bool {
        let b = bucket(hash);
        let (Some(&start), Some(&end)) = (self.offsets.get(b), self.offsets.get(b + 1)) else {
            return false;
        };
        self.fingerprints[start as usize..end as usize]
            .binary_search(&fingerprint(hash))
            .is_ok()
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.fingerprints.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fingerprints.is_empty()
    }

    /// The set as bytes: the offsets, then the fingerprints, little-endian.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.offsets
            .iter()
            .chain(&self.fingerprints)
            .flat_map(|v| v.to_le_bytes())
            .collect()
    }

    /// The set [`NameSet::to_bytes`] wrote; `None` for bytes that are not
    /// one.
    pub fn from_bytes(bytes: &[u8]) -> Option<NameSet> {
        if !bytes.len().is_multiple_of(4) || bytes.len() < 4 * (BUCKETS + 1) {
            return None;
        }
        let mut words = bytes
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        let offsets: Vec<u32> = words.by_ref().take(BUCKETS + 1).collect();
        let fingerprints: Vec<u32> = words.collect();
        let ordered = offsets.windows(2).all(|w| w[0] <= w[1]);
        (ordered
            && offsets.first() == Some(&0)
            && offsets.last() == Some(&(fingerprints.len() as u32)))
        .then_some(NameSet {
            offsets,
            fingerprints,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set_of(hashes: &[u64]) -> NameSet {
        NameSet::default()
            .with(&mut |put| {
                hashes.iter().for_each(|&h| put(h));
                Ok(())
            })
            .unwrap()
    }

    #[test]
    fn holds_each_hash_once_and_finds_it_by_its_48_bits() {
        let hashes: Vec<u64> = (0..50_000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        let mut twice = hashes.clone();
        twice.extend(&hashes);
        let set = set_of(&twice);
        assert_eq!(set.len(), hashes.len());
        assert!(hashes.iter().all(|&h| set.contains(h)));
        // The low 16 bits are not kept.
        assert!(set.contains(hashes[7] ^ 0xffff));
        assert!(!set.contains(hashes[7] ^ (1 << 20)));
        assert!(!NameSet::default().contains(hashes[0]));
    }

    #[test]
    fn grows_by_more_hashes_and_survives_its_bytes() {
        let (a, b) = ([1u64 << 50, 3 << 40, 77], [5u64 << 60, 1 << 50]);
        let set = set_of(&a)
            .with(&mut |put| {
                b.iter().for_each(|&h| put(h));
                Ok(())
            })
            .unwrap();
        assert_eq!(set.len(), 4);
        assert!(a.iter().chain(&b).all(|&h| set.contains(h)));
        assert_eq!(NameSet::from_bytes(&set.to_bytes()), Some(set.clone()));
        let bytes = set.to_bytes();
        assert_eq!(NameSet::from_bytes(&bytes[..bytes.len() - 4]), None);
        assert_eq!(NameSet::from_bytes(b"short"), None);
    }

    #[test]
    fn hashes_that_differ_between_the_passes_are_an_error() {
        let mut calls = 0;
        let err = NameSet::default()
            .with(&mut |put| {
                calls += 1;
                (0..calls).for_each(|i| put(i << 48));
                Ok(())
            })
            .unwrap_err();
        assert!(err.to_string().contains("changed"), "{err}");
    }
}
