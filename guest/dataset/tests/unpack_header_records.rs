//! A header record that declares gigabytes (a tar long name or PAX header,
//! a .deb's ar name table or BSD member name) is refused from its header,
//! before any of it is read: `labrun check` (list_file) and the agent's
//! unpack (unpack_file) stay within a few MiB of memory on a 91 KB archive
//! that declares 2.5 GiB. A binary of its own: the allocator counts every
//! thread's allocations, so the tests here take turns (`TURN`).

use labrun_dataset::{DatasetError, UnpackLimits, list_file, unpack_file};
use labrun_evidence::ArchiveFormat;
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static TURN: Mutex<()> = Mutex::new(());

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: the caller's layout, passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: as above; calloc, so a huge zeroed buffer is counted too.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// What a hostile record declares in the archives.
const DECLARED: u64 = 2_684_354_560; // 2.5 GiB
/// The most an unpack of these archives may hold at once: its read and
/// pipe buffers (a few MiB), far from the gigabytes declared.
const MEMORY_BOUND: usize = 64 << 20;

const ROOMY: UnpackLimits = UnpackLimits {
    max_bytes: 1 << 40,
    max_entries: 1_000_000,
};

/// Runs `f` alone and returns its result and the heap's peak above what
/// was live before.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed).saturating_sub(before))
}

/// A GNU tar header of `kind` declaring `size` bytes.
fn record_header(kind: tar::EntryType, size: u64) -> Vec<u8> {
    let mut h = tar::Header::new_gnu();
    let name = b"././@LongLink";
    h.as_old_mut().name[..name.len()].copy_from_slice(name);
    h.set_entry_type(kind);
    h.set_mode(0o644);
    h.set_size(size);
    h.set_cksum();
    h.as_bytes().to_vec()
}

/// A zstd frame of `prefix` then `zeros` zero bytes, made by hand: the
/// zeros are RLE blocks of 128 KiB (4 bytes each), so 2.5 GiB of them take
/// 80 KB, as in the 91 KB archive, and cost nothing to make.
fn zst_then_zeros(prefix: &[u8], zeros: u64) -> Vec<u8> {
    const BLOCK: u64 = 128 << 10;
    let block_header = |size: u64, kind: u32, last: bool| {
        let v = ((size as u32) << 3) | (kind << 1) | u32::from(last);
        [v as u8, (v >> 8) as u8, (v >> 16) as u8]
    };
    // Magic, a frame header with no content size, a 128 KiB window.
    let mut out = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38];
    for chunk in prefix.chunks(BLOCK as usize) {
        out.extend(block_header(chunk.len() as u64, 0, false));
        out.extend_from_slice(chunk);
    }
    let mut left = zeros;
    while left > 0 {
        let n = left.min(BLOCK);
        left -= n;
        out.extend(block_header(n, 1, left == 0));
        out.push(0);
    }
    if zeros == 0 {
        out.extend(block_header(0, 0, true));
    }
    out
}

/// A .deb (debian-binary first, as the format check wants) of `members`.
fn deb_of(members: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut b = ar::Builder::new(Vec::new());
    for (name, data) in [("debian-binary", b"2.0\n".to_vec())].iter().chain(members) {
        let h = ar::Header::new(name.as_bytes().to_vec(), data.len() as u64);
        b.append(&h, &data[..]).unwrap();
    }
    b.into_inner().unwrap()
}

/// The 60-byte ar member header of `name` (raw, up to 16 bytes) and `size`.
fn ar_header(name: &str, size: u64) -> Vec<u8> {
    let h = format!("{name:<16}{:<12}{:<6}{:<6}{:<8}{size:<10}`\n", 0, 0, 0, 644);
    assert_eq!(h.len(), 60);
    h.into_bytes()
}

/// Lists and unpacks `bytes` as `format`: both refuse it, within
/// [`MEMORY_BOUND`]. Returns the two messages.
fn refused_within_bound(file_name: &str, bytes: &[u8], format: ArchiveFormat) -> [String; 2] {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join(file_name);
    std::fs::write(&archive, bytes).unwrap();
    let dest = dir.path().join("tree");
    let (listed, list_peak) = peak_of(|| list_file(&archive, format, ROOMY));
    let (unpacked, unpack_peak) =
        peak_of(|| unpack_file(&archive, format, &dest, ROOMY, &mut |_, _| {}));
    let messages = [listed, unpacked].map(|r| match r {
        Err(e) => message(&e, &archive),
        Ok(u) => panic!("{file_name} was not refused: {u:?}"),
    });
    for (what, peak) in [("listing", list_peak), ("unpacking", unpack_peak)] {
        assert!(
            peak < MEMORY_BOUND,
            "{what} {file_name} took {peak} bytes of memory: {messages:?}"
        );
    }
    messages
}

fn message(e: &DatasetError, archive: &Path) -> String {
    let msg = e.to_string();
    assert!(msg.contains(&archive.display().to_string()), "{msg}");
    msg
}

#[test]
fn the_hand_made_zstd_holds_what_it_says() {
    let z = zst_then_zeros(b"head", 300_000);
    let plain = zstd::stream::decode_all(&z[..]).unwrap();
    assert_eq!(plain.len(), 300_004);
    assert_eq!(&plain[..4], b"head");
    assert!(plain[4..].iter().all(|&b| b == 0));
}

#[test]
fn a_tar_long_name_record_of_2_5_gib_is_refused_before_it_is_read() {
    let archive = zst_then_zeros(
        &record_header(tar::EntryType::GNULongName, DECLARED),
        DECLARED,
    );
    assert!(archive.len() < 100_000, "{} bytes", archive.len());
    for msg in refused_within_bound("a.tar.zst", &archive, ArchiveFormat::TarZst) {
        assert!(
            msg.contains("GNU long-name record")
                && msg.contains(&DECLARED.to_string())
                && msg.contains("1 MiB"),
            "{msg}"
        );
    }
}

#[test]
fn a_tar_pax_header_of_2_5_gib_is_refused_before_it_is_read() {
    let archive = zst_then_zeros(&record_header(tar::EntryType::XHeader, DECLARED), DECLARED);
    for msg in refused_within_bound("a.tar.zst", &archive, ArchiveFormat::TarZst) {
        assert!(
            msg.contains("PAX extended header") && msg.contains(&DECLARED.to_string()),
            "{msg}"
        );
    }
}

#[test]
fn every_kind_of_tar_header_record_is_bounded() {
    for (kind, named) in [
        (tar::EntryType::GNULongName, "GNU long-name record"),
        (tar::EntryType::GNULongLink, "GNU long-link record"),
        (tar::EntryType::XHeader, "PAX extended header"),
        (tar::EntryType::XGlobalHeader, "PAX global header"),
    ] {
        // What follows is a few KB: the old reader took them as the record
        // and failed later, or not at all.
        let mut tar = record_header(kind, DECLARED);
        tar.extend(vec![b'a'; 4096]);
        for msg in refused_within_bound("a.tar", &tar, ArchiveFormat::Tar) {
            assert!(
                msg.contains(named) && msg.contains(&DECLARED.to_string()),
                "{named}: {msg}"
            );
        }
    }
}

#[test]
fn a_deb_whose_data_holds_a_2_5_gib_long_name_is_refused_before_it_is_read() {
    let data = zst_then_zeros(
        &record_header(tar::EntryType::GNULongName, DECLARED),
        DECLARED,
    );
    let deb = deb_of(&[("control.tar.xz", vec![]), ("data.tar.zst", data)]);
    for msg in refused_within_bound("a.deb", &deb, ArchiveFormat::Deb) {
        assert!(
            msg.contains("GNU long-name record") && msg.contains(&DECLARED.to_string()),
            "{msg}"
        );
    }
}

#[test]
fn a_deb_whose_ar_names_declare_10_gb_is_refused_before_it_is_read() {
    let huge = 9_999_999_999u64;
    // The 196-byte package: a GNU name table (`//`) declaring
    // 9,999,999,999 bytes, with a few after it.
    let mut gnu = deb_of(&[]);
    gnu.extend(ar_header("//", huge));
    gnu.extend(vec![b'x'; 196 - gnu.len()]);
    assert_eq!(gnu.len(), 196);
    // A BSD long member name (`#1/N`) of as many bytes.
    let mut bsd = deb_of(&[]);
    bsd.extend(ar_header(&format!("#1/{huge}"), huge));
    bsd.extend(vec![b'x'; 64]);
    for (deb, named) in [(gnu, "ar name table"), (bsd, "BSD ar member name")] {
        for msg in refused_within_bound("a.deb", &deb, ArchiveFormat::Deb) {
            assert!(
                msg.contains(named) && msg.contains(&huge.to_string()),
                "{named}: {msg}"
            );
        }
    }
}

#[test]
fn a_deb_with_long_member_names_still_unpacks() {
    // GNU ar's name table and a BSD name are both read (bounded), so a
    // package whose data member has a long name is still a package.
    let tar = {
        let mut b = tar::Builder::new(Vec::new());
        let mut h = tar::Header::new_gnu();
        h.set_size(2);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, "f", &b"hi"[..]).unwrap();
        b.into_inner().unwrap()
    };
    let long = "data.tar-with-a-long-member-name";
    let mut gnu = deb_of(&[]);
    let table = format!("{long}/\n");
    gnu.extend(ar_header("//", table.len() as u64));
    gnu.extend(table.as_bytes());
    gnu.extend(ar_header("/0", tar.len() as u64));
    gnu.extend(&tar);
    let mut bsd = deb_of(&[]);
    bsd.extend(ar_header(
        &format!("#1/{}", long.len()),
        (long.len() + tar.len()) as u64,
    ));
    bsd.extend(long.as_bytes());
    bsd.extend(&tar);
    for deb in [gnu, bsd] {
        let dir = tempfile::tempdir().unwrap();
        let archive = dir.path().join("a.deb");
        std::fs::File::create(&archive)
            .unwrap()
            .write_all(&deb)
            .unwrap();
        let listed = list_file(&archive, ArchiveFormat::Deb, ROOMY).unwrap();
        assert_eq!((listed.files, listed.bytes), (1, 2));
    }
}
