//! The one reader every evidence file goes through (a run folder, an
//! unpacked pack, or a pack's files held in memory alike): a regular file
//! inside the run, opened without blocking and read up to a stated size. A
//! link out of the run, a FIFO or a device is refused by name, so `report`
//! and `compare` can neither hang on a pipe nor fill memory from
//! `/dev/zero`.

use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// A JSON or text file of the evidence (plan, environment, digests, a
/// variant's index): far larger than any labrun writes.
pub const MAX_SMALL_FILE: u64 = 16 << 20;
/// `records.jsonl`: a real record is under 1 kB (830 bytes in the docs'
/// runs), so this is some 300,000 steps. `report` keeps every record in
/// memory, about 3 kB each (64 MB of records: 160,000 records, a 470 MB
/// peak), so the file is bounded before it is read ([`MAX_RECORDS`] bounds
/// the small ones).
pub const MAX_RECORDS_FILE: u64 = 256 << 20;
/// The step records `report` keeps: some 600 MB at about 3 kB each; no run
/// records this many steps.
pub const MAX_RECORDS: usize = 200_000;
/// The memory one kept record takes, for the messages.
pub const RECORD_MEMORY: &str = "about 3 kB";
/// One line of `records.jsonl`: a record is a few kB at most.
pub const MAX_RECORD_LINE: u64 = 1 << 20;

/// Where a run's files are read from.
#[derive(Debug, Clone, Copy)]
pub enum Root<'a> {
    /// The run's folder: paths are under it.
    Dir(&'a Path),
    /// A pack's files, read into memory and checked against its manifest
    /// ([`crate::pack::read_in_memory`]): paths are relative to the run.
    Memory(&'a InMemory),
}

/// A run's files held in memory, by their path relative to the run.
#[derive(Debug, Default, Clone)]
pub struct InMemory {
    pub files: std::collections::BTreeMap<PathBuf, Vec<u8>>,
}

impl Root<'_> {
    /// The folder the run's paths are joined to (empty in memory).
    pub fn base(&self) -> &Path {
        match self {
            Root::Dir(dir) => dir,
            Root::Memory(_) => Path::new(""),
        }
    }

    /// Whether `path` names anything (a link too, which reading refuses).
    pub fn exists(&self, path: &Path) -> bool {
        match self {
            Root::Dir(_) => path.symlink_metadata().is_ok(),
            Root::Memory(m) => m.files.contains_key(path),
        }
    }

    /// Whether `path` is a folder of the run.
    pub fn is_dir(&self, path: &Path) -> bool {
        match self {
            Root::Dir(_) => path.is_dir(),
            Root::Memory(m) => m.files.keys().any(|f| f.starts_with(path) && f != path),
        }
    }

    /// The file's size, as [`open`] checks it; `Ok(None)`: no such file.
    pub fn size(&self, path: &Path) -> Result<Option<u64>, Refused> {
        match self {
            Root::Dir(dir) => match open(dir, path, u64::MAX)? {
                Some(file) => file
                    .metadata()
                    .map(|m| Some(m.len()))
                    .map_err(|e| refused(path, e.to_string())),
                None => Ok(None),
            },
            Root::Memory(m) => Ok(m.files.get(path).map(|b| b.len() as u64)),
        }
    }

    /// [`read_to_string`] from this root.
    pub fn read_to_string(&self, path: &Path, limit: u64) -> Result<Option<String>, Refused> {
        match self {
            Root::Dir(dir) => read_to_string(dir, path, limit),
            Root::Memory(m) => {
                let Some(bytes) = m.files.get(path) else {
                    return Ok(None);
                };
                if bytes.len() as u64 > limit {
                    return Err(refused(
                        path,
                        format!("{} bytes, more than the limit of {limit}", bytes.len()),
                    ));
                }
                String::from_utf8(bytes.clone())
                    .map(Some)
                    .map_err(|e| refused(path, e.to_string()))
            }
        }
    }

    /// [`for_each_line`] from this root.
    pub fn for_each_line(
        &self,
        path: &Path,
        limit: u64,
        line_limit: u64,
        each: impl FnMut(usize, &str) -> std::ops::ControlFlow<()>,
    ) -> Result<Option<()>, Refused> {
        match self {
            Root::Dir(dir) => for_each_line(dir, path, limit, line_limit, each),
            Root::Memory(m) => match m.files.get(path) {
                Some(bytes) => {
                    for_each_line_of(bytes.as_slice(), path, limit, line_limit, each).map(Some)
                }
                None => Ok(None),
            },
        }
    }
}

/// Why a file of the evidence was not read.
#[derive(Debug)]
pub struct Refused {
    pub path: PathBuf,
    pub reason: String,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} refused: {}; evidence files must be regular files inside the run folder",
            self.path.display(),
            self.reason
        )
    }
}

impl std::error::Error for Refused {}

fn refused(path: &Path, reason: impl Into<String>) -> Refused {
    Refused {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// Opens `path`, which must lie inside `root` once links are resolved, be a
/// regular file and hold at most `limit` bytes. `Ok(None)`: no such file.
pub fn open(root: &Path, path: &Path, limit: u64) -> Result<Option<File>, Refused> {
    let real = match path.canonicalize() {
        Ok(p) => p,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A dangling link is not "absent": say where it points.
            return match std::fs::read_link(path) {
                Ok(to) => Err(refused(
                    path,
                    format!("a link to {}, which does not exist", to.display()),
                )),
                Err(_) => Ok(None),
            };
        }
        Err(e) => return Err(refused(path, e.to_string())),
    };
    let root = root
        .canonicalize()
        .map_err(|e| refused(path, format!("the run folder cannot be resolved ({e})")))?;
    if !real.starts_with(&root) {
        return Err(refused(
            path,
            format!("it leads to {}, outside the run folder", real.display()),
        ));
    }
    // Non-blocking, so opening a FIFO returns at once instead of waiting for
    // a writer; the kind is then checked on the open file itself.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&real)
        .map_err(|e| refused(path, e.to_string()))?;
    let meta = file.metadata().map_err(|e| refused(path, e.to_string()))?;
    if !meta.file_type().is_file() {
        return Err(refused(path, format!("it is {}", kind_of(&meta))));
    }
    if meta.len() > limit {
        return Err(refused(
            path,
            format!("{} bytes, more than the limit of {limit}", meta.len()),
        ));
    }
    Ok(Some(file))
}

/// [`open`] and read the whole file as text, never more than `limit` bytes
/// even if it grows while read.
pub fn read_to_string(root: &Path, path: &Path, limit: u64) -> Result<Option<String>, Refused> {
    let Some(file) = open(root, path, limit)? else {
        return Ok(None);
    };
    let mut text = String::new();
    let read = file
        .take(limit + 1)
        .read_to_string(&mut text)
        .map_err(|e| refused(path, e.to_string()))?;
    if read as u64 > limit {
        return Err(refused(
            path,
            format!("it grew past the limit of {limit} bytes while read"),
        ));
    }
    Ok(Some(text))
}

/// [`open`] and call `each` with every line (numbered from 1, without its
/// end), one line in memory at a time; a line longer than `line_limit` is
/// refused naming its number.
pub fn for_each_line(
    root: &Path,
    path: &Path,
    limit: u64,
    line_limit: u64,
    each: impl FnMut(usize, &str) -> std::ops::ControlFlow<()>,
) -> Result<Option<()>, Refused> {
    let Some(file) = open(root, path, limit)? else {
        return Ok(None);
    };
    for_each_line_of(file, path, limit, line_limit, each).map(Some)
}

/// [`for_each_line`] of a file [`open`] gave, or of bytes in memory
/// (`path` names it in errors).
pub fn for_each_line_of(
    file: impl Read,
    path: &Path,
    limit: u64,
    line_limit: u64,
    mut each: impl FnMut(usize, &str) -> std::ops::ControlFlow<()>,
) -> Result<(), Refused> {
    let mut reader = BufReader::new(file.take(limit + 1));
    let mut line = String::new();
    let mut total = 0u64;
    for number in 1.. {
        line.clear();
        let read = (&mut reader)
            .take(line_limit + 1)
            .read_line(&mut line)
            .map_err(|e| refused(path, format!("line {number}: {e}")))?;
        if read == 0 {
            break;
        }
        total += read as u64;
        if total > limit {
            return Err(refused(
                path,
                format!("it grew past the limit of {limit} bytes while read"),
            ));
        }
        if read as u64 > line_limit {
            return Err(refused(
                path,
                format!("line {number} is longer than the limit of {line_limit} bytes"),
            ));
        }
        let text = line.strip_suffix('\n').unwrap_or(&line);
        if each(number, text.strip_suffix('\r').unwrap_or(text)).is_break() {
            break;
        }
    }
    Ok(())
}

fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a folder"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}
