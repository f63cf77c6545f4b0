//! A guard between a tar stream and the `tar` crate: it follows the tar
//! framing as the bytes pass and refuses a header record (GNU long name or
//! link, PAX header) that declares more than
//! [`MAX_HEADER_RECORD`](super::MAX_HEADER_RECORD), when its
//! header is read and before the crate reads the record whole into memory
//! (tar 0.4 does, with `read_all`). Every tar reader of labrun wraps its
//! stream in [`TarRecords`]: the dataset's unpack, the artifact cache, a
//! run pack and the evidence pulled from the guest.
//!
//! The framing is the crate's own (`Archive::entries`, not raw): 512-byte
//! headers, each entry's data rounded up to 512; the `size` of a local PAX
//! header replaces the size of the next header that is not itself a
//! record; an old-GNU sparse header whose `isextended` is set is followed
//! by extension blocks until one's flag is clear. The headers are read
//! with the crate's types, so both count sizes alike. A read never runs
//! past the next header, so a header is checked before any byte after it
//! is handed on.

use super::header_record::HeaderRecordTooLarge;
use std::io::{self, Read};
use tar::EntryType;

const BLOCK: usize = 512;
/// Where an old-GNU sparse extension block keeps its `isextended` flag
/// (after 21 sparse entries of 24 bytes).
const EXTENSION_FLAG_AT: usize = 504;

/// The tar stream `inner`, passed on unchanged unless a header record is
/// too large; then the read that completes its header fails with
/// [`HeaderRecordTooLarge`] (`InvalidData`).
pub struct TarRecords<R> {
    inner: R,
    /// Bytes passed on so far.
    at: u64,
    next: Next,
    /// The header or extension block being read, and how much of it.
    block: [u8; BLOCK],
    filled: usize,
    /// The data of a local PAX header while it passes, to learn its
    /// `size` key, and the header's size (within the bound).
    pax: Option<(Vec<u8>, usize)>,
    /// The `size` a local PAX header gave the next entry.
    pax_size: Option<u64>,
}

/// What the next bytes are.
#[derive(Debug, Clone, Copy)]
enum Next {
    Header,
    /// An old-GNU sparse extension block, then `data` bytes.
    SparseExtension {
        data: u64,
    },
    /// `left` bytes of an entry's data and its padding.
    Data {
        left: u64,
    },
    /// Past the end-of-archive marker or a header the crate refuses: it
    /// reads no further entries, so what follows is passed on unwatched.
    Unwatched,
}

impl<R: Read> TarRecords<R> {
    pub fn new(inner: R) -> TarRecords<R> {
        TarRecords {
            inner,
            at: 0,
            next: Next::Header,
            block: [0; BLOCK],
            filled: 0,
            pax: None,
            pax_size: None,
        }
    }

    /// The stream, for what follows the archive (its padding, a trailer).
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// Reads into the block until it is whole; a whole block is checked.
    fn read_block(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = buf.len().min(BLOCK - self.filled);
        let n = self.inner.read(&mut buf[..want])?;
        self.block[self.filled..self.filled + n].copy_from_slice(&buf[..n]);
        self.filled += n;
        self.at += n as u64;
        if self.filled == BLOCK {
            self.filled = 0;
            self.next = match self.next {
                Next::SparseExtension { data } => {
                    if self.block[EXTENSION_FLAG_AT] == 1 {
                        Next::SparseExtension { data }
                    } else {
                        data_of(data)
                    }
                }
                _ => self.header()?,
            };
        }
        Ok(n)
    }

    fn read_data(&mut self, buf: &mut [u8], left: u64) -> io::Result<usize> {
        let want = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
        let n = self.inner.read(&mut buf[..want])?;
        self.at += n as u64;
        if let Some((pax, size)) = &mut self.pax {
            // The record's bytes, not its padding.
            let keep = n.min(*size - pax.len());
            pax.extend_from_slice(&buf[..keep]);
        }
        let left = left - n as u64;
        self.next = data_of(left);
        if left == 0
            && let Some((pax, _)) = self.pax.take()
        {
            self.pax_size = pax_size(&pax);
        }
        Ok(n)
    }

    /// What follows the header now in the block, as the crate reads it.
    fn header(&mut self) -> io::Result<Next> {
        let at = self.at - BLOCK as u64;
        // The crate stops at the first zero block (no labrun reader sets
        // `ignore_zeros`): the rest is the archive's padding.
        if self.block.iter().all(|&b| b == 0) {
            return Ok(Next::Unwatched);
        }
        let header = tar::Header::from_byte_slice(&self.block);
        let kind = header.entry_type();
        // The crate refuses a size it cannot read: no entry follows.
        let Ok(declared) = header.entry_size() else {
            return Ok(Next::Unwatched);
        };
        if let Some(record) = record_name(kind) {
            HeaderRecordTooLarge::check(record, at, "tar stream", declared)?;
        }
        let known = header.as_gnu().is_some() || header.as_ustar().is_some();
        // The records the crate reads whole and applies to the next header;
        // any other header is an entry, which takes the PAX size and ends
        // the PAX header's reach.
        let read_whole = known
            && (kind.is_gnu_longname() || kind.is_gnu_longlink() || kind.is_pax_local_extensions());
        let size = match self.pax_size {
            Some(size) if record_name(kind).is_none() => size,
            _ => declared,
        };
        if !read_whole {
            self.pax_size = None;
        }
        if known && kind.is_pax_local_extensions() {
            // Within the bound, checked above; an empty one has no size.
            let size = size as usize;
            self.pax = (size > 0).then(|| (Vec::with_capacity(size), size));
            self.pax_size = None;
        }
        // The crate refuses a size that overflows when rounded up.
        let Some(padded) = size
            .checked_add(BLOCK as u64 - 1)
            .map(|s| s & !(BLOCK as u64 - 1))
        else {
            return Ok(Next::Unwatched);
        };
        let extended = kind.is_gnu_sparse() && header.as_gnu().is_some_and(|g| g.is_extended());
        Ok(if extended {
            Next::SparseExtension { data: padded }
        } else {
            data_of(padded)
        })
    }
}

impl<R: Read> Read for TarRecords<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        match self.next {
            Next::Unwatched => self.inner.read(buf),
            Next::Header | Next::SparseExtension { .. } => self.read_block(buf),
            Next::Data { left } => self.read_data(buf, left),
        }
    }
}

fn data_of(left: u64) -> Next {
    if left == 0 {
        Next::Header
    } else {
        Next::Data { left }
    }
}

/// The header records the bound applies to, as a message names them.
fn record_name(kind: EntryType) -> Option<&'static str> {
    if kind.is_gnu_longname() {
        Some("tar GNU long-name record")
    } else if kind.is_gnu_longlink() {
        Some("tar GNU long-link record")
    } else if kind.is_pax_local_extensions() {
        Some("tar PAX extended header")
    } else if kind.is_pax_global_extensions() {
        Some("tar PAX global header")
    } else {
        None
    }
}

/// The `size` key of a PAX header, read as the crate reads it: the first
/// `size` key, and none if a record before it or its value is malformed.
fn pax_size(pax: &[u8]) -> Option<u64> {
    for extension in tar::PaxExtensions::new(pax) {
        let extension = extension.ok()?;
        if extension.key() != Ok("size") {
            continue;
        }
        return extension.value().ok()?.parse().ok();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extension_flag_is_where_the_crate_keeps_it() {
        let mut ext = tar::GnuExtSparseHeader::new();
        ext.set_is_extended(true);
        assert_eq!(ext.as_bytes()[EXTENSION_FLAG_AT], 1);
        assert_eq!(ext.as_bytes().len(), BLOCK);
    }
}
