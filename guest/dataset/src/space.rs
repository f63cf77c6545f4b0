//! How much free disk a run of a dataset needs: the agent refuses a run
//! that cannot fit, and the host refuses to push a tree that cannot. And
//! how much memory the agent needs for a real tree's files: the agent
//! refuses a tree it cannot hold, and `labrun check` says it first.

/// How many datasets the work folder holds at the worst moment of a tool
/// cycle (see [`crate::run::runner`]): after the restore and before the
/// verification starts removing, there are the generated tree, the tool
/// cycle's source copy, the repository and the restored tree. The
/// repository of incompressible data is about one dataset; the tenth on top
/// is its growth by the incremental backup (the 5% change) and the tool's
/// own metadata. A reflink copy (btrfs, XFS) costs less; this is the bound.
pub const WORST_CASE_DATASETS: f64 = 4.1;

/// The free bytes a run of a `dataset_bytes` dataset needs.
pub fn needed_bytes(dataset_bytes: u64) -> u64 {
    (dataset_bytes as f64 * WORST_CASE_DATASETS).ceil() as u64
}

/// The agent's peak resident memory over a run of the published cycle on
/// a real tree, whatever its size: its code, the hashing pool's buffers,
/// the sort of a private tree's hashed manifest, a window of the walk.
/// Every manifest is a file read as it comes (issue 31); what grows with
/// the tree is [`AGENT_BYTES_PER_FILE`]. Measured by `make
/// bench-agent-tree` (benches/agent-memory-tree.sh, a private folder of
/// tiny files, every name unique): 21.5 MiB at 100,394 files and 32.5 MiB
/// at 1,003,924, 12.8 bytes a file between the two; 20.3 MiB at none,
/// rounded up.
pub const AGENT_BASE_BYTES: u64 = 24 << 20;

/// What the agent keeps per file of a real tree: the change's lists (the
/// files it rewrites, removes, moves and adds, about 7% of the tree's
/// paths), and while a private tree's names are learnt or a log redacted,
/// 4 bytes a name. Measured: 12.8 bytes (see [`AGENT_BASE_BYTES`]),
/// rounded up.
pub const AGENT_BYTES_PER_FILE: u64 = 16;

/// The memory the agent needs for a real tree of `files` files.
pub fn agent_memory_bytes(files: u64) -> u64 {
    AGENT_BASE_BYTES.saturating_add(files.saturating_mul(AGENT_BYTES_PER_FILE))
}

/// The one rule of a real tree's memory, which the agent applies to the
/// memory available in the guest and `labrun check` to the VM's (less
/// what the guest's own system takes): a tree of `files` files fits in
/// `memory` bytes, or `Err` gives the `sample:` fraction that would.
pub fn memory_fit(files: u64, memory: u64) -> Result<(), f64> {
    if agent_memory_bytes(files) <= memory {
        Ok(())
    } else {
        Err(sample_that_fits(files, memory))
    }
}

/// The `sample:` fraction of a tree of `files` files whose run fits in
/// `memory` bytes, with a tenth to spare: two digits, rounded down, at
/// least 0.01.
fn sample_that_fits(files: u64, memory: u64) -> f64 {
    let for_files = (memory as f64 * 0.9 - AGENT_BASE_BYTES as f64).max(0.0);
    let per_file = files.saturating_mul(AGENT_BYTES_PER_FILE).max(1) as f64;
    ((for_files / per_file) * 100.0).floor().clamp(1.0, 100.0) / 100.0
}

#[cfg(test)]
mod memory_tests {
    use super::*;

    #[test]
    fn a_tree_fits_until_its_files_outgrow_the_memory_and_the_sample_then_fits() {
        let memory = 3u64 << 30;
        let most = (memory - AGENT_BASE_BYTES) / AGENT_BYTES_PER_FILE;
        assert_eq!(memory_fit(most, memory), Ok(()));
        let fraction = memory_fit(most * 4, memory).unwrap_err();
        assert!((0.2..0.25).contains(&fraction), "{fraction}");
        // The sample it names fits.
        let sampled = (most as f64 * 4.0 * fraction) as u64;
        assert_eq!(memory_fit(sampled, memory), Ok(()));
        // Memory below the agent's base: the smallest sample is named.
        assert_eq!(memory_fit(1, AGENT_BASE_BYTES / 2), Err(0.01));
    }
}
