//! zip entries into the tree. Stored and deflated entries are read (deflate
//! in pure Rust); a zip's symbolic link is an entry whose Unix mode says
//! so, its data the target.

use super::guard;
use super::sink::Sink;
use super::tree::Meta;
use super::{Fault, Run};
use crate::DatasetError;
use std::io::{Read, Seek};
use zip::result::ZipError;

/// Unix file-type bits of a zip entry's external attributes.
const S_IFMT: u32 = 0o170000;
const S_IFLNK: u32 = 0o120000;
const S_IFDIR: u32 = 0o040000;
const SPECIAL: [u32; 4] = [0o020000, 0o060000, 0o010000, 0o140000]; // chr, blk, fifo, sock
/// Linux's PATH_MAX: no link target is longer.
const MAX_LINK_TARGET: u64 = 4096;

pub(super) fn unpack<R: Read + Seek>(run: &mut Run, source: R) -> Result<(), DatasetError> {
    let mut archive = zip::ZipArchive::new(source).map_err(|e| run.error(fault(e), None))?;
    for index in 0..archive.len() {
        let name = archive
            .name_for_index(index)
            .and_then(|n| n.ok())
            .map(|n| n.into_owned());
        let mut entry = archive
            .by_index(index)
            .map_err(|e| run.error(fault(e), name))?;
        let raw_name = entry.name_raw().to_vec();
        run.begin(&raw_name)?;
        let result = one_entry(&mut *run.tree, &mut entry, &raw_name);
        run.finish_entry(result)?;
    }
    Ok(())
}

fn one_entry<R: Read>(
    tree: &mut dyn Sink,
    entry: &mut zip::read::ZipFile<'_, R>,
    raw_name: &[u8],
) -> Result<(), Fault> {
    let path = guard::entry_path(raw_name).map_err(|b| b.fault("name"))?;
    let unix = entry.unix_mode();
    let file_type = unix.map(|m| m & S_IFMT);
    let mtime = mtime(entry);
    let meta = |default: u32| Meta {
        mode: unix.map(|m| m & 0o7777).unwrap_or(default),
        mtime,
    };
    if entry.is_dir() || file_type == Some(S_IFDIR) {
        return tree.dir(&path, meta(0o755));
    }
    match file_type {
        Some(S_IFLNK) => {
            if entry.size() > MAX_LINK_TARGET {
                return Err(Fault::Damaged(format!(
                    "is a symbolic link whose target is {} bytes, longer than any path",
                    entry.size()
                )));
            }
            let mut raw = Vec::new();
            entry
                .take(MAX_LINK_TARGET)
                .read_to_end(&mut raw)
                .map_err(Fault::Read)?;
            let target = guard::symlink_target(&path, &raw).map_err(|b| b.fault("link target"))?;
            tree.symlink(&path, target, meta(0o777))
        }
        Some(t) if SPECIAL.contains(&t) => {
            tree.special();
            Ok(())
        }
        _ => {
            let size = entry.size();
            tree.file(&path, meta(0o644), size, entry)
        }
    }
}

/// The Unix mtime of the extended-timestamp field when there is one (what
/// Info-ZIP writes on Unix), else the DOS date and time, taken as UTC.
fn mtime<R: Read>(entry: &zip::read::ZipFile<'_, R>) -> Option<i64> {
    let extended = entry.extra_data_fields().find_map(|field| match field {
        zip::ExtraField::ExtendedTimestamp(ts) => ts.mod_time(),
        _ => None,
    });
    if let Some(t) = extended {
        return Some(i64::from(t));
    }
    let dos = entry.last_modified()?;
    let days = days_from_civil(
        i64::from(dos.year()),
        i64::from(dos.month()),
        i64::from(dos.day()),
    );
    Some(
        days * 86_400
            + i64::from(dos.hour()) * 3600
            + i64::from(dos.minute()) * 60
            + i64::from(dos.second()),
    )
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn fault(e: ZipError) -> Fault {
    match e {
        ZipError::Io(e) => Fault::Read(e),
        ZipError::UnsupportedArchive(what) => Fault::Unsupported(format!(
            "{what}: labrun unpacks zip entries that are stored or deflated, unencrypted"
        )),
        ZipError::CompressionMethodNotSupported(m) => Fault::Unsupported(format!(
            "uses zip compression method {m}; labrun unpacks stored and deflated entries: \
             repack the archive with those"
        )),
        ZipError::InvalidPassword => Fault::Unsupported("is encrypted".into()),
        other => Fault::Damaged(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_count_days_from_the_epoch() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(2026, 12, 3), 20_790);
        assert_eq!(days_from_civil(1980, 1, 1), 3_652);
    }
}
