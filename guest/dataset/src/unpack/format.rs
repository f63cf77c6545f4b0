//! The declared format against the file's magic bytes, and the decompressor
//! for each compressed tar (the same crates the host's artifact cache uses).

use super::Fault;
use labrun_evidence::ArchiveFormat;
use labrun_evidence::archive_format::SNIFF_BYTES;
use std::io::{self, BufRead, Read};

/// What the file's first bytes are, and those bytes (a few, for the
/// message when they are no known format).
pub(super) struct Sniffed {
    pub found: Option<ArchiveFormat>,
    pub first_bytes: Vec<u8>,
}

/// Reads the first [`SNIFF_BYTES`] of `reader` (fewer at its end) and
/// tells their format. Reads until it has them: one read of an archive
/// member may return only what a buffer beneath it held.
pub(super) fn sniff(reader: &mut impl Read) -> io::Result<(Sniffed, Vec<u8>)> {
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    reader.take(SNIFF_BYTES as u64).read_to_end(&mut head)?;
    let sniffed = Sniffed {
        found: ArchiveFormat::sniff(&head),
        first_bytes: head[..head.len().min(8)].to_vec(),
    };
    Ok((sniffed, head))
}

/// A tar stream: `source` decompressed as `format` says.
pub(super) fn decompressed<'a, R: BufRead + Send + 'a>(
    format: ArchiveFormat,
    source: R,
) -> Result<Box<dyn Read + Send + 'a>, Fault> {
    Ok(match format {
        ArchiveFormat::Tar => Box::new(source),
        ArchiveFormat::TarGz => Box::new(flate2::bufread::MultiGzDecoder::new(source)),
        ArchiveFormat::TarXz => Box::new(liblzma::bufread::XzDecoder::new_multi_decoder(source)),
        ArchiveFormat::TarZst => Box::new(
            zstd::stream::read::Decoder::with_buffer(source)
                .map_err(|e| Fault::Damaged(format!("cannot start zstd: {e}")))?,
        ),
        ArchiveFormat::Zip | ArchiveFormat::Deb => {
            return Err(Fault::Unsupported(format!(
                "{} is no compressed tar",
                format.describe()
            )));
        }
    })
}
