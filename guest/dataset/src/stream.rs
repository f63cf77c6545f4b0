//! Where every byte comes from: ChaCha with 8 rounds (ChaCha8, Bernstein's
//! specified reduced-round variant, as `rand_chacha::ChaCha8Rng` implements
//! it: 64-bit block counter, 64-bit stream) keyed from the seed, one
//! independent stream per file. A file's bytes depend only on (seed, class,
//! index), so files can be written in any order on any number of threads, and
//! changing one never shifts another.
//!
//! - key = SHA-256(`"labrun-dataset/v2/" || purpose || seed (u64 LE)
//!   [|| change_seed (u64 LE)]`), purpose `content` or `change` (for the
//!   other profiles `content/<profile>`, `change/<profile>`);
//! - stream (the 64-bit ChaCha nonce) = `tag << 56 | index`, tags below.
//!
//! Random bytes are the ChaCha byte stream as is. Low-entropy bytes are
//! i.i.d. uniform over the 16 symbols of [`LOW_ENTROPY_ALPHABET`]: output
//! byte `j` is `ALPHABET[(r[j/2] >> 4*(j%2)) & 15]` where `r` is the ChaCha
//! byte stream. That is 4 bits of entropy per byte: an entropy coder (zstd)
//! halves it, a match-only coder (lz4) finds almost nothing to match.
//!
//! Why ChaCha8 (dataset v2) and not ChaCha20 (v1): the dataset needs bytes
//! no compressor or deduplicator can predict, not a cipher's safety margin,
//! and generation is CPU-bound (issue 2 wants it near `dd`'s rate).
//! ChaCha8 is 2.5x faster than ChaCha20 here and is just as fully specified:
//! a test pins its first words against the eSTREAM reference vector, so a
//! crate update that changed the stream fails the build instead of silently
//! changing every dataset. v1 trees (ChaCha20) differ from v2 trees of the
//! same seed; the key's `v2` says so.

use labrun_evidence::DatasetProfile;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};

/// The generator behind every stream of the dataset (see the module docs).
pub type StreamRng = ChaCha8Rng;
use sha2::{Digest, Sha256};

pub const LOW_ENTROPY_ALPHABET: &[u8; 16] = b"0123456789abcdef";

/// Stream tags: what a stream is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Tag {
    Small = 1,
    LargeRandom = 2,
    LowEntropy = 3,
    /// The seeded assignment of small sizes to paths.
    Shuffle = 0x10,
    /// The choice of changed small files and large-file regions.
    ChangeChoice = 0x20,
    /// Files a profile's change adds (see `profile/`).
    Added = 4,
    /// Which blocks of the vm-image profile's disk image are written.
    BlockMap = 0x11,
}

/// Byte content of a class of file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    Random,
    LowEntropy,
}

fn key(purpose: &str, words: &[u64]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"labrun-dataset/v2/");
    h.update(purpose.as_bytes());
    for w in words {
        h.update(w.to_le_bytes());
    }
    h.finalize().into()
}

/// Keys of one dataset: the generated content, and one change of it.
#[derive(Debug, Clone, Copy)]
pub struct Keys {
    content: [u8; 32],
}

impl Keys {
    pub fn content(seed: u64) -> Keys {
        Keys {
            content: key("content", &[seed]),
        }
    }

    pub fn change(seed: u64, change_seed: u64) -> Keys {
        Keys {
            content: key("change", &[seed, change_seed]),
        }
    }

    /// [`Keys::content`] of a profile: the published profile's keys are the
    /// ones above (its bytes never change); every other profile has its own
    /// purpose (`content/tiny-files`...), so no two profiles share a byte
    /// stream.
    pub fn content_of(profile: DatasetProfile, seed: u64) -> Keys {
        match profile {
            DatasetProfile::Published => Keys::content(seed),
            p => Keys {
                content: key(&format!("content/{p}"), &[seed]),
            },
        }
    }

    /// [`Keys::change`] of a profile, as [`Keys::content_of`].
    pub fn change_of(profile: DatasetProfile, seed: u64, change_seed: u64) -> Keys {
        match profile {
            DatasetProfile::Published => Keys::change(seed, change_seed),
            p => Keys {
                content: key(&format!("change/{p}"), &[seed, change_seed]),
            },
        }
    }

    pub fn stream(&self, tag: Tag, index: u64) -> StreamRng {
        debug_assert!(index < 1 << 56);
        let mut rng = StreamRng::from_seed(self.content);
        rng.set_stream(((tag as u64) << 56) | (index & ((1 << 56) - 1)));
        rng
    }
}

/// Fills `out` with the next bytes of a file's content. Every call but a
/// file's last must pass a length that is a multiple of 8, so that the
/// content is the same however it is cut into chunks (ChaCha hands out
/// 4-byte words; low-entropy uses half a random byte per output byte).
pub fn fill(rng: &mut StreamRng, content: Content, out: &mut [u8]) {
    match content {
        Content::Random => rng.fill_bytes(out),
        Content::LowEntropy => fill_low_entropy(rng, out),
    }
}

/// Random bytes drawn per block when expanding to low-entropy symbols: a
/// multiple of 4, so block cuts never change the stream.
const LOW_ENTROPY_BLOCK: usize = 4096;

fn fill_low_entropy(rng: &mut StreamRng, out: &mut [u8]) {
    // Each random byte becomes two symbols: low nibble first, then high.
    let mut random = [0u8; LOW_ENTROPY_BLOCK];
    for block in out.chunks_mut(2 * LOW_ENTROPY_BLOCK) {
        let r = &mut random[..block.len().div_ceil(2)];
        rng.fill_bytes(r);
        let mut pairs = block.chunks_exact_mut(2);
        for (pair, &b) in pairs.by_ref().zip(r.iter()) {
            pair[0] = symbol(b & 15);
            pair[1] = symbol(b >> 4);
        }
        if let ([last], Some(&b)) = (pairs.into_remainder(), r.last()) {
            *last = symbol(b & 15);
        }
    }
}

/// `LOW_ENTROPY_ALPHABET[n]` for `n < 16`, as arithmetic rather than a table
/// look-up so the expansion loop vectorizes (4x faster; a test checks it
/// against the table).
#[inline(always)]
fn symbol(n: u8) -> u8 {
    n + b'0' + if n > 9 { b'a' - b'0' - 10 } else { 0 }
}

/// A uniform integer in `0..n` (n > 0) by rejection, defined here rather than
/// taken from `rand` so it cannot change with a crate version.
pub fn below(rng: &mut StreamRng, n: u64) -> u64 {
    debug_assert!(n > 0);
    // Largest multiple of n that fits: values at or above it are redrawn.
    let zone = u64::MAX - (u64::MAX % n + 1) % n;
    loop {
        let v = rng.next_u64();
        if v <= zone || zone == u64::MAX {
            return v % n;
        }
    }
}

/// A seeded permutation of `0..n` (Fisher-Yates, drawing with [`below`]).
pub fn permutation(rng: &mut StreamRng, n: u64) -> Vec<u64> {
    let mut p: Vec<u64> = (0..n).collect();
    for i in (1..n).rev() {
        let j = below(rng, i + 1);
        p.swap(i as usize, j as usize);
    }
    p
}

/// [`permutation`] in half the memory (4 bytes an element), the same
/// values drawn in the same order: for the millions of a file-count
/// profile, where 8 bytes a file was most of the agent's memory.
pub fn permutation_u32(rng: &mut StreamRng, n: u32) -> Vec<u32> {
    let mut p: Vec<u32> = (0..n).collect();
    for i in (1..n as u64).rev() {
        let j = below(rng, i + 1);
        p.swap(i as usize, j as usize);
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chacha8_matches_its_specification() {
        // The all-zero key and nonce: the first words of the ChaCha8
        // keystream, eSTREAM's reference vector for 8 rounds and a 256-bit
        // key (also rand_chacha's own test). If a crate update changed the
        // stream, every published dataset digest would change: fail here.
        let mut rng = StreamRng::from_seed([0u8; 32]);
        let mut first = [0u32; 4];
        for w in first.iter_mut() {
            *w = rng.next_u32();
        }
        assert_eq!(first, [0x2fef003e, 0xd6405f89, 0xe8b85b7f, 0xa1a5091f]);
    }

    #[test]
    fn symbols_are_the_alphabet() {
        for n in 0..16u8 {
            assert_eq!(symbol(n), LOW_ENTROPY_ALPHABET[n as usize], "{n}");
        }
    }

    #[test]
    fn content_does_not_depend_on_chunking() {
        let keys = Keys::content(7);
        for content in [Content::Random, Content::LowEntropy] {
            let mut whole = vec![0u8; 1001];
            fill(&mut keys.stream(Tag::Small, 3), content, &mut whole);
            let mut pieces = vec![0u8; 1001];
            let mut rng = keys.stream(Tag::Small, 3);
            let (a, rest) = pieces.split_at_mut(8);
            let (b, c) = rest.split_at_mut(512);
            fill(&mut rng, content, a);
            fill(&mut rng, content, b);
            fill(&mut rng, content, c);
            assert_eq!(whole, pieces, "{content:?}");
        }
    }

    #[test]
    fn streams_are_independent() {
        let keys = Keys::content(1);
        let mut a = [0u8; 64];
        let mut b = [0u8; 64];
        keys.stream(Tag::Small, 0).fill_bytes(&mut a);
        keys.stream(Tag::Small, 1).fill_bytes(&mut b);
        assert_ne!(a, b);
        keys.stream(Tag::LargeRandom, 0).fill_bytes(&mut b);
        assert_ne!(a, b);
        Keys::content(2).stream(Tag::Small, 0).fill_bytes(&mut b);
        assert_ne!(a, b);
    }

    #[test]
    fn low_entropy_uses_sixteen_symbols_evenly() {
        let mut out = vec![0u8; 1 << 16];
        fill(
            &mut Keys::content(1).stream(Tag::LowEntropy, 0),
            Content::LowEntropy,
            &mut out,
        );
        let mut counts = [0u32; 256];
        for &b in &out {
            counts[b as usize] += 1;
        }
        for (sym, &c) in counts.iter().enumerate() {
            if LOW_ENTROPY_ALPHABET.contains(&(sym as u8)) {
                // expected 4096 each; 6 sigma is about 370
                assert!((3700..4500).contains(&c), "symbol {sym}: {c}");
            } else {
                assert_eq!(c, 0);
            }
        }
    }

    #[test]
    fn the_u32_permutation_is_the_same_permutation() {
        let key = Keys::content(4);
        let wide = permutation(&mut key.stream(Tag::Shuffle, 0), 1000);
        let narrow = permutation_u32(&mut key.stream(Tag::Shuffle, 0), 1000);
        assert!(wide.iter().zip(&narrow).all(|(&w, &n)| w == u64::from(n)));
        assert_eq!(narrow.len(), 1000);
    }

    #[test]
    fn below_and_permutation() {
        let mut rng = Keys::content(1).stream(Tag::Shuffle, 0);
        assert!((0..1000).all(|_| below(&mut rng, 3) < 3));
        assert_eq!(below(&mut rng, 1), 0);
        let mut p = permutation(&mut rng, 100);
        assert_ne!(p, (0..100).collect::<Vec<_>>());
        p.sort();
        assert_eq!(p, (0..100).collect::<Vec<_>>());
    }
}
