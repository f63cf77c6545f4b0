//! Getting the binary out of a verified artifact: as is, decompressed, a
//! member of a tarball, a member of a .deb, or (for `deb-install`) the .deb
//! itself with the digest of the binary it installs.
//!
//! Output goes to `<artifact folder>/extracted/<tool>`, written to a partial
//! name and renamed once complete (and matching `binary_sha256` if pinned).
//! This is blocking work: async callers wrap it in `spawn_blocking`.

use crate::digest::HashingWriter;
use crate::error::ArtifactError;
use crate::fetcher::FetchedArtifact;
use crate::spec::{ArtifactSource, ArtifactSpec, BuildRecipe, Extract, PythonBuild};
use labrun_dataset::unpack::{ArMembers, HeaderRecordTooLarge, TarRecords};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

/// How the guest gets the tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstallKind {
    /// Copy `path` into the guest as the tool's binary.
    Binary,
    /// Copy the .deb at `path` into the guest and `dpkg -i` it; the binary
    /// then lives at `binary_path`.
    Deb { binary_path: String },
    /// Copy the wheel bundle at `path` into the guest, check each wheel's
    /// SHA-256 there and install them into a venv whose `entry_point` is
    /// the tool ([`crate::build::python`]).
    PythonVenv { entry_point: String },
}

/// What the guest installs, with the digest it checks after install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installable {
    pub path: PathBuf,
    /// SHA-256 of the binary the tool runs as (inside the .deb for `Deb`).
    pub binary_sha256: String,
    pub kind: InstallKind,
}

/// Entries named in a "member not found" error.
const LISTED_MEMBERS: usize = 8;

/// The largest binary extraction writes (or, for `deb-install`, reads).
/// A lab pins the archive, not the binary's size, so the bound is a stated
/// limit rather than an expected size: the tools labrun runs are 15 to 60
/// MiB (restic, kopia, rustic, rest-server...), and 256 MiB leaves room for
/// a larger one while a small archive that decompresses without end (a
/// pinned 2 MB gzip once wrote 2 GiB into the cache) stops here.
pub const MAX_BINARY_BYTES: u64 = 256 << 20;

/// The most a member may be, by what it is for: the message says which
/// limit it met, and what to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bound {
    /// A tool's binary: [`MAX_BINARY_BYTES`].
    ToolBinary,
    /// A dataset's archive taken out of another: as much as the tree may
    /// unpack to (the caller's rule), which may well be above a binary's.
    Dataset(u64),
}

impl Bound {
    fn bytes(self) -> u64 {
        match self {
            Bound::ToolBinary => MAX_BINARY_BYTES,
            Bound::Dataset(max) => max,
        }
    }

    fn too_large(self) -> String {
        match self {
            Bound::ToolBinary => format!(
                "the binary is larger than {} MiB, the limit for a tool's binary \
                 (nothing was kept): check that `extract:` names the tool's binary",
                MAX_BINARY_BYTES >> 20
            ),
            Bound::Dataset(max) => format!(
                "the member is larger than {max} bytes, the most the dataset's tree may \
                 unpack to (nothing was kept): give the tree's size in `unpacked_size:` \
                 (the bound is 10% above it), or check that `extract:` names the tree's archive"
            ),
        }
    }
}

pub fn extract(
    fetched: &FetchedArtifact,
    spec: &ArtifactSpec,
) -> Result<Installable, ArtifactError> {
    extract_bounded(fetched, spec, Bound::ToolBinary)
}

/// A wheel bundle is installed whole: its manifest is read back here (each
/// wheel checked against its digest) so a damaged bundle stops on the host.
fn python_bundle(
    fetched: &FetchedArtifact,
    spec: &ArtifactSpec,
    p: &PythonBuild,
) -> Result<Installable, ArtifactError> {
    let fail = |problem: String| ArtifactError::Spec {
        field: "python".into(),
        problem,
    };
    if spec.extract != Extract::Raw {
        return Err(fail(format!(
            "a Python package is installed from its wheel bundle whole: remove {}",
            spec.extract.as_written()
        )));
    }
    let manifest = crate::build::python::bundle::read_manifest(&fetched.path).map_err(|e| {
        fail(format!(
            "the wheel bundle {} cannot be read ({e}): remove it and fetch again",
            fetched.path.display()
        ))
    })?;
    if manifest.entry_point != p.entry_point {
        return Err(fail(format!(
            "the bundle was built with entry point {:?}, the lab says {:?}",
            manifest.entry_point, p.entry_point
        )));
    }
    Ok(Installable {
        path: fetched.path.clone(),
        binary_sha256: fetched.sha256.clone(),
        kind: InstallKind::PythonVenv {
            entry_point: p.entry_point.clone(),
        },
    })
}

/// The member `spec.extract` names, for a dataset: as [`extract`], bounded
/// by `max_bytes` (the most the dataset's tree may unpack to) instead of a
/// tool binary's limit.
pub fn extract_dataset_member(
    fetched: &FetchedArtifact,
    spec: &ArtifactSpec,
    max_bytes: u64,
) -> Result<Installable, ArtifactError> {
    extract_bounded(fetched, spec, Bound::Dataset(max_bytes))
}

fn extract_bounded(
    fetched: &FetchedArtifact,
    spec: &ArtifactSpec,
    bound: Bound,
) -> Result<Installable, ArtifactError> {
    let ctx = Ctx {
        name: &fetched.name,
        archive: fetched
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    let out_dir = fetched
        .path
        .parent()
        .unwrap_or(Path::new("."))
        .join("extracted");
    if let ArtifactSource::Build(BuildRecipe::Python(p)) = &spec.source {
        return python_bundle(fetched, spec, p);
    }
    if let Extract::DebInstall(binary_path) = &spec.extract {
        let actual = read_member(&fetched.name, &fetched.path, &spec.extract, |r| {
            let (_, digest) = copy_hashed(&ctx, r, io::sink(), bound)?;
            Ok(digest)
        })?;
        check_pin(&ctx, spec.binary_sha256.as_deref(), &actual)?;
        return Ok(Installable {
            path: fetched.path.clone(),
            binary_sha256: actual,
            kind: InstallKind::Deb {
                binary_path: binary_path.clone(),
            },
        });
    }
    let binary = read_member(&fetched.name, &fetched.path, &spec.extract, |r| {
        write_binary(&ctx, r, &out_dir, spec.binary_sha256.as_deref(), bound)
    })?;
    Ok(Installable {
        path: binary.0,
        binary_sha256: binary.1,
        kind: InstallKind::Binary,
    })
}

/// Hands `use_member` the bytes `extract` names in the verified file at
/// `path` (of the artifact called `name`, for messages), streamed: the file
/// itself, decompressed, a tarball's member, or a member of a .deb's data
/// (for `deb-install`, the binary the package installs). Nothing is written.
pub fn read_member<T>(
    name: &str,
    path: &Path,
    extract: &Extract,
    use_member: impl FnOnce(&mut dyn Read) -> Result<T, ArtifactError>,
) -> Result<T, ArtifactError> {
    let ctx = Ctx {
        name,
        archive: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    let mut file = File::open(path)
        .map(BufReader::new)
        .map_err(|e| ArtifactError::Io {
            name: name.to_string(),
            what: "cannot read",
            path: path.to_path_buf(),
            source: e,
        })?;
    match extract {
        Extract::Raw => use_member(&mut file),
        Extract::Bz2 => use_member(&mut bzip2::read::MultiBzDecoder::new(file)),
        Extract::Gz => use_member(&mut flate2::read::MultiGzDecoder::new(file)),
        Extract::Tar(member) => {
            let tarball = decompressed(&ctx, file)?;
            with_tar_member(&ctx, tarball, member, use_member)
        }
        Extract::DebMember(member) => with_deb_member(&ctx, file, member, use_member),
        Extract::DebInstall(binary_path) => {
            with_deb_member(&ctx, file, binary_path.trim_start_matches('/'), use_member)
        }
    }
}

/// For error messages.
struct Ctx<'a> {
    name: &'a str,
    archive: String,
}

impl Ctx<'_> {
    fn bad(&self, detail: impl Into<String>) -> ArtifactError {
        ArtifactError::BadArchive {
            name: self.name.to_string(),
            archive: self.archive.clone(),
            detail: detail.into(),
        }
    }
}

/// Writes the binary to `<out_dir>/<tool>` (mode 0755) if its digest is the
/// pinned one (or nothing is pinned); returns its path and digest.
fn write_binary(
    ctx: &Ctx,
    reader: &mut dyn Read,
    out_dir: &Path,
    pinned: Option<&str>,
    bound: Bound,
) -> Result<(PathBuf, String), ArtifactError> {
    let io_err = |what, e| ArtifactError::Io {
        name: ctx.name.to_string(),
        what,
        path: out_dir.to_path_buf(),
        source: e,
    };
    std::fs::create_dir_all(out_dir).map_err(|e| io_err("cannot create", e))?;
    // Locked while written, so a run killed mid-extraction leaves a partial
    // the next extraction here removes (crate::stale).
    let (temp, _swept) = crate::stale::temp_file_in(out_dir, crate::cache::PARTIAL_PREFIX)
        .map_err(|e| io_err("cannot write into", e))?;
    let (file, actual) = copy_hashed(ctx, reader, temp.as_file(), bound)?;
    file.sync_all()
        .map_err(|e| io_err("cannot write into", e))?;
    check_pin(ctx, pinned, &actual)?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(temp.path(), std::fs::Permissions::from_mode(0o755))
            .map_err(|e| io_err("cannot make the binary executable in", e))?;
    }
    let path = out_dir.join(ctx.name);
    temp.persist(&path)
        .map_err(|e| io_err("cannot rename the extracted binary in", e.error))?;
    Ok((path, actual))
}

fn check_pin(ctx: &Ctx, pinned: Option<&str>, actual: &str) -> Result<(), ArtifactError> {
    match pinned {
        Some(expected) if expected != actual => Err(ArtifactError::BinaryDigestMismatch {
            name: ctx.name.to_string(),
            expected: expected.to_string(),
            actual: actual.to_string(),
        }),
        _ => Ok(()),
    }
}

fn copy_hashed<W: Write>(
    ctx: &Ctx,
    reader: &mut dyn Read,
    out: W,
    bound: Bound,
) -> Result<(W, String), ArtifactError> {
    let mut writer = HashingWriter::new(out);
    // One byte past the limit tells a member of exactly the limit from a
    // larger one; the caller drops the partial file on the error.
    let limit = bound.bytes();
    let copied = io::copy(&mut reader.take(limit.saturating_add(1)), &mut writer)
        .map_err(|e| ctx.bad(format!("reading or writing failed: {e}")))?;
    if copied > limit {
        return Err(ctx.bad(bound.too_large()));
    }
    Ok(writer.finish())
}

/// A reader over the decompressed stream, the format told by its first bytes
/// (so a `.tgz` or a misnamed file works as well as a `.tar.gz`).
fn decompressed<'a, R: BufRead + 'a>(
    ctx: &Ctx,
    mut reader: R,
) -> Result<Box<dyn Read + 'a>, ArtifactError> {
    let head = reader
        .fill_buf()
        .map_err(|e| ctx.bad(format!("cannot read: {e}")))?;
    Ok(if head.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::bufread::MultiGzDecoder::new(reader))
    } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
        Box::new(liblzma::bufread::XzDecoder::new_multi_decoder(reader))
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Box::new(
            zstd::stream::read::Decoder::with_buffer(reader)
                .map_err(|e| ctx.bad(format!("cannot start zstd: {e}")))?,
        )
    } else if head.starts_with(b"BZh") {
        Box::new(bzip2::bufread::MultiBzDecoder::new(reader))
    } else {
        // Uncompressed tar (or not a tarball: the tar reader will say).
        Box::new(reader)
    })
}

/// `./usr/bin/x`, `/usr/bin/x` and `usr/bin/x` name the same member.
fn normalize(path: &str) -> &str {
    let mut p = path;
    loop {
        let next = p.trim_start_matches("./").trim_start_matches('/');
        if next == p {
            return p;
        }
        p = next;
    }
}

/// Finds `member` in a tar stream and hands its bytes to `use_member`.
fn with_tar_member<T>(
    ctx: &Ctx,
    tarball: impl Read,
    member: &str,
    use_member: impl FnOnce(&mut dyn Read) -> Result<T, ArtifactError>,
) -> Result<T, ArtifactError> {
    let wanted = normalize(member);
    // Header records are bounded before the tar crate reads them whole.
    let mut archive = tar::Archive::new(TarRecords::new(tarball));
    let entries = archive
        .entries()
        .map_err(|e| ctx.bad(format!("not a tar archive: {e}")))?;
    let mut seen = Vec::new();
    let mut count = 0;
    for entry in entries {
        let mut entry = entry.map_err(|e| ctx.bad(read_error("damaged tar archive", &e)))?;
        let path = entry
            .path()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let kind = entry.header().entry_type();
        if normalize(&path) == wanted && !kind.is_dir() {
            if kind.is_symlink() || kind.is_hard_link() {
                let target = entry
                    .link_name()
                    .ok()
                    .flatten()
                    .map(|t| t.to_string_lossy().into_owned())
                    .unwrap_or_default();
                return Err(ctx.bad(format!(
                    "`{member}` is a link to `{target}`: name the link's target in `extract:`"
                )));
            }
            return use_member(&mut entry);
        }
        count += 1;
        if seen.len() < LISTED_MEMBERS && !kind.is_dir() {
            seen.push(path);
        }
    }
    Err(ArtifactError::MissingMember {
        name: ctx.name.to_string(),
        member: member.to_string(),
        archive: ctx.archive.clone(),
        count,
        first: seen.join(", "),
    })
}

/// Finds `member` in a .deb's `data.tar.*`.
fn with_deb_member<T>(
    ctx: &Ctx,
    deb: impl Read,
    member: &str,
    use_member: impl FnOnce(&mut dyn Read) -> Result<T, ArtifactError>,
) -> Result<T, ArtifactError> {
    let mut archive = ArMembers::new(deb);
    let mut names = Vec::new();
    while let Some(entry) = archive
        .next_member()
        .map_err(|e| ctx.bad(read_error("not a .deb (ar archive)", &e)))?
    {
        let id = entry.name().to_string();
        if id.starts_with("data.tar") {
            let data = decompressed(ctx, BufReader::new(entry))?;
            return with_tar_member(ctx, data, member, use_member);
        }
        names.push(id);
    }
    Err(ctx.bad(format!(
        "no data.tar.* inside; it holds: {}",
        if names.is_empty() {
            "nothing".into()
        } else {
            names.join(", ")
        }
    )))
}

/// A reader's error: `what` it shows the archive is, unless a header record
/// past the bound was refused, whose message says what and where.
fn read_error(what: &str, e: &io::Error) -> String {
    match HeaderRecordTooLarge::of(e) {
        Some(record) => record.to_string(),
        None => format!("{what}: {e}"),
    }
}
