//! How much free disk a run of a dataset needs: the agent refuses a run
//! that cannot fit, and the host refuses to push a tree that cannot.

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
