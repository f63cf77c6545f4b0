//! Unpacking a dataset archive into the tree the tools back up: tar (plain,
//! gz, xz, zst), zip, or a Debian package's data, never writing outside the
//! destination and bounded in bytes and entries.
//!
//! One job per file: [`format`] checks the declared format against the
//! magic bytes and picks the decompressor, [`pipe`] decompresses on its own
//! thread, [`tar`], [`zip`] and [`deb`] read the entries, [`guard`] holds
//! the rules for names and link targets, [`budget`] the two bounds, and
//! [`tree`] writes without ever following a link. Entries go to a
//! [`sink`]: the tree writer, or a listing that only counts them
//! ([`list_file`], for `labrun check`). A header record read whole (a tar
//! long name or PAX header, an ar name table) is bounded by
//! [`header_record`], for every reader of a tar or a .deb: [`tar_records`]
//! watches a tar stream, [`ar_members`] reads a .deb.

mod ar_members;
mod budget;
mod deb;
mod format;
mod guard;
mod header_record;
mod pipe;
mod sink;
mod tar;
mod tar_records;
mod tree;
mod zip;

pub use ar_members::{ArMember, ArMembers};
pub use header_record::{HeaderRecordTooLarge, MAX_HEADER_RECORD};
pub use tar_records::TarRecords;

use crate::error::UnpackBound;
use crate::{DatasetError, Progress};
use labrun_evidence::ArchiveFormat;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// How much an archive may unpack to: more is an archive bomb (or a bound
/// to raise), refused at the first entry that crosses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnpackLimits {
    /// File bytes, as the entries declare them (holes of a sparse file count).
    pub max_bytes: u64,
    /// Entries of any kind: files, folders, links, skipped specials.
    pub max_entries: u64,
}

/// What an unpack wrote. `files`, `symlinks` and `hard_links` count entries
/// written (a later entry of the same name replaces the earlier one, and
/// both count); `dirs` counts the folders made under the destination,
/// listed or implied by a path; `bytes` the file bytes written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Unpacked {
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    pub hard_links: u64,
    pub bytes: u64,
    /// Devices, FIFOs and sockets: counted, not created.
    pub skipped_special: u64,
}

/// Entries an archive may hold unless told otherwise: far above any real
/// tree's (the Linux sources are about 90,000), far below what fills a
/// guest's inode table.
pub const MAX_ENTRIES: u64 = 20_000_000;

/// Bytes read from the archive file at a time.
const READ_BUFFER: usize = 1 << 20;

/// Unpacks `archive`, which must be in `format` (its magic bytes are
/// checked: a zip named `.tar.gz` is refused, naming both), into `dest`,
/// which must not exist or be empty.
///
/// Never writes outside `dest`: entries with `..` or absolute names, links
/// whose target leaves the tree, hard links to names outside it and writes
/// through a link an earlier entry made are refused with the entry's name
/// (see `guard.rs` and `tree.rs`). Devices, FIFOs and sockets are skipped
/// and counted. Names must be UTF-8. Modes keep their permission bits (no
/// setuid, setgid or sticky), mtimes are kept, ownership is not. Corrupt and
/// truncated archives, and the first entry that crosses `limits`, are
/// errors naming the archive and the entry.
///
/// `progress` gets (archive bytes read, archive size) after each entry.
///
/// On any error the partial tree is left in `dest` for the caller to
/// remove: it is not a tree of the archive.
pub fn unpack_file(
    archive: &Path,
    format: ArchiveFormat,
    dest: &Path,
    limits: UnpackLimits,
    progress: Progress,
) -> Result<Unpacked, DatasetError> {
    let (file, total) = open_checked(archive, format)?;
    prepare_dest(dest)?;
    let mut tree = tree::Tree::open(dest, budget::Budget::new(limits))
        .map_err(|f| Run::fault_error(archive, dest, None, f))?;
    read_entries(archive, dest, &mut tree, format, file, total, progress)?;
    tree.finish()
        .map_err(|(entry, f)| Run::fault_error(archive, dest, Some(entry), f))
}

/// What unpacking `archive` would make, read the same way as
/// [`unpack_file`] reads it but writing nothing (and skipping file data):
/// the same counts, and the same refusals of names, link targets, damage
/// and bounds, naming the same entry. Only what a written tree shows (a
/// write through a link an earlier entry made) is left to the unpack.
pub fn list_file(
    archive: &Path,
    format: ArchiveFormat,
    limits: UnpackLimits,
) -> Result<Unpacked, DatasetError> {
    let (file, total) = open_checked(archive, format)?;
    let mut listing = sink::Listing::new(budget::Budget::new(limits));
    read_entries(
        archive,
        Path::new(""),
        &mut listing,
        format,
        file,
        total,
        &mut |_, _| {},
    )?;
    Ok(listing.finish())
}

/// What unpacking the archive that `stream` yields would make, listed as
/// [`list_file`] lists a file but read as it streams: a member of another
/// archive (a `.deb`'s `deb-member:`) listed without being written
/// anywhere. `archive` names it in messages. A zip is read by seeking, so
/// it is refused here: list it from a file.
pub fn list_stream(
    archive: &Path,
    mut stream: impl Read + Send,
    format: ArchiveFormat,
    limits: UnpackLimits,
) -> Result<Unpacked, DatasetError> {
    let (sniffed, head) = format::sniff(&mut stream).map_err(|e| DatasetError::UnpackIo {
        archive: archive.to_path_buf(),
        entry: None,
        action: "cannot read the archive".to_string(),
        cause: e,
    })?;
    if sniffed.found != Some(format) {
        return Err(DatasetError::ArchiveFormatMismatch {
            archive: archive.to_path_buf(),
            declared: format,
            found: sniffed.found,
            first_bytes: sniffed.first_bytes,
        });
    }
    // The sniffed bytes go first again.
    let source = BufReader::with_capacity(READ_BUFFER, io::Cursor::new(head).chain(stream));
    let mut listing = sink::Listing::new(budget::Budget::new(limits));
    let read = AtomicU64::new(0);
    let mut run = Run {
        archive: archive.to_path_buf(),
        dest: PathBuf::new(),
        tree: &mut listing,
        entry: None,
        read: &read,
        total: 0,
        progress: &mut |_, _| {},
    };
    stream_entries(&mut run, source, format)?;
    Ok(listing.finish())
}

/// `archive` opened, its size, and its magic bytes checked against `format`
/// (a zip named `.tar.gz` is refused, naming both).
fn open_checked(archive: &Path, format: ArchiveFormat) -> Result<(File, u64), DatasetError> {
    let fail = |action: &str, cause: io::Error| DatasetError::UnpackIo {
        archive: archive.to_path_buf(),
        entry: None,
        action: action.to_string(),
        cause,
    };
    let mut file = File::open(archive).map_err(|e| fail("cannot open the archive", e))?;
    let total = file
        .metadata()
        .map_err(|e| fail("cannot read the archive's size", e))?
        .len();
    let (sniffed, _) = format::sniff(&mut file).map_err(|e| fail("cannot read the archive", e))?;
    file.rewind()
        .map_err(|e| fail("cannot read the archive", e))?;
    if sniffed.found != Some(format) {
        return Err(DatasetError::ArchiveFormatMismatch {
            archive: archive.to_path_buf(),
            declared: format,
            found: sniffed.found,
            first_bytes: sniffed.first_bytes,
        });
    }
    Ok((file, total))
}

/// Every entry of `file` (in `format`) into `sink`.
fn read_entries(
    archive: &Path,
    dest: &Path,
    sink: &mut dyn sink::Sink,
    format: ArchiveFormat,
    file: File,
    total: u64,
    progress: Progress,
) -> Result<(), DatasetError> {
    let read = AtomicU64::new(0);
    let mut run = Run {
        archive: archive.to_path_buf(),
        dest: dest.to_path_buf(),
        tree: sink,
        entry: None,
        read: &read,
        total,
        progress,
    };
    let counted = pipe::Counting {
        inner: BufReader::with_capacity(READ_BUFFER, file),
        count: &read,
    };
    match format {
        ArchiveFormat::Zip => zip::unpack(&mut run, counted),
        _ => stream_entries(
            &mut run,
            BufReader::with_capacity(READ_BUFFER, counted),
            format,
        ),
    }
}

/// The entries of a .deb or a tar read as `source` streams, into `run`'s
/// sink: one reading for a file ([`read_entries`]) and for a member of
/// another archive ([`list_stream`]). A zip is read by seeking, from a
/// file only.
fn stream_entries<R: io::BufRead + Send>(
    run: &mut Run,
    source: R,
    format: ArchiveFormat,
) -> Result<(), DatasetError> {
    match format {
        ArchiveFormat::Zip => Err(run.error(
            Fault::Unsupported("a zip is read from a file, not a stream".into()),
            None,
        )),
        ArchiveFormat::Deb => deb::unpack(run, source),
        tar_format => {
            let stream =
                format::decompressed(tar_format, source).map_err(|f| run.error(f, None))?;
            pipe::pipelined(stream, |s| tar::unpack(run, s))
        }
    }
}

/// Makes `dest` (and its parents) unless it exists; refuses one that holds
/// anything.
fn prepare_dest(dest: &Path) -> Result<(), DatasetError> {
    let fail = |action: &'static str, cause| DatasetError::io(action, dest, cause);
    match std::fs::read_dir(dest) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(DatasetError::UnpackDestNotEmpty {
                    dest: dest.to_path_buf(),
                });
            }
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dest).map_err(|e| fail("creating", e))
        }
        Err(e) => Err(fail("reading", e)),
    }
}

/// What went wrong with one entry, before it is told with the archive's
/// and the entry's names.
#[derive(Debug)]
pub(super) enum Fault {
    /// Would write outside the tree (the reason names how).
    Unsafe(String),
    /// A name or link target ("name", "link target") that is not UTF-8.
    NotUtf8(&'static str),
    /// Damaged or truncated (the detail says what was found).
    Damaged(String),
    /// A kind of entry or compression labrun does not unpack.
    Unsupported(String),
    /// A bound crossed.
    TooLarge(UnpackBound),
    /// A folder the entry needs does not exist (a walk without creating).
    Missing,
    /// Reading the archive failed (decompression, a damaged header).
    Read(io::Error),
    /// Writing the tree failed.
    Io {
        action: &'static str,
        cause: io::Error,
    },
}

impl Fault {
    fn io(action: &'static str, errno: rustix::io::Errno) -> Fault {
        Fault::Io {
            action,
            cause: errno.into(),
        }
    }

    fn io_std(action: &'static str, cause: io::Error) -> Fault {
        Fault::Io { action, cause }
    }
}

/// One unpack under way: the tree, and what a message names.
pub(super) struct Run<'a> {
    archive: PathBuf,
    dest: PathBuf,
    tree: &'a mut dyn sink::Sink,
    /// The entry being unpacked (or last unpacked), as a message shows it.
    entry: Option<String>,
    read: &'a AtomicU64,
    total: u64,
    progress: Progress<'a>,
}

impl Run<'_> {
    /// A new entry: counted against the bound, named in later messages.
    fn begin(&mut self, raw_name: &[u8]) -> Result<(), DatasetError> {
        self.entry = Some(String::from_utf8_lossy(raw_name).into_owned());
        self.tree
            .budget()
            .add_entry()
            .map_err(|f| self.error(f, self.entry.clone()))
    }

    /// The entry is done (or failed): tell progress, or the entry's error.
    fn finish_entry(&mut self, result: Result<(), Fault>) -> Result<(), DatasetError> {
        result.map_err(|f| self.error(f, self.entry.clone()))?;
        (self.progress)(self.read.load(Ordering::Relaxed), self.total);
        Ok(())
    }

    /// A fault between entries: placed by the entry before it, if any.
    fn after_last(&self, fault: Fault) -> DatasetError {
        let Some(last) = &self.entry else {
            return self.error(fault, None);
        };
        let placed = match fault {
            Fault::Read(e) => {
                Fault::Damaged(format!("reading it failed after entry `{last}`: {e}"))
            }
            Fault::Damaged(d) => Fault::Damaged(format!("{d}, after entry `{last}`")),
            other => return self.error(other, Some(last.clone())),
        };
        self.error(placed, None)
    }

    fn error(&self, fault: Fault, entry: Option<String>) -> DatasetError {
        Run::fault_error(&self.archive, &self.dest, entry, fault)
    }

    /// The error of `f`, with the archive's and the entry's names. What
    /// came from the archive (names, targets, a decoder's words about its
    /// bytes) is shown with control characters escaped and cut short, so a
    /// hostile archive cannot write to the terminal or flood a log.
    fn fault_error(archive: &Path, dest: &Path, entry: Option<String>, f: Fault) -> DatasetError {
        let archive = archive.to_path_buf();
        let entry = entry.map(shown);
        let named = |entry: Option<String>| entry.unwrap_or_else(|| "?".to_string());
        match f {
            Fault::Unsafe(reason) => DatasetError::UnsafeEntry {
                archive,
                entry: named(entry),
                reason: shown(reason),
            },
            Fault::NotUtf8(what) => DatasetError::NonUtf8EntryName {
                archive,
                entry: named(entry),
                what,
            },
            Fault::Damaged(detail) => DatasetError::ArchiveDamaged {
                archive,
                entry,
                detail: shown(detail),
            },
            Fault::Missing => DatasetError::ArchiveDamaged {
                archive,
                entry,
                detail: "a folder it needs is missing".into(),
            },
            Fault::Read(e) => DatasetError::ArchiveDamaged {
                archive,
                entry,
                detail: shown(format!("reading it failed: {e}")),
            },
            Fault::Unsupported(detail) => DatasetError::ArchiveUnsupported {
                archive,
                entry,
                detail: shown(detail),
            },
            Fault::TooLarge(bound) => DatasetError::ArchiveTooLarge {
                archive,
                entry: named(entry),
                bound,
            },
            Fault::Io { action, cause } => {
                if crate::error::is_disk_full(&cause) {
                    DatasetError::UnpackDiskFull {
                        archive,
                        entry,
                        dest: dest.to_path_buf(),
                    }
                } else {
                    DatasetError::UnpackIo {
                        archive,
                        entry,
                        action: format!("{action} under {}", dest.display()),
                        cause,
                    }
                }
            }
        }
    }
}

/// The most characters of archive-borne text a message shows.
const SHOWN_CHARS: usize = 300;

fn shown(text: String) -> String {
    let safe = labrun_evidence::printable::printable(&text);
    match safe.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{}...", &safe[..cut]),
        None => safe.into_owned(),
    }
}
