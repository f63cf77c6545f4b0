//! The dataset's composition as exact integer arithmetic, so the totals the
//! host prints before a run are the bytes the agent writes.
//!
//! At scale 1 (SPEC section 3, the published comparison):
//!
//! | class | files | size of each | total |
//! |---|---|---|---|
//! | small, random bytes | 40,000 | log-uniform 1 KiB..128 KiB | 1,072,091,974 B |
//! | large, random bytes | 4 | 355,000,000 B | 1,420,000,000 B |
//! | large, low-entropy (16 symbols) | 5 | 536,000,000 B | 2,680,000,000 B |
//! | duplicates: every 5th small size rank, and large random 0 and 1 | 8,000 + 2 | copies | 924,366,376 B |
//! | all | 48,011 | | 6,096,458,350 B (6.10 GB - 0.06%) |
//!
//! Small-file sizes are not drawn at random but *stratified*: the file of
//! size rank `r` (0-based, of `n`) is `floor(1024 * 2^(7 * (2r+1) / (2n)))`
//! bytes, the midpoint quantile of a log-uniform law on [1 KiB, 128 KiB).
//! So the size multiset, and every total, depends only on `n`; the seed
//! decides which path gets which size (the small total above, SPEC's "about
//! 1.10 GB", was checked against the formula in 50-digit decimals). The power of two is computed from
//! the exact fraction `7(2r+1)/(2n)` in integers and `sqrt`/`*` in IEEE
//! doubles (both correctly rounded on every machine), never `powf`, whose
//! last bit may differ between C libraries.
//!
//! `--scale s` multiplies the number of small files (and with it the
//! duplicated ones) and the size of every large file, each rounded to the
//! nearest integer and at least 1. What a class *is* does not scale: small
//! files keep the 1 KiB..128 KiB law, and there are always 4 + 5 large files
//! (the 5% change names "each of the 9 large files"). Totals are therefore
//! proportional to `s` up to rounding.

/// The published composition; everything below scales from these.
pub const SMALL_FILES: u64 = 40_000;
pub const SMALL_MIN_BYTES: u64 = 1024;
/// Small files span `SMALL_MIN_BYTES * 2^[0, SMALL_OCTAVES)`: 1 KiB..128 KiB.
pub const SMALL_OCTAVES: u64 = 7;
pub const LARGE_RANDOM_FILES: u64 = 4;
pub const LARGE_RANDOM_BYTES: u64 = 355_000_000;
pub const LOW_ENTROPY_FILES: u64 = 5;
pub const LOW_ENTROPY_BYTES: u64 = 536_000_000;
/// Small files whose size rank is a multiple of this are duplicated: a fifth
/// of them, spread evenly over the size range.
pub const DUPLICATE_SMALL_EVERY: u64 = 5;
/// Large random files `0..DUPLICATE_LARGE_RANDOM` are duplicated. Low-entropy
/// files never are, so the low-entropy share stays the published 2.68 GB.
pub const DUPLICATE_LARGE_RANDOM: u64 = 2;
/// The 5% change: small files rewritten (of `SMALL_FILES`)...
pub const CHANGE_SMALL_FILES: u64 = 2_000;
/// ...and the share of each large file overwritten in one contiguous region.
pub const CHANGE_LARGE_PERCENT: u64 = 5;

/// Scales outside this range are refused: below it, rounding dominates;
/// above it, no VM disk the lab would use holds the tree.
pub const MIN_SCALE: f64 = 0.0001;
pub const MAX_SCALE: f64 = 100.0;

/// The integer quantities of one dataset, after scaling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scaled {
    pub small_files: u64,
    pub large_random_bytes: u64,
    pub low_entropy_bytes: u64,
    pub change_small_files: u64,
}

/// `round(x * scale)`, at least 1 (every class stays present).
pub(crate) fn scale_count(x: u64, scale: f64) -> u64 {
    let v = (x as f64 * scale).round();
    if v < 1.0 { 1 } else { v as u64 }
}

pub fn scaled(scale: f64) -> Scaled {
    let small_files = scale_count(SMALL_FILES, scale);
    Scaled {
        small_files,
        large_random_bytes: scale_count(LARGE_RANDOM_BYTES, scale),
        low_entropy_bytes: scale_count(LOW_ENTROPY_BYTES, scale),
        change_small_files: scale_count(CHANGE_SMALL_FILES, scale).min(small_files),
    }
}

/// Length of the region overwritten in a large file of `size` bytes: 5%,
/// rounded, at least 1.
pub fn change_region_len(size: u64) -> u64 {
    ((size * CHANGE_LARGE_PERCENT + 50) / 100).clamp(1, size)
}

/// Bits of the exponent's fraction resolved exactly; 2^-40 of an octave is
/// far below one byte at 128 KiB.
const FRACTION_BITS: usize = 40;

/// `SQRT_CHAIN[j] = 2^(2^-(j+1))`, each a correctly rounded square root of
/// the previous (so identical on every IEEE 754 machine).
fn sqrt_chain() -> [f64; FRACTION_BITS] {
    let mut chain = [0.0; FRACTION_BITS];
    let mut v = 2.0f64;
    for c in chain.iter_mut() {
        v = v.sqrt();
        *c = v;
    }
    chain
}

/// Size in bytes of the small file of size rank `rank` among `n`.
pub fn small_size(rank: u64, n: u64) -> u64 {
    small_size_with(&sqrt_chain(), rank, n)
}

fn small_size_with(chain: &[f64; FRACTION_BITS], rank: u64, n: u64) -> u64 {
    // exponent = SMALL_OCTAVES * (2 rank + 1) / (2 n), in [0, SMALL_OCTAVES)
    let num = SMALL_OCTAVES * (2 * rank + 1);
    let den = 2 * n;
    let whole = num / den;
    let mut rem = num % den;
    let mut factor = 1.0f64;
    for c in chain {
        rem *= 2;
        if rem >= den {
            rem -= den;
            factor *= c;
        }
    }
    ((SMALL_MIN_BYTES << whole) as f64 * factor).floor() as u64
}

/// All small sizes by rank, ascending.
pub fn small_sizes(n: u64) -> Vec<u64> {
    let chain = sqrt_chain();
    (0..n).map(|r| small_size_with(&chain, r, n)).collect()
}

// `is_multiple_of` is newer than the workspace's rust-version (1.85).
#[allow(clippy::manual_is_multiple_of)]
pub fn is_duplicated_small_rank(rank: u64) -> bool {
    rank % DUPLICATE_SMALL_EVERY == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_sizes_stay_in_the_class_and_ascend() {
        for n in [1, 2, 7, 40, 1000, 40_000] {
            let sizes = small_sizes(n);
            assert_eq!(sizes.len() as u64, n);
            assert!(sizes.iter().all(|&s| (1024..131_072).contains(&s)), "n={n}");
            assert!(sizes.windows(2).all(|w| w[0] <= w[1]), "n={n}");
        }
        // The median of a log-uniform law on [1, 128] KiB is 2^3.5 KiB.
        let sizes = small_sizes(40_000);
        assert_eq!(sizes[0], 1024);
        assert_eq!(sizes[39_999], 131_064);
        let median = (1024.0 * 2f64.powf(3.5)) as u64;
        assert!(sizes[20_000].abs_diff(median) <= 4, "{}", sizes[20_000]);
    }

    #[test]
    fn small_sizes_match_the_formula() {
        // The exact fraction + sqrt chain agrees with powf to a byte.
        let n = 40_000;
        for r in (0..n).step_by(997) {
            let e = 7.0 * (2 * r + 1) as f64 / (2 * n) as f64;
            let approx = 1024.0 * 2f64.powf(e);
            assert!((small_size(r, n) as f64 - approx).abs() <= 1.0, "r={r}");
        }
    }

    #[test]
    fn scaling_rounds_and_keeps_every_class() {
        let s = scaled(1.0);
        assert_eq!(s.small_files, 40_000);
        assert_eq!(s.change_small_files, 2_000);
        let s = scaled(0.001);
        assert_eq!(s.small_files, 40);
        assert_eq!(s.change_small_files, 2);
        assert_eq!(s.large_random_bytes, 355_000);
        let s = scaled(0.0001);
        assert_eq!(s.small_files, 4);
        assert_eq!(s.change_small_files, 1);
        assert_eq!(change_region_len(355_000_000), 17_750_000);
        assert_eq!(change_region_len(10), 1);
        assert_eq!(change_region_len(1), 1);
    }
}
