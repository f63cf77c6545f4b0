//! The tar guard follows the framing as the tar crate reads it: it never
//! refuses what the crate's builder writes (long names, long links, PAX
//! headers, sparse files, any size), passes every byte on unchanged, and
//! finds a header record where the crate would look for it (after a PAX
//! `size`, after sparse extension blocks), not in an entry's data.

use labrun_dataset::unpack::{HeaderRecordTooLarge, MAX_HEADER_RECORD, TarRecords};
use proptest::prelude::*;
use std::io::{self, Read, Write};

const HUGE: u64 = 2_684_354_560;

/// Hands out at most `step` bytes a read, so headers arrive in pieces.
struct Trickle<R> {
    inner: R,
    step: usize,
}

impl<R: Read> Read for Trickle<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.step);
        self.inner.read(&mut buf[..n])
    }
}

/// An entry's path, link target and data.
type EntryRead = (String, String, Vec<u8>);

/// Every entry as the crate reads `tar` through the guard (`step` bytes a
/// read), and the bytes left after it.
fn read_guarded(tar: &[u8], step: usize) -> io::Result<(Vec<EntryRead>, usize)> {
    let mut archive = tar::Archive::new(TarRecords::new(Trickle { inner: tar, step }));
    let mut out = Vec::new();
    for entry in archive.entries()? {
        let mut entry = entry?;
        let path = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let link = entry
            .link_name_bytes()
            .map(|l| String::from_utf8_lossy(&l).into_owned())
            .unwrap_or_default();
        let mut data = Vec::new();
        entry.read_to_end(&mut data)?;
        out.push((path, link, data));
    }
    let mut rest = Vec::new();
    archive.into_inner().read_to_end(&mut rest)?;
    Ok((out, rest.len()))
}

/// The same, without the guard.
fn read_plain(tar: &[u8]) -> Vec<EntryRead> {
    let mut archive = tar::Archive::new(tar);
    let entries = archive.entries().unwrap();
    entries
        .map(|e| {
            let mut e = e.unwrap();
            let path = String::from_utf8_lossy(&e.path_bytes()).into_owned();
            let link = e
                .link_name_bytes()
                .map(|l| String::from_utf8_lossy(&l).into_owned())
                .unwrap_or_default();
            let mut data = Vec::new();
            e.read_to_end(&mut data).unwrap();
            (path, link, data)
        })
        .collect()
}

/// One PAX record, `"<len> key=value\n"`, its length counting itself.
fn pax_record(key: &str, value: &str) -> Vec<u8> {
    let body = format!(" {key}={value}\n");
    let mut len = body.len() + 1;
    while format!("{len}").len() + body.len() != len {
        len += 1;
    }
    format!("{len}{body}").into_bytes()
}

fn raw_header(kind: tar::EntryType, name: &str, size: u64) -> tar::Header {
    let mut h = tar::Header::new_ustar();
    h.set_path(name).unwrap();
    h.set_entry_type(kind);
    h.set_mode(0o644);
    h.set_size(size);
    h.set_cksum();
    h
}

/// `data` padded to a whole number of 512-byte blocks.
fn padded(data: &[u8]) -> Vec<u8> {
    let mut v = data.to_vec();
    v.resize(data.len().div_ceil(512) * 512, 0);
    v
}

/// A GNU long-name header declaring `HUGE` bytes.
fn hostile_long_name() -> Vec<u8> {
    let mut h = tar::Header::new_gnu();
    h.as_old_mut().name[..13].copy_from_slice(b"././@LongLink");
    h.set_entry_type(tar::EntryType::GNULongName);
    h.set_size(HUGE);
    h.set_cksum();
    h.as_bytes().to_vec()
}

fn refused_at(tar: &[u8]) -> Option<u64> {
    let mut guard = TarRecords::new(Trickle {
        inner: tar,
        step: 7,
    });
    match io::copy(&mut guard, &mut io::sink()) {
        Ok(_) => None,
        Err(e) => Some(
            HeaderRecordTooLarge::of(&e)
                .unwrap_or_else(|| panic!("another error: {e}"))
                .at,
        ),
    }
}

#[derive(Debug, Clone)]
enum Entry {
    File { name: String, size: usize },
    Link { name: String, target: String },
    Pax { key: String, value: String },
}

fn name() -> impl Strategy<Value = String> {
    (1usize..400, "[a-z]{1,8}")
        .prop_map(|(len, stem)| stem.repeat(len / stem.len() + 1)[..len].to_string())
}

fn entry() -> impl Strategy<Value = Entry> {
    prop_oneof![
        (name(), 0usize..5000).prop_map(|(name, size)| Entry::File { name, size }),
        (name(), name()).prop_map(|(name, target)| Entry::Link { name, target }),
        ("[a-z.]{1,20}", "[ -~]{0,3000}").prop_map(|(key, value)| Entry::Pax { key, value }),
    ]
}

fn build(entries: &[Entry]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (i, e) in entries.iter().enumerate() {
        match e {
            Entry::File { name, size } => {
                let mut h = tar::Header::new_gnu();
                h.set_size(*size as u64);
                h.set_mode(0o644);
                let data: Vec<u8> = (0..*size).map(|j| (i + j) as u8).collect();
                b.append_data(&mut h, format!("{i}-{name}"), &data[..])
                    .unwrap();
            }
            Entry::Link { name, target } => {
                let mut h = tar::Header::new_gnu();
                h.set_entry_type(tar::EntryType::Symlink);
                h.set_mode(0o777);
                h.set_size(0);
                b.append_link(&mut h, format!("{i}-{name}"), target)
                    .unwrap();
            }
            Entry::Pax { key, value } => {
                // A PAX header for a file after it (a `size` key must be the
                // file's size, as a writer would set it).
                let data = b"pax'd";
                let mut records = pax_record(key, value);
                records.extend(pax_record("size", &data.len().to_string()));
                let x = raw_header(tar::EntryType::XHeader, "PaxHeader", records.len() as u64);
                b.append(&x, &records[..]).unwrap();
                let f = raw_header(tar::EntryType::Regular, &format!("{i}-pax"), 0);
                // The header says 0: the PAX size says 5, and the crate reads 5.
                b.get_mut().extend_from_slice(f.as_bytes());
                b.get_mut().extend(padded(data));
            }
        }
    }
    b.into_inner().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn the_guard_never_refuses_what_the_builder_writes(
        entries in prop::collection::vec(entry(), 0..12),
        step in prop_oneof![Just(1usize), 2usize..700, Just(1 << 20)],
    ) {
        let tar = build(&entries);
        let (got, _) = read_guarded(&tar, step).unwrap();
        prop_assert_eq!(got, read_plain(&tar));
        // And every byte passes unchanged.
        let mut passed = Vec::new();
        TarRecords::new(&tar[..]).read_to_end(&mut passed).unwrap();
        prop_assert!(passed == tar);
    }
}

#[test]
fn a_record_at_the_bound_passes_and_one_byte_more_is_refused() {
    let name = "n".repeat(MAX_HEADER_RECORD as usize - 1);
    let mut b = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_size(1);
    b.append_data(&mut h, &name, &b"x"[..]).unwrap();
    let tar = b.into_inner().unwrap();
    // The long name and its NUL: exactly the bound.
    let (got, _) = read_guarded(&tar, 1 << 16).unwrap();
    assert_eq!(got[0].0, name);

    let mut over = tar::Header::new_gnu();
    over.as_old_mut().name[..13].copy_from_slice(b"././@LongLink");
    over.set_entry_type(tar::EntryType::GNULongName);
    over.set_size(MAX_HEADER_RECORD + 1);
    over.set_cksum();
    let mut tar = over.as_bytes().to_vec();
    tar.extend(vec![b'n'; MAX_HEADER_RECORD as usize + 1024]);
    let e = read_guarded(&tar, 1 << 16).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    let refused = HeaderRecordTooLarge::of(&e).expect("the guard's error");
    assert_eq!((refused.at, refused.declared), (0, MAX_HEADER_RECORD + 1));
    assert!(
        e.to_string().contains("tar GNU long-name record at byte 0"),
        "{e}"
    );
}

#[test]
fn an_entry_s_data_is_never_taken_for_a_header() {
    // A file whose data is a hostile header, and a PAX header whose `size`
    // makes the next entry's data one: both are data, as the crate reads.
    let hostile = hostile_long_name();
    let mut tar = raw_header(tar::EntryType::Regular, "a", 512)
        .as_bytes()
        .to_vec();
    tar.extend(&hostile);
    let records = pax_record("size", "512");
    tar.extend(raw_header(tar::EntryType::XHeader, "x", records.len() as u64).as_bytes());
    tar.extend(padded(&records));
    tar.extend(raw_header(tar::EntryType::Regular, "b", 0).as_bytes());
    tar.extend(&hostile);
    tar.extend([0; 1024]);
    let (got, rest) = read_guarded(&tar, 100).unwrap();
    assert_eq!(got.len(), 2);
    assert!(got.iter().all(|(_, _, data)| data[..] == hostile[..]));
    assert_eq!(rest, 1024 - 512, "the second zero block is the trailer");
}

#[test]
fn a_pax_size_that_shrinks_an_entry_makes_the_next_header_a_header() {
    // The ustar header says 512, the PAX header 0: the crate reads the next
    // block as a header, so the guard must check it.
    let records = pax_record("size", "0");
    let mut tar = raw_header(tar::EntryType::XHeader, "x", records.len() as u64)
        .as_bytes()
        .to_vec();
    tar.extend(padded(&records));
    tar.extend(raw_header(tar::EntryType::Regular, "a", 512).as_bytes());
    let at = tar.len() as u64;
    tar.extend(hostile_long_name());
    tar.extend(vec![b'n'; 4096]);
    assert_eq!(refused_at(&tar), Some(at));
    // The PAX size reaches only the next entry: a long name between them
    // keeps its own size, and the entry after the file its own.
    let records = pax_record("size", "0");
    let mut tar = raw_header(tar::EntryType::XHeader, "x", records.len() as u64)
        .as_bytes()
        .to_vec();
    tar.extend(padded(&records));
    let mut b = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_size(0);
    b.append_data(&mut h, "l".repeat(300), io::empty()).unwrap();
    // Without the end-of-archive marker `into_inner` would add.
    tar.extend(std::mem::take(b.get_mut()));
    tar.extend(raw_header(tar::EntryType::Regular, "c", 512).as_bytes());
    tar.extend(&hostile_long_name());
    tar.extend([0; 1024]);
    let (got, _) = read_guarded(&tar, 33).unwrap();
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[1].2, hostile_long_name());
}

#[test]
fn sparse_extension_blocks_are_skipped_as_the_crate_skips_them() {
    // A file of 12 data runs between holes: the old-GNU header holds 4,
    // the rest go in extension blocks after it.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sparse");
    {
        let mut f = std::fs::File::create(&path).unwrap();
        for i in 0..12u64 {
            use std::io::{Seek, SeekFrom};
            f.seek(SeekFrom::Start(i * (1 << 20))).unwrap();
            f.write_all(&[i as u8 + 1; 4096]).unwrap();
        }
        f.set_len(12 << 20).unwrap();
    }
    let mut b = tar::Builder::new(Vec::new());
    b.sparse(true);
    b.append_path_with_name(&path, "sparse").unwrap();
    let at = b.get_ref().len() as u64;
    b.get_mut().extend(hostile_long_name());
    let tar = b.into_inner().unwrap();
    let header = tar::Header::from_byte_slice(&tar[..512]);
    if !header.entry_type().is_gnu_sparse() {
        eprintln!("this file system keeps no holes: the sparse case is not tried");
        return;
    }
    assert!(header.as_gnu().unwrap().is_extended(), "no extension block");
    assert_eq!(refused_at(&tar), Some(at));
    // Read by the crate through the guard up to the hostile header.
    let mut archive = tar::Archive::new(TarRecords::new(&tar[..]));
    let mut entries = archive.entries().unwrap();
    let mut sparse = entries.next().unwrap().unwrap();
    let mut data = Vec::new();
    sparse.read_to_end(&mut data).unwrap();
    assert_eq!(data.len(), 12 << 20);
    assert_eq!(data[11 << 20], 12);
    drop(sparse);
    let e = entries.next().unwrap().err().unwrap();
    assert!(HeaderRecordTooLarge::of(&e).is_some(), "{e}");
}
