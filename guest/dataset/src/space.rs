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

/// The agent's peak resident memory per file of a real tree over a run of
/// the published cycle: it keeps a real tree's manifests in memory (issue
/// 31 asks for them streamed, as the synthetic tree's are; not done yet).
/// Measured by `make bench-agent-tree` (benches/agent-memory-tree.sh): 170.8
/// MiB at 100,394 files and 1,380.6 MiB at 1,003,924 (1,784 and 1,442 bytes
/// a file; 1,404 between the two): the larger per-file figure, rounded up.
pub const AGENT_BYTES_PER_FILE: u64 = 1_800;

/// The memory the agent needs for a real tree of `files` files.
pub fn agent_memory_bytes(files: u64) -> u64 {
    files.saturating_mul(AGENT_BYTES_PER_FILE)
}

/// The `sample:` fraction of a tree of `files` files whose run fits in
/// `memory` bytes, with a tenth to spare: two digits, rounded down, at
/// least 0.01.
pub fn sample_that_fits(files: u64, memory: u64) -> f64 {
    let needed = agent_memory_bytes(files).max(1) as f64;
    ((memory as f64 * 0.9 / needed) * 100.0)
        .floor()
        .clamp(1.0, 100.0)
        / 100.0
}
