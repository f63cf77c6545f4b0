//! SHA-256 as labrun writes it everywhere (pins, caches, binary checks,
//! manifests): 64 lowercase hex digits. The one helper of host and agent.

use sha2::{Digest, Sha256};
use std::io::{self, Read, Write};
use std::path::Path;

/// True for exactly 64 lowercase hex digits, the only form a pin may take
/// (so two spellings of one digest never compare unequal).
pub fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The digest of bytes in memory.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Lowercase hex of a finished hash.
pub fn to_hex(hasher: Sha256) -> String {
    hex::encode(hasher.finalize())
}

/// Hashes everything read from `reader`; returns the digest and byte count.
pub fn sha256_reader(mut reader: impl Read) -> io::Result<(String, u64)> {
    let mut writer = HashingWriter::new(io::sink());
    let n = io::copy(&mut reader, &mut writer)?;
    Ok((writer.finish().1, n))
}

/// Hashes a file (blocking: call it from `spawn_blocking` in async code).
pub fn sha256_file(path: &Path) -> io::Result<String> {
    let file = std::fs::File::open(path)?;
    Ok(sha256_reader(io::BufReader::with_capacity(1 << 20, file))?.0)
}

/// A writer that hashes what passes through it, so a file is written and
/// hashed in one pass.
pub struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
}

impl<W: Write> HashingWriter<W> {
    pub fn new(inner: W) -> Self {
        HashingWriter {
            inner,
            hasher: Sha256::new(),
        }
    }

    pub fn finish(self) -> (W, String) {
        (self.inner, to_hex(self.hasher))
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_digest_of_abc() {
        let (d, n) = sha256_reader(&b"abc"[..]).unwrap();
        assert_eq!(n, 3);
        assert_eq!(
            d,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(is_sha256_hex(&d));
        assert!(!is_sha256_hex(&d.to_uppercase()));
        assert!(!is_sha256_hex(&d[1..]));
    }
}
