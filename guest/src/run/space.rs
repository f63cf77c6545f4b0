//! Refusing a dataset the disk cannot hold, before any of it is written: a
//! scale typed wrong would otherwise fill the machine's disk at full speed
//! (tens of GB a minute) and fail an hour later, or take the machine down.
//!
//! The synthetic dataset's size is known from its parameters alone
//! ([`labrun_dataset::footprint`]): what each profile allocates on disk (a
//! sparse image's holes take nothing), and its apparent size. A git
//! history's is not known before it is read, so it is not checked here.

use crate::run::error::RunError;
use std::path::Path;

pub use labrun_dataset::space::{WORST_CASE_DATASETS, needed_bytes};

/// Bytes an unprivileged writer may still use on the file system of `dir`.
pub fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    // SAFETY: zeroed statvfs is a valid out-parameter.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a NUL-terminated path, st a writable statvfs.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// Refuses the run when `free` bytes in `dir` cannot hold a run of a
/// dataset that allocates `dataset_bytes` and has `holes` bytes of holes:
/// a restore that does not keep a file sparse (restic without `--sparse`,
/// most tools) writes them as zeros.
pub fn check(dir: &Path, dataset_bytes: u64, holes: u64, free: u64) -> Result<(), RunError> {
    let needed = needed_bytes(dataset_bytes).saturating_add(holes);
    if needed <= free {
        return Ok(());
    }
    Err(RunError::NotEnoughSpace {
        dir: dir.to_path_buf(),
        dataset: dataset_bytes,
        holes,
        needed,
        free,
    })
}

/// [`check`] of the dataset `footprint`, with the free space of `dir` as it
/// is now.
pub fn check_now(dir: &Path, footprint: &labrun_dataset::Footprint) -> Result<(), RunError> {
    let free =
        free_bytes(dir).map_err(|e| RunError::io("cannot read the free space of", dir, e))?;
    let holes = footprint.bytes.saturating_sub(footprint.allocated_bytes);
    check(dir, footprint.allocated_bytes, holes, free)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dataset_needs_four_trees_and_a_margin() {
        assert_eq!(needed_bytes(1_000_000_000), 4_100_000_000);
        assert_eq!(needed_bytes(0), 0);
    }

    #[test]
    fn refuses_naming_needed_and_free_bytes_and_what_to_do() {
        let dir = Path::new("/srv/labrun/work");
        assert!(check(dir, 1_000, 0, 4_100).is_ok());
        let err = check(dir, 12_200_000_000, 0, 30_000_000_000).unwrap_err();
        let text = err.to_string();
        for needle in [
            "/srv/labrun/work",
            "50020000000 bytes",
            "30000000000 bytes",
            "12200000000 bytes",
            "--scale",
            "vm.disk",
        ] {
            assert!(text.contains(needle), "{needle:?} missing: {text}");
        }
    }

    #[test]
    fn a_sparse_image_needs_its_allocation_four_times_and_its_holes_once() {
        use labrun_dataset::{DatasetParams, DatasetProfile, footprint};
        let dir = Path::new("/srv/labrun/work");
        let vm = footprint(&DatasetParams {
            seed: 1,
            scale: 1.0,
            profile: DatasetProfile::VmImage,
        });
        // 20 GiB apparent, about 27.5% of it written.
        let (apparent, allocated) = (20u64 << 30, vm.allocated_bytes);
        assert_eq!(vm.bytes, apparent);
        assert!((allocated as f64 / apparent as f64 - 0.275).abs() < 0.005);
        let needed = (allocated as f64 * 4.1).ceil() as u64 + (apparent - allocated);
        assert!(check(dir, allocated, apparent - allocated, needed).is_ok());
        let text = check(dir, allocated, apparent - allocated, needed - 1)
            .unwrap_err()
            .to_string();
        assert!(text.contains("holes"), "{text}");
        // Well under the four apparent sizes a dense file of 20 GiB needs.
        assert!(needed < 2 * apparent, "{needed}");
    }

    #[test]
    fn free_space_of_a_real_folder() {
        let dir = tempfile::tempdir().unwrap();
        assert!(free_bytes(dir.path()).unwrap() > 0);
        assert!(free_bytes(&dir.path().join("missing")).is_err());
    }
}
