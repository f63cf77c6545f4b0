//! What a VM may be: the one rule `labrun check` (through `Lab::validate`)
//! and `labrun up` (through the vm crate's `VmConfig::validate`) both apply,
//! so that a lab `check` accepts is a lab `up` accepts. Sizes are in bytes.

use crate::bytes::human_bytes;

pub const VCPUS: std::ops::RangeInclusive<u32> = 1..=64;
/// Below 512 MiB a Debian guest with a backup tool in it does not boot
/// reliably; 1 TiB is far beyond any host labrun runs on.
pub const MIN_MEMORY: u64 = 512 << 20;
pub const MAX_MEMORY: u64 = 1 << 40;
/// The image's own files need about 2 GiB; 4 TiB is qcow2's practical bound
/// here and far beyond the 40 GiB the full dataset needs.
pub const MIN_DISK: u64 = 4 << 30;
pub const MAX_DISK: u64 = 4096 << 30;
/// Seconds to wait for the guest's SSH: a TCG boot takes a minute or more.
pub const SSH_TIMEOUT_SECS: std::ops::RangeInclusive<u64> = 10..=24 * 3600;

pub fn check_vcpus(vcpus: u32) -> Result<(), String> {
    if VCPUS.contains(&vcpus) {
        Ok(())
    } else {
        Err(format!(
            "{vcpus} vCPUs is out of range: use {} to {} (the protocol uses 4)",
            VCPUS.start(),
            VCPUS.end()
        ))
    }
}

pub fn check_memory(bytes: u64) -> Result<(), String> {
    in_range(bytes, MIN_MEMORY, MAX_MEMORY, "the protocol uses 3GiB")
}

pub fn check_disk(bytes: u64) -> Result<(), String> {
    in_range(
        bytes,
        MIN_DISK,
        MAX_DISK,
        "the full 6.10 GB dataset needs about 40GiB",
    )
}

pub fn check_ssh_timeout(secs: u64) -> Result<(), String> {
    if SSH_TIMEOUT_SECS.contains(&secs) {
        Ok(())
    } else {
        Err(format!(
            "{secs} s is out of range: use 10s to 24h, e.g. `300s`"
        ))
    }
}

fn in_range(bytes: u64, min: u64, max: u64, hint: &str) -> Result<(), String> {
    if (min..=max).contains(&bytes) {
        Ok(())
    } else {
        Err(format!(
            "{} is out of range: use {} to {} ({hint})",
            human_bytes(bytes),
            human_bytes(min),
            human_bytes(max)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_inclusive_and_extremes_are_refused() {
        assert!(check_memory(MIN_MEMORY).is_ok());
        assert!(check_memory(MAX_MEMORY).is_ok());
        assert!(check_memory(u64::MAX).is_err());
        assert!(check_memory(MIN_MEMORY - 1).is_err());
        assert!(check_disk(u64::MAX).is_err());
        assert!(check_vcpus(0).is_err() && check_vcpus(65).is_err());
        assert!(check_ssh_timeout(0).is_err() && check_ssh_timeout(300).is_ok());
        assert_eq!(
            check_memory(256 << 20).unwrap_err(),
            "256MiB is out of range: use 512MiB to 1TiB (the protocol uses 3GiB)"
        );
    }
}
