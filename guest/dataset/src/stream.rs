//! Where every byte comes from: ChaCha20 (RFC 8439 block function, as
//! `rand_chacha::ChaCha20Rng` documents it) keyed from the seed, one
//! independent stream per file. A file's bytes depend only on (seed, class,
//! index), so files can be written in any order on any number of threads, and
//! changing one never shifts another.
//!
//! - key = SHA-256(`"labrun-dataset/v1/" || purpose || seed (u64 LE)
//!   [|| change_seed (u64 LE)]`), purpose `content` or `change`;
//! - stream (the 64-bit ChaCha nonce) = `tag << 56 | index`, tags below.
//!
//! Random bytes are the ChaCha byte stream as is. Low-entropy bytes are
//! i.i.d. uniform over the 16 symbols of [`LOW_ENTROPY_ALPHABET`]: output
//! byte `j` is `ALPHABET[(r[j/2] >> 4*(j%2)) & 15]` where `r` is the ChaCha
//! byte stream. That is 4 bits of entropy per byte: an entropy coder (zstd)
//! halves it, a match-only coder (lz4) finds almost nothing to match.

use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};
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
}

/// Byte content of a class of file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    Random,
    LowEntropy,
}

fn key(purpose: &str, words: &[u64]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"labrun-dataset/v1/");
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

    pub fn stream(&self, tag: Tag, index: u64) -> ChaCha20Rng {
        debug_assert!(index < 1 << 56);
        let mut rng = ChaCha20Rng::from_seed(self.content);
        rng.set_stream(((tag as u64) << 56) | (index & ((1 << 56) - 1)));
        rng
    }
}

/// Fills `out` with the next bytes of a file's content. Every call but a
/// file's last must pass a length that is a multiple of 8, so that the
/// content is the same however it is cut into chunks (ChaCha hands out
/// 4-byte words; low-entropy uses half a random byte per output byte).
pub fn fill(rng: &mut ChaCha20Rng, content: Content, out: &mut [u8]) {
    match content {
        Content::Random => rng.fill_bytes(out),
        Content::LowEntropy => fill_low_entropy(rng, out),
    }
}

/// Random bytes drawn per block when expanding to low-entropy symbols: a
/// multiple of 4, so block cuts never change the stream.
const LOW_ENTROPY_BLOCK: usize = 4096;

fn fill_low_entropy(rng: &mut ChaCha20Rng, out: &mut [u8]) {
    // Each random byte becomes two symbols: low nibble first, then high.
    let mut random = [0u8; LOW_ENTROPY_BLOCK];
    for block in out.chunks_mut(2 * LOW_ENTROPY_BLOCK) {
        let r = &mut random[..block.len().div_ceil(2)];
        rng.fill_bytes(r);
        let mut pairs = block.chunks_exact_mut(2);
        for (pair, &b) in pairs.by_ref().zip(r.iter()) {
            pair[0] = LOW_ENTROPY_ALPHABET[(b & 15) as usize];
            pair[1] = LOW_ENTROPY_ALPHABET[(b >> 4) as usize];
        }
        if let ([last], Some(&b)) = (pairs.into_remainder(), r.last()) {
            *last = LOW_ENTROPY_ALPHABET[(b & 15) as usize];
        }
    }
}

/// A uniform integer in `0..n` (n > 0) by rejection, defined here rather than
/// taken from `rand` so it cannot change with a crate version.
pub fn below(rng: &mut ChaCha20Rng, n: u64) -> u64 {
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
pub fn permutation(rng: &mut ChaCha20Rng, n: u64) -> Vec<u64> {
    let mut p: Vec<u64> = (0..n).collect();
    for i in (1..n).rev() {
        let j = below(rng, i + 1);
        p.swap(i as usize, j as usize);
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chacha20_matches_its_specification() {
        // The all-zero key and nonce: the first words of the ChaCha20
        // keystream, test vector 1 of draft-nir-cfrg-chacha20-poly1305-04
        // (also in RFC 7539 appendix A.1). If a crate update changed the
        // stream, every published dataset digest would change: fail here.
        let mut rng = ChaCha20Rng::from_seed([0u8; 32]);
        let mut first = [0u32; 4];
        for w in first.iter_mut() {
            *w = rng.next_u32();
        }
        assert_eq!(first, [0xade0b876, 0x903df1a0, 0xe56a5d40, 0x28bd8653]);
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
