//! A Debian package's tree: its `data.tar.*` member (gz, xz, zst or plain),
//! unpacked as a tar stream. The control files are not part of the tree.

use super::ar_members::ArMembers;
use super::format;
use super::header_record::HeaderRecordTooLarge;
use super::{Fault, Run, pipe};
use crate::DatasetError;
use labrun_evidence::ArchiveFormat;
use std::io::{BufReader, Cursor, Read};

/// An ar member's buffer: the package is read in large pieces.
const MEMBER_BUFFER: usize = 1 << 20;

pub(super) fn unpack<R: Read + Send>(run: &mut Run, package: R) -> Result<(), DatasetError> {
    let mut archive = ArMembers::new(package);
    let mut members = Vec::new();
    while let Some(mut member) = archive
        .next_member()
        .map_err(|e| run.error(not_a_deb(e), None))?
    {
        let name = member.name().to_string();
        if !name.starts_with("data.tar") {
            members.push(name);
            continue;
        }
        let (sniffed, head) = format::sniff(&mut member)
            .map_err(|e| run.error(Fault::Read(e), Some(name.clone())))?;
        // The sniffed bytes go first again.
        let data = BufReader::with_capacity(MEMBER_BUFFER, Cursor::new(head).chain(member));
        let compression = match sniffed.found {
            Some(
                f @ (ArchiveFormat::Tar
                | ArchiveFormat::TarGz
                | ArchiveFormat::TarXz
                | ArchiveFormat::TarZst),
            ) => f,
            _ => {
                return Err(run.error(
                    Fault::Unsupported(format!(
                        "the package's data member is not a tar archive compressed with gzip, \
                         xz or zstd (its first bytes: {}); unpack the package with dpkg-deb \
                         and name the tree it holds instead",
                        hex::encode(&sniffed.first_bytes)
                    )),
                    Some(name),
                ));
            }
        };
        let stream =
            format::decompressed(compression, data).map_err(|f| run.error(f, Some(name)))?;
        return pipe::pipelined(stream, |s| super::tar::unpack(run, s));
    }
    Err(run.error(
        Fault::Damaged(format!(
            "a .deb holds its tree in a data.tar.* member, and this one has none (it holds: {})",
            if members.is_empty() {
                "nothing".to_string()
            } else {
                members.join(", ")
            }
        )),
        None,
    ))
}

/// A package the ar reader refused: a name past the bound is no damage that
/// fetching again mends.
fn not_a_deb(e: std::io::Error) -> Fault {
    match HeaderRecordTooLarge::of(&e) {
        Some(record) => Fault::Unsupported(record.to_string()),
        None => Fault::Damaged(format!("not a valid .deb: {e}")),
    }
}
