//! Unpacking dataset archives: every format round trip, and each hostile
//! input the unpacker refuses, with an archive each test makes itself.

use labrun_dataset::{DatasetError, UnpackBound, UnpackLimits, Unpacked, list_file, unpack_file};
use labrun_evidence::ArchiveFormat;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

const ROOMY: UnpackLimits = UnpackLimits {
    max_bytes: 1 << 30,
    max_entries: 1_000_000,
};
const MTIME: u64 = 1_700_000_000;

// ---------- making archives ----------

/// One tar entry, written with raw header fields so a test can make what a
/// careful tar writer would refuse to.
enum E<'a> {
    File(&'a [u8], u32, &'a [u8]),
    Dir(&'a [u8], u32),
    Symlink(&'a [u8], &'a [u8]),
    HardLink(&'a [u8], &'a [u8]),
    Special(&'a [u8], tar::EntryType),
    /// A file header declaring `size` bytes, with only `data` after it.
    Declared(&'a [u8], u64, &'a [u8]),
}

fn header(name: &[u8], kind: tar::EntryType, mode: u32, size: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.as_old_mut().name[..name.len()].copy_from_slice(name);
    h.set_entry_type(kind);
    h.set_mode(mode);
    h.set_size(size);
    h.set_mtime(MTIME);
    h
}

fn tar_bytes(entries: &[E]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for e in entries {
        let (mut h, data): (tar::Header, &[u8]) = match e {
            E::File(n, mode, data) => (
                header(n, tar::EntryType::Regular, *mode, data.len() as u64),
                data,
            ),
            E::Dir(n, mode) => (header(n, tar::EntryType::Directory, *mode, 0), b""),
            E::Symlink(n, t) | E::HardLink(n, t) => {
                let kind = if matches!(e, E::Symlink(..)) {
                    tar::EntryType::Symlink
                } else {
                    tar::EntryType::Link
                };
                let mut h = header(n, kind, 0o777, 0);
                h.set_link_name_literal(t).unwrap();
                (h, b"")
            }
            E::Special(n, kind) => (header(n, *kind, 0o644, 0), b""),
            E::Declared(n, size, data) => {
                let mut h = header(n, tar::EntryType::Regular, 0o644, *size);
                h.set_cksum();
                // Raw: append would write `size` bytes.
                b.get_mut().extend_from_slice(h.as_bytes());
                b.get_mut().extend_from_slice(data);
                continue;
            }
        };
        h.set_cksum();
        b.append(&h, data).unwrap();
    }
    b.into_inner().unwrap()
}

fn compress(format: ArchiveFormat, tar: &[u8]) -> Vec<u8> {
    match format {
        ArchiveFormat::Tar => tar.to_vec(),
        ArchiveFormat::TarGz => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(tar).unwrap();
            e.finish().unwrap()
        }
        ArchiveFormat::TarXz => {
            let mut e = liblzma::write::XzEncoder::new(Vec::new(), 1);
            e.write_all(tar).unwrap();
            e.finish().unwrap()
        }
        ArchiveFormat::TarZst => {
            // With its checksum, as the zstd tool writes by default.
            let mut e = zstd::stream::Encoder::new(Vec::new(), 1).unwrap();
            e.include_checksum(true).unwrap();
            e.write_all(tar).unwrap();
            e.finish().unwrap()
        }
        ArchiveFormat::Deb => deb_bytes(&[
            ("debian-binary", b"2.0\n".to_vec()),
            (
                "control.tar.xz",
                compress(ArchiveFormat::TarXz, &tar_bytes(&[])),
            ),
            ("data.tar.xz", compress(ArchiveFormat::TarXz, tar)),
        ]),
        ArchiveFormat::Zip => unreachable!("zip archives are made by zip_bytes"),
    }
}

fn deb_bytes(members: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut b = ar::Builder::new(Vec::new());
    for (name, data) in members {
        let h = ar::Header::new(name.as_bytes().to_vec(), data.len() as u64);
        b.append(&h, &data[..]).unwrap();
    }
    b.into_inner().unwrap()
}

enum Z<'a> {
    File(&'a str, u32, &'a [u8]),
    Dir(&'a str),
    Symlink(&'a str, &'a str),
}

fn zip_bytes(entries: &[Z]) -> Vec<u8> {
    use zip::write::SimpleFileOptions;
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .last_modified_time(zip::DateTime::from_date_and_time(2023, 11, 14, 22, 13, 20).unwrap());
    for e in entries {
        match e {
            Z::File(n, mode, data) => {
                w.start_file(*n, opts.unix_permissions(*mode)).unwrap();
                w.write_all(data).unwrap();
            }
            Z::Dir(n) => w.add_directory(*n, opts).unwrap(),
            Z::Symlink(n, t) => w.add_symlink(*n, *t, opts).unwrap(),
        }
    }
    w.finish().unwrap().into_inner()
}

// ---------- running ----------

struct Case {
    _dir: tempfile::TempDir,
    archive: PathBuf,
    dest: PathBuf,
    /// A folder beside the tree: nothing may ever appear in it.
    outside: PathBuf,
}

fn case(file_name: &str, bytes: &[u8]) -> Case {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join(file_name);
    fs::write(&archive, bytes).unwrap();
    let outside = dir.path().join("outside");
    fs::create_dir(&outside).unwrap();
    Case {
        dest: dir.path().join("tree"),
        archive,
        outside,
        _dir: dir,
    }
}

impl Case {
    fn unpack(
        &self,
        format: ArchiveFormat,
        limits: UnpackLimits,
    ) -> Result<Unpacked, DatasetError> {
        unpack_file(&self.archive, format, &self.dest, limits, &mut |_, _| {})
    }

    /// Unpacking fails, writes nothing outside; returns the message.
    fn refused(&self, format: ArchiveFormat) -> (DatasetError, String) {
        let e = self
            .unpack(format, ROOMY)
            .expect_err("the unpack should be refused");
        let msg = e.to_string();
        assert!(
            msg.contains(&self.archive.display().to_string()),
            "the message names the archive: {msg}"
        );
        assert_eq!(
            fs::read_dir(&self.outside).unwrap().count(),
            0,
            "nothing written outside the tree"
        );
        (e, msg)
    }
}

fn tar_case(format: ArchiveFormat, entries: &[E]) -> Case {
    let name = match format {
        ArchiveFormat::Tar => "a.tar",
        ArchiveFormat::TarGz => "a.tar.gz",
        ArchiveFormat::TarXz => "a.tar.xz",
        ArchiveFormat::TarZst => "a.tar.zst",
        ArchiveFormat::Deb => "a.deb",
        ArchiveFormat::Zip => "a.zip",
    };
    case(name, &compress(format, &tar_bytes(entries)))
}

/// Bytes no compressor shrinks (xorshift), so a cut lands in real data.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn mode_of(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

// ---------- round trips ----------

const TAR_FORMATS: [ArchiveFormat; 5] = [
    ArchiveFormat::Tar,
    ArchiveFormat::TarGz,
    ArchiveFormat::TarXz,
    ArchiveFormat::TarZst,
    ArchiveFormat::Deb,
];

#[test]
fn every_tar_format_unpacks_the_whole_tree_with_modes_and_mtimes() {
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let entries = [
        E::Dir(b"./", 0o755),
        E::Dir(b"./src/", 0o750),
        E::File(b"./src/main.c", 0o644, b"int main;\n"),
        E::File(b"./src/run.sh", 0o4755, b"#!/bin/sh\n"),
        E::File(b"./big.bin", 0o600, &big),
        E::File(
            b"./deep/er/implied.txt",
            0o444,
            b"made in folders no entry lists",
        ),
        E::Dir(b"./empty/", 0o700),
        E::Symlink(b"./src/latest", b"main.c"),
        E::Symlink(b"./deep/er/up", b"../../src/main.c"),
        E::HardLink(b"./src/main-again.c", b"./src/main.c"),
        E::File(b"./caf\xc3\xa9 \xe2\x98\x95.txt", 0o644, b"utf-8 names"),
    ];
    for format in TAR_FORMATS {
        let c = tar_case(format, &entries);
        let mut calls = 0;
        let mut last = (0, 0);
        let got = unpack_file(&c.archive, format, &c.dest, ROOMY, &mut |done, total| {
            calls += 1;
            last = (done, total);
        })
        .unwrap_or_else(|e| panic!("{format}: {e}"));
        assert_eq!(
            got,
            Unpacked {
                files: 5,
                dirs: 4, // src, deep, deep/er, empty ("./" is the root itself)
                symlinks: 2,
                hard_links: 1,
                bytes: 10 + 10 + big.len() as u64 + 30 + 11,
                skipped_special: 0,
            },
            "{format}"
        );
        assert!(
            calls >= 1 && last.0 <= last.1,
            "{format}: progress {last:?}"
        );
        let d = &c.dest;
        assert_eq!(fs::read(d.join("big.bin")).unwrap(), big, "{format}");
        assert_eq!(fs::read(d.join("src/main.c")).unwrap(), b"int main;\n");
        assert_eq!(
            fs::read_link(d.join("src/latest")).unwrap(),
            Path::new("main.c")
        );
        assert_eq!(fs::read(d.join("deep/er/up")).unwrap(), b"int main;\n");
        assert_eq!(
            fs::metadata(d.join("src/main-again.c")).unwrap().ino(),
            fs::metadata(d.join("src/main.c")).unwrap().ino(),
            "{format}: a hard link, not a copy"
        );
        assert!(d.join("caf\u{e9} \u{2615}.txt").is_file());
        // Permission bits kept, setuid dropped; listed folders keep theirs.
        assert_eq!(mode_of(&d.join("src/run.sh")), 0o755, "{format}");
        assert_eq!(mode_of(&d.join("big.bin")), 0o600);
        assert_eq!(mode_of(&d.join("deep/er/implied.txt")), 0o444);
        assert_eq!(mode_of(&d.join("src")), 0o750);
        assert_eq!(mode_of(&d.join("empty")), 0o700);
        // mtimes kept, folders' too (set after their entries were written).
        for p in ["src/main.c", "big.bin", "src", "empty", "."] {
            assert_eq!(
                fs::metadata(d.join(p)).unwrap().mtime(),
                MTIME as i64,
                "{format} {p}"
            );
        }
        assert_eq!(
            fs::symlink_metadata(d.join("src/latest")).unwrap().mtime(),
            MTIME as i64
        );
    }
}

#[test]
fn a_zip_unpacks_with_modes_links_and_mtimes() {
    let zeros = vec![0u8; 2_000_000];
    let c = case(
        "a.zip",
        &zip_bytes(&[
            Z::Dir("docs/"),
            Z::File("docs/readme.txt", 0o644, b"hello"),
            Z::File("bin/tool", 0o6755, b"\x7fELF"),
            Z::File("zeros.bin", 0o600, &zeros),
            Z::Symlink("docs/link", "readme.txt"),
        ]),
    );
    let got = c.unpack(ArchiveFormat::Zip, ROOMY).unwrap();
    assert_eq!(
        got,
        Unpacked {
            files: 3,
            dirs: 2,
            symlinks: 1,
            hard_links: 0,
            bytes: 5 + 4 + 2_000_000,
            skipped_special: 0
        }
    );
    let d = &c.dest;
    assert_eq!(fs::read(d.join("docs/link")).unwrap(), b"hello");
    assert_eq!(fs::read(d.join("zeros.bin")).unwrap(), zeros);
    assert_eq!(
        mode_of(&d.join("bin/tool")),
        0o755,
        "setuid and setgid dropped"
    );
    assert_eq!(mode_of(&d.join("zeros.bin")), 0o600);
    // 2023-11-14 22:13:20 UTC, as a DOS time (the writer adds no
    // extended timestamp).
    for p in ["docs/readme.txt", "zeros.bin", "docs"] {
        assert_eq!(
            fs::metadata(d.join(p)).unwrap().mtime(),
            MTIME as i64,
            "{p}"
        );
    }
}

#[test]
fn the_destination_is_made_and_must_be_empty() {
    let c = tar_case(ArchiveFormat::Tar, &[E::File(b"f", 0o644, b"x")]);
    fs::create_dir(&c.dest).unwrap();
    fs::write(c.dest.join("old"), b"").unwrap();
    let e = c.unpack(ArchiveFormat::Tar, ROOMY).unwrap_err();
    assert!(matches!(e, DatasetError::UnpackDestNotEmpty { .. }), "{e}");
    assert!(e.to_string().contains(&c.dest.display().to_string()), "{e}");
    fs::remove_file(c.dest.join("old")).unwrap();
    assert_eq!(c.unpack(ArchiveFormat::Tar, ROOMY).unwrap().files, 1);
    let nested = tar_case(ArchiveFormat::Tar, &[E::File(b"f", 0o644, b"x")]);
    let deep = nested.dest.join("a/b");
    unpack_file(
        &nested.archive,
        ArchiveFormat::Tar,
        &deep,
        ROOMY,
        &mut |_, _| {},
    )
    .unwrap();
    assert!(deep.join("f").is_file());
}

#[test]
fn a_later_entry_replaces_a_file_but_never_a_folder() {
    let c = tar_case(
        ArchiveFormat::Tar,
        &[
            E::File(b"f", 0o644, b"first"),
            E::File(b"f", 0o644, b"second"),
            E::Symlink(b"l", b"f"),
            E::File(b"l", 0o644, b"a file where the link was"),
        ],
    );
    c.unpack(ArchiveFormat::Tar, ROOMY).unwrap();
    assert_eq!(fs::read(c.dest.join("f")).unwrap(), b"second");
    assert!(fs::symlink_metadata(c.dest.join("l")).unwrap().is_file());

    let c = tar_case(
        ArchiveFormat::Tar,
        &[E::Dir(b"d/", 0o755), E::File(b"d", 0o644, b"x")],
    );
    let (e, msg) = c.refused(ArchiveFormat::Tar);
    assert!(matches!(e, DatasetError::ArchiveDamaged { .. }), "{msg}");
    assert!(msg.contains("entry `d`"), "{msg}");
}

// ---------- the declared format ----------

#[test]
fn a_format_that_is_not_what_the_file_is_is_refused_naming_both() {
    let zip = zip_bytes(&[Z::File("f", 0o644, b"x")]);
    let c = case("x.tar.gz", &zip);
    let (e, msg) = c.refused(ArchiveFormat::TarGz);
    assert!(
        matches!(e, DatasetError::ArchiveFormatMismatch { .. }),
        "{msg}"
    );
    assert!(
        msg.contains("tar.gz") && msg.contains("zip archive"),
        "{msg}"
    );
    assert!(!c.dest.exists(), "nothing made before the check");

    let c = case("x.tar", b"just some text, not an archive at all");
    let (_, msg) = c.refused(ArchiveFormat::Tar);
    assert!(
        msg.contains("first bytes") && msg.contains("6a75737420736f6d"),
        "{msg}"
    );

    let c = case("x.zip", b"");
    let (_, msg) = c.refused(ArchiveFormat::Zip);
    assert!(msg.contains("it is empty"), "{msg}");

    // A plain ar archive is no .deb.
    let c = case("x.deb", &deb_bytes(&[("libx.o", b"x".to_vec())]));
    let (e, _) = c.refused(ArchiveFormat::Deb);
    assert!(matches!(e, DatasetError::ArchiveFormatMismatch { .. }));
}

// ---------- damaged archives ----------

#[test]
fn truncated_and_corrupt_archives_are_errors_never_short_trees() {
    let data = noise(200_000, 7);
    let entries = [E::File(b"one", 0o644, &data), E::File(b"two", 0o644, &data)];
    let tar = tar_bytes(&entries);
    for format in TAR_FORMATS {
        let whole = compress(format, &tar);
        // A plain tar's tail is padding: cut into its data instead.
        let cuts = if format == ArchiveFormat::Tar {
            vec![whole.len() / 2, 512 * 3]
        } else {
            vec![whole.len() / 2, whole.len() - 1, whole.len() - 700]
        };
        for cut in cuts {
            let c = case("cut", &whole[..cut]);
            let (e, msg) = c.refused(format);
            assert!(
                matches!(e, DatasetError::ArchiveDamaged { .. }),
                "{format} cut at {cut}: {msg}"
            );
        }
        let mut flipped = whole.clone();
        // A plain tar checks only its headers: flip the second one.
        let at = if format == ArchiveFormat::Tar {
            512 + 200_192
        } else {
            flipped.len() * 2 / 3
        };
        for b in &mut flipped[at..at + 16] {
            *b ^= 0x5a;
        }
        let c = case("flipped", &flipped);
        let (e, msg) = c.refused(format);
        assert!(
            matches!(
                e,
                DatasetError::ArchiveDamaged { .. } | DatasetError::ArchiveUnsupported { .. }
            ),
            "{format} corrupt: {msg}"
        );
    }
    // A plain tar cut exactly between two entries: no end-of-archive marker.
    let first = tar_bytes(&[E::File(b"one", 0o644, &data)]);
    let c = case("a.tar", &first[..first.len() - 1024]);
    let (_, msg) = c.refused(ArchiveFormat::Tar);
    assert!(
        msg.contains("end-of-archive") && msg.contains("after entry `one`"),
        "{msg}"
    );
    // Cut inside an entry's data: the entry is named.
    let c = case("a.tar", &tar[..512 + 1000]);
    let (_, msg) = c.refused(ArchiveFormat::Tar);
    assert!(
        msg.contains("entry `one`") && msg.contains("1000 of the 200000"),
        "{msg}"
    );

    let zip = zip_bytes(&[Z::File("f", 0o644, &data), Z::File("g", 0o644, &data)]);
    for cut in [zip.len() / 2, zip.len() - 10] {
        let c = case("a.zip", &zip[..cut]);
        let (e, msg) = c.refused(ArchiveFormat::Zip);
        assert!(matches!(e, DatasetError::ArchiveDamaged { .. }), "{msg}");
    }
    let mut corrupt = zip.clone();
    corrupt[100..140].fill(0);
    let c = case("a.zip", &corrupt);
    let (_, msg) = c.refused(ArchiveFormat::Zip);
    assert!(msg.contains("entry `f`"), "{msg}");
}

#[test]
fn a_deb_without_its_data_member_or_with_an_unknown_one_is_refused() {
    let c = case(
        "a.deb",
        &deb_bytes(&[
            ("debian-binary", b"2.0\n".to_vec()),
            ("control.tar.xz", vec![]),
        ]),
    );
    let (_, msg) = c.refused(ArchiveFormat::Deb);
    assert!(
        msg.contains("data.tar") && msg.contains("control.tar.xz"),
        "{msg}"
    );
    let c = case(
        "a.deb",
        &deb_bytes(&[
            ("debian-binary", b"2.0\n".to_vec()),
            ("data.tar.bz2", b"BZh91AY&SY".to_vec()),
        ]),
    );
    let (e, msg) = c.refused(ArchiveFormat::Deb);
    assert!(
        matches!(e, DatasetError::ArchiveUnsupported { .. }),
        "{msg}"
    );
    assert!(
        msg.contains("data.tar.bz2") && msg.contains("dpkg-deb"),
        "{msg}"
    );
}

// ---------- never outside the tree ----------

#[test]
fn entries_that_would_write_outside_the_tree_are_refused_by_name() {
    let cases: &[(&[E], &str, &str)] = &[
        (&[E::File(b"../escape", 0o644, b"x")], "../escape", "`..`"),
        (
            &[E::File(b"a/../../escape", 0o644, b"x")],
            "a/../../escape",
            "`..`",
        ),
        (
            &[E::File(b"/tmp/escape", 0o644, b"x")],
            "/tmp/escape",
            "absolute",
        ),
        (
            &[E::Symlink(b"etc", b"/etc")],
            "etc",
            "absolute path `/etc`",
        ),
        (&[E::Symlink(b"a/up", b"../../x")], "a/up", "above the tree"),
        (&[E::Symlink(b"up", b"..")], "up", "above the tree"),
        // r -> . reads as staying, but r/.. is the tree's parent.
        (
            &[E::Symlink(b"r", b"."), E::Symlink(b"l", b"r/..")],
            "l",
            "`..` after a name",
        ),
        (&[E::HardLink(b"h", b"../outside/x")], "h", "`..`"),
        (&[E::HardLink(b"h", b"/etc/passwd")], "h", "absolute"),
        // The classic: plant a link, then write through it. The link itself
        // points inside, so only the write is refused.
        (
            &[
                E::Dir(b"real/", 0o755),
                E::Symlink(b"a", b"real"),
                E::File(b"a/passwd", 0o644, b"x"),
            ],
            "a/passwd",
            "through `a`",
        ),
        (
            &[
                E::Dir(b"real/", 0o755),
                E::Symlink(b"a", b"real"),
                E::Dir(b"a/", 0o755),
            ],
            "a/",
            "symbolic link",
        ),
        (
            &[
                E::Dir(b"d/real/", 0o755),
                E::Symlink(b"d/a", b"real"),
                E::HardLink(b"h", b"d/a/x"),
            ],
            "h",
            "through `d/a`",
        ),
    ];
    for (entries, entry, why) in cases {
        for format in [ArchiveFormat::Tar, ArchiveFormat::TarGz] {
            let c = tar_case(format, entries);
            let (e, msg) = c.refused(format);
            assert!(
                matches!(e, DatasetError::UnsafeEntry { .. }),
                "{entry}: {msg}"
            );
            assert!(msg.contains(&format!("entry `{entry}`")), "{msg}");
            assert!(msg.contains(why), "{entry}: want {why:?} in {msg}");
            assert!(!c.dest.join("real/passwd").exists());
        }
    }
}

#[test]
fn zip_entries_that_would_leave_the_tree_are_refused() {
    for (entries, entry) in [
        (vec![Z::File("../../escape", 0o644, b"x")], "../../escape"),
        (vec![Z::Symlink("l", "/etc/passwd")], "l"),
        (vec![Z::Symlink("d", "."), Z::Symlink("e", "d/../..")], "e"),
    ] {
        let c = case("a.zip", &zip_bytes(&entries));
        let (e, msg) = c.refused(ArchiveFormat::Zip);
        assert!(matches!(e, DatasetError::UnsafeEntry { .. }), "{msg}");
        assert!(msg.contains(&format!("entry `{entry}`")), "{msg}");
    }
}

#[test]
fn devices_fifos_and_sockets_are_skipped_and_counted() {
    let c = tar_case(
        ArchiveFormat::Tar,
        &[
            E::Special(b"dev/null", tar::EntryType::Char),
            E::Special(b"dev/sda", tar::EntryType::Block),
            E::Special(b"pipe", tar::EntryType::Fifo),
            E::File(b"f", 0o644, b"x"),
        ],
    );
    let got = c.unpack(ArchiveFormat::Tar, ROOMY).unwrap();
    assert_eq!(got.skipped_special, 3);
    assert_eq!(got.files, 1);
    assert!(!c.dest.join("pipe").exists() && !c.dest.join("dev/null").exists());
}

#[test]
fn names_that_are_not_utf8_are_refused_naming_the_entry() {
    let c = tar_case(ArchiveFormat::Tar, &[E::File(b"caf\xe9.txt", 0o644, b"x")]);
    let (e, msg) = c.refused(ArchiveFormat::Tar);
    assert!(matches!(e, DatasetError::NonUtf8EntryName { .. }), "{msg}");
    assert!(
        msg.contains("caf\u{fffd}.txt") && msg.contains("manifests"),
        "{msg}"
    );

    let c = tar_case(ArchiveFormat::Tar, &[E::Symlink(b"l", b"\xff\xfe")]);
    let (_, msg) = c.refused(ArchiveFormat::Tar);
    assert!(
        msg.contains("entry `l`") && msg.contains("link target"),
        "{msg}"
    );
}

// ---------- bounds ----------

#[test]
fn an_archive_bomb_stops_at_the_bound_saying_how_to_raise_it() {
    // 50 MB of zeros: a few kB of gzip.
    let zeros = vec![0u8; 50_000_000];
    let c = tar_case(
        ArchiveFormat::TarGz,
        &[
            E::File(b"small", 0o644, b"0123456789"),
            E::File(b"bomb", 0o644, &zeros),
        ],
    );
    assert!(fs::metadata(&c.archive).unwrap().len() < 1_000_000);
    let limits = UnpackLimits {
        max_bytes: 1_000_000,
        max_entries: 100,
    };
    let e = c.unpack(ArchiveFormat::TarGz, limits).unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(
            e,
            DatasetError::ArchiveTooLarge {
                bound: UnpackBound::Bytes(1_000_000),
                ..
            }
        ),
        "{msg}"
    );
    assert!(
        msg.contains("entry `bomb`") && msg.contains("--max-bytes"),
        "{msg}"
    );
    assert!(!c.dest.join("bomb").exists(), "stopped before writing it");

    // A header may declare a huge (or sparse) size: it counts as declared,
    // and stops the unpack before any of it is read.
    let c = tar_case(ArchiveFormat::Tar, &[E::Declared(b"huge", 1 << 40, b"")]);
    let (e, msg) = c.refused(ArchiveFormat::Tar);
    assert!(matches!(e, DatasetError::ArchiveTooLarge { .. }), "{msg}");

    let zip = zip_bytes(&[Z::File("bomb", 0o644, &zeros)]);
    let c = case("a.zip", &zip);
    let e = c.unpack(ArchiveFormat::Zip, limits).unwrap_err();
    assert!(matches!(e, DatasetError::ArchiveTooLarge { .. }), "{e}");
}

#[test]
fn too_many_entries_stop_at_the_first_past_the_bound() {
    let names: Vec<Vec<u8>> = (0..10).map(|i| format!("f{i}").into_bytes()).collect();
    let entries: Vec<E> = names.iter().map(|n| E::File(n, 0o644, b"")).collect();
    let c = tar_case(ArchiveFormat::TarZst, &entries);
    let limits = UnpackLimits {
        max_bytes: 1 << 20,
        max_entries: 4,
    };
    let e = c.unpack(ArchiveFormat::TarZst, limits).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("entry `f4`") && msg.contains("more than 4 entries"),
        "{msg}"
    );
    assert!(msg.contains("--max-entries"), "{msg}");
    assert_eq!(fs::read_dir(&c.dest).unwrap().count(), 4);
    // Exactly at the bound is fine.
    let c = tar_case(ArchiveFormat::TarZst, &entries[..4]);
    assert_eq!(c.unpack(ArchiveFormat::TarZst, limits).unwrap().files, 4);
}

#[test]
fn the_byte_bound_is_exact() {
    let c = tar_case(ArchiveFormat::Tar, &[E::File(b"f", 0o644, b"0123456789")]);
    let at = |max_bytes| UnpackLimits {
        max_bytes,
        max_entries: 10,
    };
    assert!(c.unpack(ArchiveFormat::Tar, at(9)).is_err());
    fs::remove_dir_all(&c.dest).unwrap();
    assert_eq!(c.unpack(ArchiveFormat::Tar, at(10)).unwrap().bytes, 10);
}

#[test]
fn a_deb_data_member_may_be_plain_gz_xz_or_zst() {
    let tar = tar_bytes(&[E::File(b"./usr/share/doc/x/copyright", 0o644, b"MIT")]);
    for (member, format) in [
        ("data.tar", ArchiveFormat::Tar),
        ("data.tar.gz", ArchiveFormat::TarGz),
        ("data.tar.zst", ArchiveFormat::TarZst),
    ] {
        let c = case(
            "x.deb",
            &deb_bytes(&[
                ("debian-binary", b"2.0\n".to_vec()),
                // Odd-sized, so the data member starts at a padded offset.
                ("control.tar.gz", compress(ArchiveFormat::TarGz, b"odd")),
                (member, compress(format, &tar)),
            ]),
        );
        let got = c.unpack(ArchiveFormat::Deb, ROOMY).unwrap();
        assert_eq!((got.files, got.bytes), (1, 3), "{member}");
        assert_eq!(
            fs::read(c.dest.join("usr/share/doc/x/copyright")).unwrap(),
            b"MIT"
        );
    }
}

#[test]
fn a_sparse_file_counts_its_holes_toward_the_bound() {
    // GNU tar stores a sparse file's data regions only: 1 GiB in a few kB.
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir(&src).unwrap();
    let f = fs::File::create(src.join("disk.img")).unwrap();
    f.set_len(1 << 30).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, b"boot", 4096).unwrap();
    let archive = dir.path().join("sparse.tar");
    let o = std::process::Command::new("tar")
        .args(["--sparse", "-cf"])
        .arg(&archive)
        .arg("-C")
        .arg(&src)
        .arg(".")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(fs::metadata(&archive).unwrap().len() < 1 << 20);
    let limits = UnpackLimits {
        max_bytes: 100 << 20,
        max_entries: 10,
    };
    let e = unpack_file(
        &archive,
        ArchiveFormat::Tar,
        &dir.path().join("t"),
        limits,
        &mut |_, _| {},
    )
    .unwrap_err();
    assert!(
        matches!(e, DatasetError::ArchiveTooLarge { .. }) && e.to_string().contains("disk.img"),
        "{e}"
    );
}

#[test]
fn what_the_archive_says_is_shown_escaped_and_short() {
    // A name that would clear a terminal.
    let c = tar_case(ArchiveFormat::Tar, &[E::File(b"\x1b[2J/../x", 0o644, b"x")]);
    let (_, msg) = c.refused(ArchiveFormat::Tar);
    assert!(
        !msg.contains('\x1b') && msg.contains("\\x1b[2J/../x"),
        "{msg}"
    );
    // Not a tar inside the gzip: the tar reader's words quote the bytes.
    let c = case(
        "a.tar.gz",
        &compress(ArchiveFormat::TarGz, &noise(30_000, 3)),
    );
    let (e, msg) = c.refused(ArchiveFormat::TarGz);
    assert!(matches!(e, DatasetError::ArchiveDamaged { .. }), "{msg}");
    assert!(msg.chars().all(|ch| !ch.is_control()), "{msg:?}");
    assert!(msg.len() < 1000, "{msg}");
}

// ---------- listing (what `labrun check` says before anything boots) ----------

#[test]
fn a_listing_counts_what_the_unpack_makes_and_writes_nothing() {
    let big = noise(300_000, 3);
    let entries = [
        E::Dir(b"./", 0o755),
        E::File(b"./src/main.c", 0o644, b"int main;\n"),
        E::File(b"./big.bin", 0o600, &big),
        E::File(b"./deep/er/implied.txt", 0o444, b"implied folders"),
        E::Dir(b"./empty/", 0o700),
        E::Dir(b"./src/", 0o750),
        E::Symlink(b"./src/latest", b"main.c"),
        E::HardLink(b"./src/again.c", b"./src/main.c"),
        E::Special(b"./fifo", tar::EntryType::Fifo),
    ];
    for format in TAR_FORMATS {
        let c = tar_case(format, &entries);
        let listed = list_file(&c.archive, format, ROOMY).unwrap_or_else(|e| panic!("{e}"));
        assert!(!c.dest.exists(), "{format}: a listing writes nothing");
        let unpacked = c.unpack(format, ROOMY).unwrap();
        assert_eq!(listed, unpacked, "{format}");
        assert_eq!((listed.files, listed.dirs), (3, 4), "{format}");
    }
    let c = case(
        "a.zip",
        &zip_bytes(&[
            Z::Dir("docs/"),
            Z::File("docs/readme.txt", 0o644, b"hello"),
            Z::File("a/b/c.bin", 0o644, &big),
        ]),
    );
    let listed = list_file(&c.archive, ArchiveFormat::Zip, ROOMY).unwrap();
    assert_eq!(listed, c.unpack(ArchiveFormat::Zip, ROOMY).unwrap());
    assert_eq!(listed.bytes, 5 + big.len() as u64);
}

#[test]
fn a_listing_refuses_what_the_unpack_refuses_naming_the_entry() {
    let c = tar_case(
        ArchiveFormat::TarGz,
        &[E::File(b"a/../../escape", 0o644, b"x")],
    );
    let e = list_file(&c.archive, ArchiveFormat::TarGz, ROOMY).unwrap_err();
    assert!(matches!(e, DatasetError::UnsafeEntry { .. }), "{e}");
    assert!(e.to_string().contains("entry `a/../../escape`"), "{e}");

    let c = tar_case(ArchiveFormat::Tar, &[E::Declared(b"huge", 1 << 40, b"")]);
    let e = list_file(&c.archive, ArchiveFormat::Tar, ROOMY).unwrap_err();
    assert!(matches!(e, DatasetError::ArchiveTooLarge { .. }), "{e}");

    let tar = tar_bytes(&[E::File(b"data", 0o644, &noise(200_000, 9))]);
    let gz = compress(ArchiveFormat::TarGz, &tar);
    let c = case("cut.tar.gz", &gz[..gz.len() / 2]);
    let e = list_file(&c.archive, ArchiveFormat::TarGz, ROOMY).unwrap_err();
    assert!(matches!(e, DatasetError::ArchiveDamaged { .. }), "{e}");

    let c = case("a.tar.xz", &compress(ArchiveFormat::TarGz, &tar));
    let e = list_file(&c.archive, ArchiveFormat::TarXz, ROOMY).unwrap_err();
    assert!(
        matches!(e, DatasetError::ArchiveFormatMismatch { .. }),
        "{e}"
    );
}
