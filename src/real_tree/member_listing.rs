//! `check`'s listing of a dataset archive taken out of another file
//! (`deb-member:`, `tar:`, `gz`, `bz2`), bounded before the work starts:
//! the member is read as it streams, never written out, and never past the
//! most the tree may unpack to, the bound `labrun fetch` puts on the member
//! it writes into the cache. A zip cannot be read as a stream: its member
//! goes to a temporary file, under the same bound.

use labrun_artifact::{ArtifactError, ArtifactSpec, Extract};
use labrun_dataset::{UnpackLimits, Unpacked};
use labrun_evidence::ArchiveFormat;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Bytes moved at a time.
const CHUNK: usize = 1 << 16;

/// What the member `spec.extract` names in the verified file at `path`
/// would unpack to, read within `limits`; a member larger than
/// `limits.max_bytes` is refused, naming it, as `labrun fetch` refuses it.
pub fn list_member(
    spec: &ArtifactSpec,
    path: &Path,
    format: ArchiveFormat,
    limits: UnpackLimits,
) -> Result<Unpacked, String> {
    let label = member_label(path, &spec.extract);
    if format == ArchiveFormat::Zip {
        return list_spooled(spec, path, &label, format, limits);
    }
    let (reader, writer) = io::pipe().map_err(|e| format!("cannot make a pipe: {e}"))?;
    let listing_failed = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let pump = scope.spawn(|| pump(spec, path, writer, limits.max_bytes, &listing_failed));
        // The reader is dropped when the listing returns: the pump's next
        // write fails, and it reads on only to learn the member's size.
        let listed = labrun_dataset::list_stream(&label, reader, format, limits);
        listing_failed.store(listed.is_err(), Ordering::Relaxed);
        let pumped = pump
            .join()
            .unwrap_or_else(|_| Err("reading the member failed (a bug in labrun)".into()));
        // The member's own refusal (missing, damaged, too large) first:
        // the listing of a stream cut short says less.
        pumped?;
        listed.map_err(|e| e.to_string())
    })
}

/// "FILE:MEMBER", as the listing's messages name the archive.
fn member_label(path: &Path, extract: &Extract) -> PathBuf {
    let member = match extract {
        Extract::Tar(m) | Extract::DebMember(m) | Extract::DebInstall(m) => m.as_str(),
        Extract::Gz | Extract::Bz2 => "decompressed",
        Extract::Raw => return path.to_path_buf(),
    };
    PathBuf::from(format!("{}:{member}", path.display()))
}

/// Writes the member into `out` until it ends; more than `max_bytes` is
/// refused. Once the listing stops reading, the rest is read into nothing
/// to tell the member's size as `labrun fetch` would, unless the listing
/// failed (its error is the answer then).
fn pump(
    spec: &ArtifactSpec,
    path: &Path,
    mut out: impl Write,
    max_bytes: u64,
    listing_failed: &AtomicBool,
) -> Result<(), String> {
    labrun_artifact::extract::read_member("dataset", path, &spec.extract, |r| {
        let mut buf = vec![0u8; CHUNK];
        let mut total = 0u64;
        let mut writing = true;
        loop {
            let n =
                read_some(r, &mut buf).map_err(|e| bad(path, format!("reading failed: {e}")))?;
            if n == 0 {
                return Ok(Ok(()));
            }
            total += n as u64;
            if total > max_bytes {
                return Ok(Err(too_large(spec, max_bytes)));
            }
            if writing && out.write_all(&buf[..n]).is_err() {
                // The listing stopped reading: its result tells.
                writing = false;
            }
            if !writing && listing_failed.load(Ordering::Relaxed) {
                return Ok(Ok(()));
            }
        }
    })
    .map_err(|e| e.to_string())?
}

fn read_some(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match r.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

fn bad(path: &Path, detail: String) -> ArtifactError {
    ArtifactError::BadArchive {
        name: "dataset".into(),
        archive: path.display().to_string(),
        detail,
    }
}

/// The refusal `labrun fetch` gives, said for `check`.
fn too_large(spec: &ArtifactSpec, max_bytes: u64) -> String {
    format!(
        "the member `{}` is larger than {}, the most the tree may unpack to: `labrun fetch` and the run refuse it; give the tree's size in `unpacked_size:` (the bound is 10% above it), or check that `extract:` names the tree's archive",
        member_name(&spec.extract),
        labrun_vocab::human_bytes(max_bytes)
    )
}

fn member_name(extract: &Extract) -> String {
    match extract {
        Extract::Tar(m) | Extract::DebMember(m) | Extract::DebInstall(m) => m.clone(),
        other => format!("{other:?}").to_lowercase(),
    }
}

/// A zip member into a temporary file, bounded as the stream is, then
/// listed from it.
fn list_spooled(
    spec: &ArtifactSpec,
    path: &Path,
    label: &Path,
    format: ArchiveFormat,
    limits: UnpackLimits,
) -> Result<Unpacked, String> {
    let mut member = tempfile::NamedTempFile::new()
        .map_err(|e| format!("cannot make a temporary file for {}: {e}", label.display()))?;
    let no_listing_yet = AtomicBool::new(false);
    pump(
        spec,
        path,
        member.as_file_mut(),
        limits.max_bytes,
        &no_listing_yet,
    )?;
    labrun_dataset::list_file(member.path(), format, limits).map_err(|e| e.to_string())
}
