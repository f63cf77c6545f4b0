//! The archive formats a dataset can come in. One type for the lab file, the
//! plan, the agent's `unpack --format` and the unpacker, told from a file's
//! name (what the lab says) and from its first bytes (what the file is), so
//! the two can be compared before anything is unpacked.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArchiveFormat {
    /// An uncompressed tar archive.
    Tar,
    /// tar compressed with gzip.
    TarGz,
    /// tar compressed with xz.
    TarXz,
    /// tar compressed with zstd.
    TarZst,
    /// A zip archive (stored or deflated entries).
    Zip,
    /// A Debian package: its `data.tar.*` member is the tree.
    Deb,
}

/// Bytes [`ArchiveFormat::sniff`] needs to tell every format (tar's magic
/// ends at offset 262).
pub const SNIFF_BYTES: usize = 512;

const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];
const XZ_MAGIC: &[u8] = &[0xfd, b'7', b'z', b'X', b'Z', 0x00];
const ZSTD_MAGIC: &[u8] = &[0x28, 0xb5, 0x2f, 0xfd];
/// A local file header; an empty zip starts with its end record instead.
const ZIP_MAGICS: [&[u8]; 2] = [b"PK\x03\x04", b"PK\x05\x06"];
/// An ar archive whose first member is `debian-binary` (dpkg-deb writes it
/// first, and a plain `ar` library is no package).
const DEB_MAGIC: &[u8] = b"!<arch>\ndebian-binary";
/// POSIX ustar and GNU tar both put "ustar" at offset 257.
const TAR_MAGIC_AT: usize = 257;
const TAR_MAGIC: &[u8] = b"ustar";

impl ArchiveFormat {
    pub const ALL: [ArchiveFormat; 6] = [
        ArchiveFormat::Tar,
        ArchiveFormat::TarGz,
        ArchiveFormat::TarXz,
        ArchiveFormat::TarZst,
        ArchiveFormat::Zip,
        ArchiveFormat::Deb,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ArchiveFormat::Tar => "tar",
            ArchiveFormat::TarGz => "tar-gz",
            ArchiveFormat::TarXz => "tar-xz",
            ArchiveFormat::TarZst => "tar-zst",
            ArchiveFormat::Zip => "zip",
            ArchiveFormat::Deb => "deb",
        }
    }

    /// What a person calls it in a message ("a tar.gz archive").
    pub fn describe(self) -> &'static str {
        match self {
            ArchiveFormat::Tar => "a tar archive",
            ArchiveFormat::TarGz => "a gzip-compressed (tar.gz) archive",
            ArchiveFormat::TarXz => "an xz-compressed (tar.xz) archive",
            ArchiveFormat::TarZst => "a zstd-compressed (tar.zst) archive",
            ArchiveFormat::Zip => "a zip archive",
            ArchiveFormat::Deb => "a Debian package (.deb)",
        }
    }

    /// The format a file's name says (case-insensitive): `.tar`, `.tar.gz`,
    /// `.tgz`, `.tar.xz`, `.txz`, `.tar.zst`, `.tzst`, `.zip`, `.deb`.
    pub fn from_file_name(name: &str) -> Option<ArchiveFormat> {
        const SUFFIXES: [(&str, ArchiveFormat); 9] = [
            (".tar.gz", ArchiveFormat::TarGz),
            (".tgz", ArchiveFormat::TarGz),
            (".tar.xz", ArchiveFormat::TarXz),
            (".txz", ArchiveFormat::TarXz),
            (".tar.zst", ArchiveFormat::TarZst),
            (".tzst", ArchiveFormat::TarZst),
            (".tar", ArchiveFormat::Tar),
            (".zip", ArchiveFormat::Zip),
            (".deb", ArchiveFormat::Deb),
        ];
        let lower = name.to_ascii_lowercase();
        SUFFIXES
            .iter()
            .find(|(suffix, _)| lower.ends_with(suffix) && lower.len() > suffix.len())
            .map(|&(_, format)| format)
    }

    /// The format a file's first bytes say (give it [`SNIFF_BYTES`], or
    /// the whole file if shorter). A compressed stream is taken for a
    /// compressed tar: what it holds is checked while it is unpacked.
    pub fn sniff(first_bytes: &[u8]) -> Option<ArchiveFormat> {
        let b = first_bytes;
        if b.starts_with(GZIP_MAGIC) {
            Some(ArchiveFormat::TarGz)
        } else if b.starts_with(XZ_MAGIC) {
            Some(ArchiveFormat::TarXz)
        } else if b.starts_with(ZSTD_MAGIC) {
            Some(ArchiveFormat::TarZst)
        } else if ZIP_MAGICS.iter().any(|m| b.starts_with(m)) {
            Some(ArchiveFormat::Zip)
        } else if b.starts_with(DEB_MAGIC) {
            Some(ArchiveFormat::Deb)
        } else if b.get(TAR_MAGIC_AT..TAR_MAGIC_AT + TAR_MAGIC.len()) == Some(TAR_MAGIC) {
            Some(ArchiveFormat::Tar)
        } else {
            None
        }
    }
}

impl fmt::Display for ArchiveFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown format name, with the names there are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownArchiveFormat(pub String);

impl fmt::Display for UnknownArchiveFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = ArchiveFormat::ALL.iter().map(|p| p.as_str()).collect();
        write!(
            f,
            "unknown archive format `{}`: use one of {}",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownArchiveFormat {}

impl FromStr for ArchiveFormat {
    type Err = UnknownArchiveFormat;
    fn from_str(s: &str) -> Result<ArchiveFormat, UnknownArchiveFormat> {
        ArchiveFormat::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| UnknownArchiveFormat(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_name_their_format() {
        let cases = [
            ("linux-6.1.tar.gz", Some(ArchiveFormat::TarGz)),
            ("x.TGZ", Some(ArchiveFormat::TarGz)),
            ("x.tar.xz", Some(ArchiveFormat::TarXz)),
            ("x.txz", Some(ArchiveFormat::TarXz)),
            ("x.tar.zst", Some(ArchiveFormat::TarZst)),
            ("x.tzst", Some(ArchiveFormat::TarZst)),
            ("x.tar", Some(ArchiveFormat::Tar)),
            ("x.zip", Some(ArchiveFormat::Zip)),
            (
                "linux-source-6.1_6.1.170-1_all.deb",
                Some(ArchiveFormat::Deb),
            ),
            ("x.gz", None),
            ("x.tar.bz2", None),
            (".tar", None),
            ("tar", None),
        ];
        for (name, want) in cases {
            assert_eq!(ArchiveFormat::from_file_name(name), want, "{name}");
        }
    }

    #[test]
    fn magic_bytes_name_their_format() {
        let mut tar = vec![0u8; 512];
        tar[257..263].copy_from_slice(b"ustar\0");
        let cases: [(&[u8], Option<ArchiveFormat>); 8] = [
            (&tar, Some(ArchiveFormat::Tar)),
            (&[0x1f, 0x8b, 8, 0], Some(ArchiveFormat::TarGz)),
            (b"\xfd7zXZ\0\0\x04", Some(ArchiveFormat::TarXz)),
            (&[0x28, 0xb5, 0x2f, 0xfd, 0], Some(ArchiveFormat::TarZst)),
            (b"PK\x03\x04\x14\0", Some(ArchiveFormat::Zip)),
            (b"!<arch>\ndebian-binary   ", Some(ArchiveFormat::Deb)),
            (b"!<arch>\nlibfoo.o/", None),
            (b"", None),
        ];
        for (bytes, want) in cases {
            assert_eq!(ArchiveFormat::sniff(bytes), want, "{bytes:?}");
        }
        // Too short to hold tar's magic.
        assert_eq!(ArchiveFormat::sniff(&tar[..260]), None);
    }

    #[test]
    fn names_round_trip_through_serde_and_from_str() {
        for f in ArchiveFormat::ALL {
            let json = serde_json::to_string(&f).unwrap();
            assert_eq!(json, format!("\"{}\"", f.as_str()));
            assert_eq!(serde_json::from_str::<ArchiveFormat>(&json).unwrap(), f);
            assert_eq!(f.as_str().parse::<ArchiveFormat>().unwrap(), f);
        }
        assert!(serde_json::from_str::<ArchiveFormat>("\"rar\"").is_err());
        let e = "rar".parse::<ArchiveFormat>().unwrap_err().to_string();
        assert!(e.contains("rar") && e.contains("tar-gz"), "{e}");
    }
}
