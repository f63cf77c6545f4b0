//! Planning from a manifest file holds what the change touches, not the
//! tree: the heap's peak while a tree of 100,000 files is planned stays a
//! small share of what its manifest in memory would take. A binary of its
//! own: the allocator counts every thread's allocations, so no other test
//! may run beside this one.

use labrun_dataset::tree_change::{ManifestFile, TreeChange};
use labrun_evidence::{ChangeSpec, EntryKind, Manifest, ManifestEntry};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: the caller's layout, passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const FILES: u64 = 100_000;

#[test]
fn planning_from_a_file_holds_the_change_not_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("manifest.jsonl");
    {
        let mut m = Manifest {
            entries: (0..FILES)
                .map(|i| ManifestEntry {
                    path: format!("folder-{:03}/a-rather-long-file-name-{i:07}.dat", i % 500),
                    kind: EntryKind::File,
                    size: 1 + i * 7919 % 500_000,
                    mode: 0o644,
                    sha256: format!("{i:064x}"),
                    ..Default::default()
                })
                .collect(),
        };
        m.entries.extend((0..500).map(|d| ManifestEntry {
            path: format!("folder-{d:03}"),
            kind: EntryKind::Dir,
            mode: 0o755,
            ..Default::default()
        }));
        m.sort();
        let file = std::fs::File::create(&path).unwrap();
        m.write_to(std::io::BufWriter::new(file)).unwrap();
    }
    let manifest_bytes = std::fs::metadata(&path).unwrap().len() as usize;

    let spec = ChangeSpec {
        fraction: 0.01,
        seed: 3,
    };
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let change = TreeChange::plan_from(&ManifestFile::new(&path), &spec).unwrap();
    let peak = PEAK.load(Ordering::Relaxed) - before;

    let touched = change.rewritten.len() + change.removed.len() + change.renamed.len();
    assert!(touched > 1_000, "{touched} files touched");
    // The change's paths and a reader's buffers: well under a tenth of the
    // manifest's bytes (a Manifest in memory takes more than the file).
    assert!(
        peak < manifest_bytes / 10,
        "peak heap {peak} bytes planning from a manifest file of {manifest_bytes} bytes"
    );
}
