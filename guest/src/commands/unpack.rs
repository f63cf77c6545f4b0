//! `labrun-agent unpack`: unpacks a dataset archive (tar, tar.gz, tar.xz,
//! tar.zst, zip, or a .deb's data) into a new folder, safely (see
//! `labrun_dataset::unpack_file`), and prints what it wrote as one JSON
//! line. Exit 0 when the whole archive is unpacked; 2 with the error
//! otherwise (a partial tree may be left in DEST: remove it).

use super::generate::ProgressLine;
use anyhow::Context;
use labrun_dataset::{UnpackLimits, unpack_file};
use labrun_evidence::ArchiveFormat;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The archive to unpack.
    #[arg(value_name = "ARCHIVE")]
    pub archive: PathBuf,
    /// The folder to unpack into: created if missing, refused if not empty.
    #[arg(value_name = "DEST")]
    pub dest: PathBuf,
    /// The archive's format: tar, tar-gz, tar-xz, tar-zst, zip or deb
    /// [default: from ARCHIVE's file name]. The file's first bytes must
    /// agree.
    #[arg(long)]
    pub format: Option<ArchiveFormat>,
    /// Refuse the archive once its files add up to more than N bytes, as
    /// their headers declare them [default: the free space where DEST is].
    #[arg(long, value_name = "N")]
    pub max_bytes: Option<u64>,
    /// Refuse the archive once it holds more than N entries.
    #[arg(long, value_name = "N", default_value_t = labrun_dataset::unpack::MAX_ENTRIES)]
    pub max_entries: u64,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let format = match args.format {
        Some(f) => f,
        None => format_from_name(&args.archive)?,
    };
    let max_bytes = match args.max_bytes {
        Some(n) => n,
        None => free_where(&args.dest)?,
    };
    let limits = UnpackLimits {
        max_bytes,
        max_entries: args.max_entries,
    };
    let mut report = ProgressLine::new("unpack");
    let unpacked = unpack_file(&args.archive, format, &args.dest, limits, &mut |d, t| {
        report.update(d, t)
    })?;
    println!("{}", serde_json::to_string(&unpacked)?);
    Ok(ExitCode::SUCCESS)
}

fn format_from_name(archive: &Path) -> anyhow::Result<ArchiveFormat> {
    let name = archive
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    ArchiveFormat::from_file_name(&name).with_context(|| {
        format!(
            "cannot tell the format of {} from its name: name it with --format ({})",
            archive.display(),
            ArchiveFormat::ALL.map(|f| f.as_str()).join(", ")
        )
    })
}

/// The free space of the file system DEST will be on (its nearest existing
/// folder): an archive that unpacks to more could not be written anyway.
fn free_where(dest: &Path) -> anyhow::Result<u64> {
    let existing = dest
        .ancestors()
        .find(|p| p.is_dir())
        .unwrap_or(Path::new("."));
    crate::run::space::free_bytes(existing).with_context(|| {
        format!(
            "reading the free space of {} (for --max-bytes' default): name the bound with \
             --max-bytes",
            existing.display()
        )
    })
}
