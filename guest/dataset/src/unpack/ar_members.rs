//! The members of an ar archive (a Debian package), streamed, with the
//! names read within [`MAX_HEADER_RECORD`]: GNU ar's name table (`//`) and
//! a BSD long name (`#1/N`) are read whole, so their declared size is
//! checked first. (The `ar` crate allocated what they declared: a 196-byte
//! .deb declaring 9,999,999,999 bytes aborted the process.) Used by the
//! dataset's .deb unpack and the artifact cache's .deb members.
//!
//! The format: `!<arch>\n`, then per member a 60-byte header (name 16,
//! mtime 12, uid 6, gid 6, mode 8, size 10 in decimal, then "`\n") and its
//! data, padded to an even length.

use super::header_record::{HeaderRecordTooLarge, MAX_HEADER_RECORD};
use std::io::{self, Read};

const MAGIC: &[u8; 8] = b"!<arch>\n";
const HEADER: usize = 60;
const WITHIN: &str = "ar archive";

/// An ar archive read member by member, front to back.
pub struct ArMembers<R> {
    inner: R,
    started: bool,
    /// Bytes passed so far, for messages.
    at: u64,
    /// What is left of the current member's data, and its padding byte.
    left: u64,
    pad: bool,
    /// GNU ar's name table, once read.
    names: Vec<u8>,
}

/// One member: its name, and its data as a `Read`.
pub struct ArMember<'a, R> {
    name: String,
    archive: &'a mut ArMembers<R>,
}

impl<R: Read> ArMembers<R> {
    pub fn new(inner: R) -> ArMembers<R> {
        ArMembers {
            inner,
            started: false,
            at: 0,
            left: 0,
            pad: false,
            names: Vec::new(),
        }
    }

    /// The next member (what is left of the one before is skipped), or
    /// `None` at the archive's end.
    pub fn next_member(&mut self) -> io::Result<Option<ArMember<'_, R>>> {
        if !self.started {
            let mut magic = [0; MAGIC.len()];
            self.fill(&mut magic, "its signature")?;
            if &magic != MAGIC {
                return Err(invalid("it does not start with `!<arch>`".into()));
            }
            self.started = true;
        }
        loop {
            self.skip_rest()?;
            let mut header = [0; HEADER];
            let first = self.inner.read(&mut header)?;
            if first == 0 {
                return Ok(None);
            }
            self.at += first as u64;
            let at = self.at - first as u64;
            self.fill(&mut header[first..], "a member header")?;
            if &header[58..] != b"`\n" {
                return Err(invalid(format!(
                    "the member header at byte {at} does not end with \"`\\n\""
                )));
            }
            let size = decimal(&header[48..58])
                .ok_or_else(|| invalid(format!("the member header at byte {at} has no size")))?;
            let raw = String::from_utf8_lossy(&header[..16]);
            let raw = raw.trim_end_matches(' ');
            self.left = size;
            self.pad = size % 2 == 1;
            let name = match raw {
                // GNU ar's symbol table: no member.
                "/" | "/SYM64/" => continue,
                "//" => {
                    HeaderRecordTooLarge::check("ar name table (`//`)", at, WITHIN, size)?;
                    self.names = self.read_record(size, "the name table")?;
                    continue;
                }
                _ if raw.starts_with("#1/") => {
                    let len = decimal(&raw.as_bytes()[3..]).ok_or_else(|| {
                        invalid(format!("the BSD member name at byte {at} has no length"))
                    })?;
                    HeaderRecordTooLarge::check("BSD ar member name (`#1/N`)", at, WITHIN, len)?;
                    if len > size {
                        return Err(invalid(format!(
                            "the BSD member name at byte {at} is longer than its member"
                        )));
                    }
                    let name = self.read_record(len, "a member name")?;
                    let end = name.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
                    String::from_utf8_lossy(&name[..end]).into_owned()
                }
                _ if raw.len() > 1
                    && raw.starts_with('/')
                    && raw[1..].bytes().all(|b| b.is_ascii_digit()) =>
                {
                    self.gnu_name(&raw[1..], at)?
                }
                _ => raw.trim_end_matches('/').to_string(),
            };
            return Ok(Some(ArMember {
                name,
                archive: self,
            }));
        }
    }

    /// The name at `offset` (decimal) of GNU ar's name table, which ends
    /// at `/` or a line end.
    fn gnu_name(&self, offset: &str, at: u64) -> io::Result<String> {
        let start = offset
            .parse::<usize>()
            .ok()
            .filter(|&s| s < self.names.len())
            .ok_or_else(|| {
                invalid(format!(
                    "the member at byte {at} names offset {offset} of a name table of {} bytes",
                    self.names.len()
                ))
            })?;
        let rest = &self.names[start..];
        let end = rest
            .iter()
            .position(|&b| b == b'/' || b == b'\n' || b == 0)
            .unwrap_or(rest.len());
        Ok(String::from_utf8_lossy(&rest[..end]).into_owned())
    }

    /// `len` bytes of the current member (within the bound, checked by
    /// the caller).
    fn read_record(&mut self, len: u64, what: &str) -> io::Result<Vec<u8>> {
        let mut bytes = vec![0; len.min(MAX_HEADER_RECORD) as usize];
        self.fill(&mut bytes, what)?;
        self.left -= len;
        Ok(bytes)
    }

    /// Skips what was not read of the current member, and its padding (a
    /// missing last padding byte is no damage: some writers omit it).
    fn skip_rest(&mut self) -> io::Result<()> {
        let left = self.left;
        let skipped = io::copy(&mut (&mut self.inner).take(left), &mut io::sink())?;
        self.at += skipped;
        if skipped < left {
            return Err(truncated("a member"));
        }
        self.left = 0;
        if std::mem::take(&mut self.pad) {
            let mut pad = [0; 1];
            self.at += self.inner.read(&mut pad)? as u64;
        }
        Ok(())
    }

    fn fill(&mut self, buf: &mut [u8], what: &str) -> io::Result<()> {
        self.inner.read_exact(buf).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => truncated(what),
            _ => e,
        })?;
        self.at += buf.len() as u64;
        Ok(())
    }
}

impl<R> ArMember<'_, R> {
    /// The name, without GNU ar's trailing `/`.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl<R: Read> Read for ArMember<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let archive = &mut *self.archive;
        let want = usize::try_from(archive.left)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let n = archive.inner.read(&mut buf[..want])?;
        if n == 0 && want > 0 {
            return Err(truncated("a member"));
        }
        archive.left -= n as u64;
        archive.at += n as u64;
        Ok(n)
    }
}

/// A decimal field, padded with spaces.
fn decimal(field: &[u8]) -> Option<u64> {
    std::str::from_utf8(field).ok()?.trim().parse().ok()
}

fn invalid(detail: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, detail)
}

fn truncated(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("the archive ends inside {what} (truncated)"),
    )
}
