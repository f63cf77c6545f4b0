//! `HashedManifestWriter` against the in-memory way it replaces, on random
//! paths (repeats included), kinds and budgets: the same bytes, always.

use labrun_dataset::{HashedManifestWriter, SortBudget, write_manifest};
use labrun_evidence::{EntryKind, Manifest, ManifestEntry};
use proptest::prelude::*;

fn entries() -> impl Strategy<Value = Vec<ManifestEntry>> {
    let entry = ("[ab/]{1,4}", 0u8..3, 0u64..50).prop_map(|(path, kind, size)| ManifestEntry {
        path,
        kind: match kind {
            0 => EntryKind::File,
            1 => EntryKind::Dir,
            _ => EntryKind::Symlink,
        },
        size,
        ..ManifestEntry::default()
    });
    prop::collection::vec(entry, 0..60)
}

fn budget() -> impl Strategy<Value = SortBudget> {
    (1usize..10, 2usize..5).prop_map(|(entries, runs)| SortBudget {
        entries,
        bytes: usize::MAX,
        runs,
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn writes_the_bytes_of_the_in_memory_way(entries in entries(), budget in budget()) {
        let tmp = tempfile::tempdir().unwrap();
        let expected_path = tmp.path().join("expected.jsonl");
        let manifest = Manifest { entries: entries.clone() };
        write_manifest(&expected_path, &manifest.with_hashed_paths()).unwrap();
        let expected = std::fs::read(&expected_path).unwrap();

        let path = tmp.path().join("m.jsonl");
        let mut w = HashedManifestWriter::with_budget(&path, budget);
        for e in &entries {
            w.push(e).unwrap();
        }
        let written = w.finish().unwrap();
        prop_assert_eq!(std::fs::read(&path).unwrap(), expected.clone());
        prop_assert_eq!(written.entries, entries.len());
        prop_assert_eq!(written.file_bytes, manifest.total_file_bytes());
        prop_assert_eq!(written.sha256, labrun_evidence::digest::sha256_hex(&expected));
        prop_assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 2);
    }
}
