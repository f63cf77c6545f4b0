//! The text of one source line, from its 64-bit seed.
//!
//! SplitMix64 (Steele, Lea, Flood 2014; the constants of Java's
//! `SplittableRandom`): `x += 0x9e3779b97f4a7c15; z = x;
//! z = (z ^ z>>30) * 0xbf58476d1ce4e5b9; z = (z ^ z>>27) * 0x94d049bb133111eb;
//! z ^ z>>31`. Fully specified, so a seed renders the same line everywhere;
//! cheap, because a file has hundreds of lines and a ChaCha key set-up per
//! line would dominate.
//!
//! Lines are C-like: indentation, a statement shape, identifiers from a
//! fixed vocabulary. That compresses like real code (zlib about 3-5x),
//! which matters: the study compares tools that compress differently.

pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    pub(crate) fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0); the modulo bias is irrelevant here.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

const WORDS: &[&str] = &[
    "buf", "len", "ctx", "dev", "node", "list", "page", "inode", "entry", "count", "flags",
    "state", "lock", "queue", "skb", "req", "data", "size", "offset", "head", "tail", "next",
    "prev", "item", "key", "value", "map", "table", "index", "ret", "err", "timer", "irq", "task",
    "work", "block", "sector", "chunk", "cache", "hash", "cpu", "mask", "mode", "addr", "port",
    "chan", "ring", "desc", "stat", "info",
];
const PREFIXES: &[&str] = &[
    "", "", "", "get_", "set_", "init_", "free_", "alloc_", "update_", "check_", "do_", "__",
];
const TYPES: &[&str] = &[
    "int",
    "unsigned int",
    "long",
    "u32",
    "u64",
    "size_t",
    "bool",
    "void *",
    "struct device *",
    "const char *",
];
const OPS: &[&str] = &["==", "!=", "<", ">", "<=", ">=", "&"];
const COMMENTS: &[&str] = &[
    "the caller holds the lock",
    "may sleep",
    "see the comment above",
    "fall through",
    "nothing to do here",
    "keep this in sync with the header",
    "XXX: revisit once the new interface lands",
    "called with interrupts disabled",
];

fn pick<'a>(r: &mut SplitMix64, from: &[&'a str]) -> &'a str {
    from[r.below(from.len() as u64) as usize]
}

fn ident(r: &mut SplitMix64, out: &mut Vec<u8>) {
    out.extend_from_slice(pick(r, PREFIXES).as_bytes());
    out.extend_from_slice(pick(r, WORDS).as_bytes());
    if r.below(3) == 0 {
        out.push(b'_');
        out.extend_from_slice(pick(r, WORDS).as_bytes());
    }
}

/// Appends the line of `seed` (without its newline) to `out`.
pub(crate) fn render_line(seed: u64, out: &mut Vec<u8>) {
    let mut r = SplitMix64::new(seed);
    let shape = r.below(16);
    if shape == 0 {
        return; // a blank line
    }
    for _ in 0..r.below(4) {
        out.push(b'\t');
    }
    match shape {
        1 => {
            out.extend_from_slice(b"/* ");
            out.extend_from_slice(pick(&mut r, COMMENTS).as_bytes());
            out.extend_from_slice(b" */");
        }
        2 => out.push(b'}'),
        3 => {
            out.extend_from_slice(b"return ");
            ident(&mut r, out);
            out.push(b';');
        }
        4 | 5 => {
            out.extend_from_slice(b"if (");
            ident(&mut r, out);
            out.push(b' ');
            out.extend_from_slice(pick(&mut r, OPS).as_bytes());
            out.push(b' ');
            out.extend_from_slice(r.below(4096).to_string().as_bytes());
            out.extend_from_slice(b") {");
        }
        6 => {
            out.extend_from_slice(b"static ");
            out.extend_from_slice(pick(&mut r, TYPES).as_bytes());
            out.push(b' ');
            ident(&mut r, out);
            out.push(b'(');
            out.extend_from_slice(pick(&mut r, TYPES).as_bytes());
            out.push(b' ');
            ident(&mut r, out);
            out.extend_from_slice(b");");
        }
        7 => {
            out.extend_from_slice(b"#include <");
            out.extend_from_slice(pick(&mut r, WORDS).as_bytes());
            out.push(b'/');
            out.extend_from_slice(pick(&mut r, WORDS).as_bytes());
            out.extend_from_slice(b".h>");
        }
        8 | 9 => {
            out.extend_from_slice(pick(&mut r, TYPES).as_bytes());
            out.push(b' ');
            ident(&mut r, out);
            out.extend_from_slice(b" = ");
            ident(&mut r, out);
            out.extend_from_slice(b";");
        }
        _ => {
            ident(&mut r, out);
            out.extend_from_slice(b" = ");
            ident(&mut r, out);
            out.push(b'(');
            ident(&mut r, out);
            out.extend_from_slice(b", ");
            out.extend_from_slice(format!("0x{:x}", r.below(65536)).as_bytes());
            out.extend_from_slice(b");");
        }
    }
}

/// Average rendered line length in bytes (with its newline), measured over
/// many seeds; used to turn a file size into a line count.
pub(crate) const MEAN_LINE_BYTES: u64 = 31;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_matches_the_reference_sequence() {
        // First outputs for seed 0, as the reference implementation prints.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn the_mean_line_length_constant_is_what_lines_measure() {
        let mut out = Vec::new();
        let n = 20_000u64;
        for seed in 0..n {
            render_line(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15), &mut out);
            out.push(b'\n');
        }
        let mean = out.len() as f64 / n as f64;
        assert!(
            (mean - MEAN_LINE_BYTES as f64).abs() < 3.0,
            "mean line {mean}"
        );
    }
}
