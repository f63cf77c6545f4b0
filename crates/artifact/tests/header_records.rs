//! A pinned archive whose tar long name declares 2.5 GiB (in 80 KB of
//! zstd), or a .deb whose ar name table declares 10 GB (196 bytes), is
//! refused from the record's header: extraction stays within a few MiB of
//! memory. A binary of its own: the allocator counts every thread's
//! allocations, so the tests here take turns (`TURN`).

use labrun_artifact::extract::read_member;
use labrun_artifact::{ArtifactError, Extract};
use std::alloc::{GlobalAlloc, Layout, System};
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

const DECLARED: u64 = 2_684_354_560; // 2.5 GiB
const MEMORY_BOUND: usize = 64 << 20;

/// A GNU long-name header declaring `size` bytes.
fn long_name_header(size: u64) -> Vec<u8> {
    let mut h = tar::Header::new_gnu();
    h.as_old_mut().name[..13].copy_from_slice(b"././@LongLink");
    h.set_entry_type(tar::EntryType::GNULongName);
    h.set_mode(0o644);
    h.set_size(size);
    h.set_cksum();
    h.as_bytes().to_vec()
}

/// A zstd frame of `prefix` then `zeros` zero bytes, made by hand: the
/// zeros are RLE blocks of 128 KiB, 4 bytes each.
fn zst_then_zeros(prefix: &[u8], zeros: u64) -> Vec<u8> {
    const BLOCK: u64 = 128 << 10;
    let block_header = |size: u64, kind: u32, last: bool| {
        let v = ((size as u32) << 3) | (kind << 1) | u32::from(last);
        [v as u8, (v >> 8) as u8, (v >> 16) as u8]
    };
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
    out
}

/// The 60-byte ar member header of `name` and `size`.
fn ar_header(name: &str, size: u64) -> Vec<u8> {
    let h = format!("{name:<16}{:<12}{:<6}{:<6}{:<8}{size:<10}`\n", 0, 0, 0, 644);
    assert_eq!(h.len(), 60);
    h.into_bytes()
}

/// Reads `extract` from `bytes` (as `file_name`), alone, and returns the
/// error and the heap's peak.
fn refused(file_name: &str, bytes: &[u8], extract: Extract) -> (String, usize) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(file_name);
    std::fs::write(&path, bytes).unwrap();
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let result = read_member("tool", &path, &extract, |r| {
        std::io::copy(r, &mut std::io::sink()).unwrap();
        Ok(())
    });
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(before);
    let msg = match result {
        Err(e @ ArtifactError::BadArchive { .. }) => e.to_string(),
        other => panic!("{file_name}: {other:?}"),
    };
    (msg, peak)
}

#[test]
fn a_tarball_whose_long_name_declares_2_5_gib_is_refused_before_it_is_read() {
    let archive = zst_then_zeros(&long_name_header(DECLARED), DECLARED);
    assert!(archive.len() < 100_000);
    let (msg, peak) = refused("tool.tar.zst", &archive, Extract::Tar("bin/tool".into()));
    assert!(peak < MEMORY_BOUND, "{peak} bytes: {msg}");
    assert!(
        msg.contains("GNU long-name record") && msg.contains(&DECLARED.to_string()),
        "{msg}"
    );
}

#[test]
fn a_deb_whose_ar_names_declare_10_gb_is_refused_before_they_are_read() {
    let huge = 9_999_999_999u64;
    let start = |b: &mut Vec<u8>| {
        b.extend(b"!<arch>\n");
        b.extend(ar_header("debian-binary", 4));
        b.extend(b"2.0\n");
    };
    let mut gnu = Vec::new();
    start(&mut gnu);
    gnu.extend(ar_header("//", huge));
    gnu.extend(vec![b'x'; 196 - gnu.len()]);
    let mut bsd = Vec::new();
    start(&mut bsd);
    bsd.extend(ar_header(&format!("#1/{huge}"), huge));
    bsd.extend(vec![b'x'; 64]);
    for (deb, named) in [(gnu, "ar name table"), (bsd, "BSD ar member name")] {
        let (msg, peak) = refused("tool.deb", &deb, Extract::DebMember("usr/bin/tool".into()));
        assert!(peak < MEMORY_BOUND, "{peak} bytes: {msg}");
        assert!(
            msg.contains(named) && msg.contains(&huge.to_string()),
            "{msg}"
        );
    }
}

#[test]
fn a_deb_whose_data_holds_a_2_5_gib_long_name_is_refused_before_it_is_read() {
    let data = zst_then_zeros(&long_name_header(DECLARED), DECLARED);
    let mut deb = b"!<arch>\n".to_vec();
    deb.extend(ar_header("debian-binary", 4));
    deb.extend(b"2.0\n");
    deb.extend(ar_header("data.tar.zst", data.len() as u64));
    deb.extend(&data);
    let (msg, peak) = refused("tool.deb", &deb, Extract::DebMember("usr/bin/tool".into()));
    assert!(peak < MEMORY_BOUND, "{peak} bytes: {msg}");
    assert!(msg.contains("GNU long-name record"), "{msg}");
}
