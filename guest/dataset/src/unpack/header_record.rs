//! The one bound on an archive's header records: a tar long name or link
//! (GNU `L`, `K`), a PAX header (`x`, `g`), an ar name table (`//`) or BSD
//! member name (`#1/N`). Their readers take such a record whole into
//! memory, so a record's declared size is checked against this bound
//! before any of it is read: a 91 KB archive that declares 2.5 GiB costs
//! nothing.

use std::fmt;
use std::io;

/// The most a header record may declare: 1 MiB, the bound bsdtar
/// (libarchive) sets for the same records. A real one is far smaller: a
/// long name is at most PATH_MAX (4 KiB), a PAX header holds a few times,
/// ids and at most a few extended attributes.
pub const MAX_HEADER_RECORD: u64 = 1 << 20;

/// A header record that declares more than [`MAX_HEADER_RECORD`]: the
/// cause inside the `io::Error` (`InvalidData`) its reader returns, so a
/// caller can tell it with `get_ref()` and a downcast.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderRecordTooLarge {
    /// What the record is, e.g. "tar GNU long-name record".
    pub record: &'static str,
    /// Where its header starts, in bytes from the start of `within`.
    pub at: u64,
    /// The stream the offset counts in, e.g. "tar stream".
    pub within: &'static str,
    pub declared: u64,
}

impl fmt::Display for HeaderRecordTooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the {} at byte {} of the {} declares {} bytes, more than the {} MiB a header \
             record may hold (a real one is a few KiB): refused before reading it; the archive \
             is damaged or made to exhaust memory, so fetch it again or use another archive",
            self.record,
            self.at,
            self.within,
            self.declared,
            MAX_HEADER_RECORD >> 20
        )
    }
}

impl std::error::Error for HeaderRecordTooLarge {}

impl HeaderRecordTooLarge {
    /// `Ok` when `declared` is within the bound, else the error to return.
    pub(super) fn check(
        record: &'static str,
        at: u64,
        within: &'static str,
        declared: u64,
    ) -> io::Result<()> {
        if declared <= MAX_HEADER_RECORD {
            return Ok(());
        }
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            HeaderRecordTooLarge {
                record,
                at,
                within,
                declared,
            },
        ))
    }

    /// The record that `e` refused, if it is one.
    pub fn of(e: &io::Error) -> Option<&HeaderRecordTooLarge> {
        e.get_ref()?.downcast_ref()
    }
}
