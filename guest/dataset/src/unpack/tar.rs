//! tar entries (plain or decompressed, from a file or a .deb's data member)
//! into the tree.

use super::guard;
use super::header_record::HeaderRecordTooLarge;
use super::sink::Sink;
use super::tar_records::TarRecords;
use super::tree::Meta;
use super::{Fault, Run};
use crate::DatasetError;
use std::io::{self, Read};
use tar::EntryType;

/// The most of the stream after the end-of-archive marker that is read, so
/// the decompressor checks its trailer (gzip's CRC, xz's index); tar pads
/// to 10 KiB, anything after that is not looked at.
const TRAILER_READ: u64 = 1 << 20;

/// Unpacks the tar stream `stream` into the run's tree. The stream must end
/// with tar's end-of-archive marker: a stream that just stops between two
/// entries is a truncated archive, not a short tree.
pub(super) fn unpack(run: &mut Run, stream: &mut dyn Read) -> Result<(), DatasetError> {
    let mut archive = tar::Archive::new(EndWatch {
        inner: TarRecords::new(stream),
        hit_end: false,
    });
    {
        let entries = archive
            .entries()
            .map_err(|e| run.error(Fault::Read(e), None))?;
        for entry in entries {
            let mut entry = entry.map_err(|e| between_entries(run, e))?;
            let kind = entry.header().entry_type();
            // A pax global header describes the archive, not an entry.
            if kind == EntryType::XGlobalHeader {
                continue;
            }
            let raw_name = entry.path_bytes().into_owned();
            run.begin(&raw_name)?;
            let result = one_entry(run, &mut entry, kind, &raw_name);
            run.finish_entry(result)?;
        }
    }
    let rest = archive.into_inner();
    if rest.hit_end {
        return Err(run.after_last(Fault::Damaged(
            "it stops without tar's end-of-archive marker (truncated)".into(),
        )));
    }
    io::copy(&mut rest.inner.take(TRAILER_READ), &mut io::sink())
        .map_err(|e| run.after_last(Fault::Read(e)))?;
    Ok(())
}

/// A read error between entries, placed after the entry before it; but a
/// header record past the bound says where it is itself, and is no damage
/// that fetching again mends.
fn between_entries(run: &Run, e: io::Error) -> DatasetError {
    match HeaderRecordTooLarge::of(&e) {
        Some(record) => run.error(Fault::Unsupported(record.to_string()), None),
        None => run.after_last(Fault::Read(e)),
    }
}

fn one_entry(
    run: &mut Run,
    entry: &mut tar::Entry<'_, Stream<'_>>,
    kind: EntryType,
    raw_name: &[u8],
) -> Result<(), Fault> {
    let path = guard::entry_path(raw_name).map_err(|b| b.fault("name"))?;
    let header = entry.header();
    let meta = Meta {
        mode: header.mode().unwrap_or(0o644),
        mtime: header.mtime().ok().and_then(|t| i64::try_from(t).ok()),
    };
    let tree: &mut dyn Sink = &mut *run.tree;
    match kind {
        EntryType::Regular | EntryType::Continuous | EntryType::GNUSparse => {
            // The size as declared (a sparse file's full size), so holes
            // count toward the bound.
            let size = entry.size();
            tree.file(&path, meta, size, entry)
        }
        EntryType::Directory => tree.dir(&path, meta),
        EntryType::Symlink => {
            let raw = link_bytes(entry)?;
            let target = guard::symlink_target(&path, &raw).map_err(|b| b.fault("link target"))?;
            tree.symlink(&path, target, meta)
        }
        EntryType::Link => {
            let raw = link_bytes(entry)?;
            let target = guard::hard_link_target(&raw).map_err(|b| b.fault("link target"))?;
            tree.hard_link(&path, &target)
        }
        EntryType::Char | EntryType::Block | EntryType::Fifo => {
            tree.special();
            Ok(())
        }
        other => Err(Fault::Unsupported(format!(
            "is a tar entry of type `{}` ({other:?}), which labrun does not unpack",
            other.as_byte() as char
        ))),
    }
}

fn link_bytes(entry: &tar::Entry<'_, Stream<'_>>) -> Result<Vec<u8>, Fault> {
    match entry.link_name_bytes() {
        Some(raw) => Ok(raw.into_owned()),
        None => Err(Fault::Damaged("is a link without a target".into())),
    }
}

/// The stream the tar reader reads.
type Stream<'a> = EndWatch<TarRecords<&'a mut dyn Read>>;

/// Notes whether the tar reader met the stream's end: it stops there
/// without an error, so this is how a stream cut between entries is told
/// from one that ends with its end-of-archive marker (a zero block, which
/// the reader stops at before the end).
struct EndWatch<R> {
    inner: R,
    hit_end: bool,
}

impl<R: Read> Read for EndWatch<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 && !buf.is_empty() {
            self.hit_end = true;
        }
        Ok(n)
    }
}
