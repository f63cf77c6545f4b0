//! The VM's own typed settings. The lab file's `vm:` section converts into
//! this; the rules both apply (the lab name, the VM's limits) are the shared
//! vocabulary's (`labrun_vocab::names`, `labrun_vocab::vm_limits`), so that
//! what `labrun check` accepts, `labrun up` accepts.

use crate::error::VmError;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

// The words the lab shares: what `labrun check` reads is what the domain gets.
pub use labrun_vocab::{Accel, CpuPinning, DiskCache, DiskProfile, IoTune, Pinned};

/// How the base image is made. Everything here is part of the cache key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageSpec {
    /// A recipe folder under `images/` compiled into labrun (only `debian12`).
    pub recipe: String,
    /// The Debian suite the recipe installs.
    pub suite: String,
    /// Extra Debian packages the lab needs in the guest (e.g. the
    /// dependencies of a tool installed from a .deb).
    #[serde(default)]
    pub extra_packages: Vec<String>,
    /// Virtual size of the root disk; the file system is made this big at
    /// build time, so the guest never has to grow it.
    pub disk_gib: u32,
}

impl Default for ImageSpec {
    fn default() -> Self {
        ImageSpec {
            recipe: "debian12".into(),
            suite: "bookworm".into(),
            extra_packages: Vec::new(),
            disk_gib: 40,
        }
    }
}

/// A pinned cloud image (e.g. Debian's genericcloud qcow2), already fetched
/// and checked against its SHA-256 by the artifact code. It boots by its own
/// bootloader and configures itself with cloud-init from a NoCloud seed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CloudImage {
    /// The verified file (qcow2 or raw) in the artifact cache.
    pub path: PathBuf,
    /// Its SHA-256, as pinned in the lab.
    pub sha256: String,
    /// Size of the overlay; cloud-init grows the root partition to it.
    pub disk_gib: u32,
}

/// Where the guest's root disk comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum ImageSource {
    /// Built by labrun from a recipe under `images/`; direct kernel boot.
    Recipe(ImageSpec),
    /// A pinned cloud image; boots from its own disk.
    Cloud(CloudImage),
}

impl Default for ImageSource {
    fn default() -> Self {
        ImageSource::Recipe(ImageSpec::default())
    }
}

impl ImageSource {
    /// The guest's disk size.
    pub fn disk_gib(&self) -> u32 {
        match self {
            ImageSource::Recipe(r) => r.disk_gib,
            ImageSource::Cloud(c) => c.disk_gib,
        }
    }

    /// The recipe, when labrun builds the image.
    pub fn recipe(&self) -> Option<&ImageSpec> {
        match self {
            ImageSource::Recipe(r) => Some(r),
            ImageSource::Cloud(_) => None,
        }
    }

    pub fn validate(&self) -> Result<(), VmError> {
        match self {
            ImageSource::Recipe(r) => r.validate(),
            ImageSource::Cloud(c) => c.validate(),
        }
    }
}

impl CloudImage {
    pub fn validate(&self) -> Result<(), VmError> {
        let bad = |field, reason: String| Err(VmError::Config { field, reason });
        if !self.path.is_absolute() {
            return bad(
                "image.cloud",
                format!("{} must be an absolute path", self.path.display()),
            );
        }
        if self.sha256.len() != 64 || !self.sha256.chars().all(|c| c.is_ascii_hexdigit()) {
            return bad(
                "image.cloud.sha256",
                format!("`{}` is not a SHA-256 in hex", self.sha256),
            );
        }
        check_disk_gib(self.disk_gib)
    }
}

fn check_disk_gib(disk_gib: u32) -> Result<(), VmError> {
    if let Err(reason) = labrun_vocab::vm_limits::check_disk(u64::from(disk_gib) << 30) {
        return Err(VmError::Config {
            field: "disk",
            reason,
        });
    }
    Ok(())
}

/// One VM for one lab.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VmConfig {
    /// The lab's name; the domain is `labrun-<lab_name>`.
    pub lab_name: String,
    /// Absolute path of the lab file (recorded in the domain's metadata).
    pub lab_path: PathBuf,
    /// libvirt connection URI.
    pub uri: String,
    pub vcpus: u32,
    pub memory_mib: u64,
    pub accel: Accel,
    pub disk_cache: DiskCache,
    /// The main disk's `<iotune>` limits.
    #[serde(default)]
    pub disk_profile: DiskProfile,
    /// Where the vCPUs run on the host (None: anywhere, as the host's
    /// scheduler likes); `up` decides it from the host's topology
    /// ([`crate::pinning`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_pinning: Option<CpuPinning>,
    /// How long `up` waits for the guest's sshd.
    pub ssh_timeout_secs: u64,
    pub image: ImageSource,
    /// The hypervisor's host when it is not this one (`uri` is then its
    /// remote URI); None: QEMU runs here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<crate::remote::RemoteHost>,
}

impl VmConfig {
    /// What makes two machines the same for a measurement, in words: the
    /// settings a variant may change that need a boot of their own.
    pub fn shape(&self) -> String {
        let mut shape = format!(
            "{} vCPU, {} MiB, disk cache {}",
            self.vcpus,
            self.memory_mib,
            self.disk_cache.as_str()
        );
        // Only a throttled disk is named: an unthrottled one matches the
        // shapes recorded before disk profiles.
        if self.disk_profile != DiskProfile::Unthrottled {
            shape.push_str(&format!(", disk speed {}", self.disk_profile.describe()));
        }
        // Likewise only a pinning asked for: a change of it needs a boot.
        if let Some(p) = &self.cpu_pinning {
            shape.push_str(&format!(", cpu pinning {}", p.describe()));
        }
        shape
    }

    /// The protocol's machine: 4 vCPU, 3 GiB, 40 GiB disk, on `qemu:///system`.
    pub fn new(lab_name: impl Into<String>, lab_path: impl Into<PathBuf>) -> VmConfig {
        VmConfig {
            lab_name: lab_name.into(),
            lab_path: lab_path.into(),
            uri: "qemu:///system".into(),
            vcpus: 4,
            memory_mib: 3072,
            accel: Accel::Auto,
            disk_cache: DiskCache::NoCache,
            disk_profile: DiskProfile::Unthrottled,
            cpu_pinning: None,
            // Under TCG a boot takes ~50 s on an idle 2-core host; leave room
            // for a busy one.
            ssh_timeout_secs: 300,
            image: ImageSource::default(),
            remote: None,
        }
    }

    pub fn domain_name(&self) -> String {
        domain_name(&self.lab_name)
    }

    pub fn ssh_timeout(&self) -> Duration {
        Duration::from_secs(self.ssh_timeout_secs)
    }

    /// Checks every field without touching the host.
    pub fn validate(&self) -> Result<(), VmError> {
        let bad = |field, reason: String| Err(VmError::Config { field, reason });
        if let Err(reason) = labrun_vocab::names::check_lab_name(&self.lab_name) {
            return bad("lab_name", reason);
        }
        if !self.lab_path.is_absolute() {
            return bad(
                "lab_path",
                format!("{} must be absolute", self.lab_path.display()),
            );
        }
        if self.uri.trim().is_empty() || !self.uri.contains(':') {
            return bad(
                "uri",
                format!("`{}` is not a libvirt URI (e.g. qemu:///system)", self.uri),
            );
        }
        // The lab's rules, so that `up` refuses exactly what `check` does.
        use labrun_vocab::vm_limits;
        vm_limits::check_vcpus(self.vcpus).or_else(|r| bad("vcpus", r))?;
        vm_limits::check_memory(self.memory_mib.saturating_mul(1 << 20))
            .or_else(|r| bad("memory", r))?;
        vm_limits::check_ssh_timeout(self.ssh_timeout_secs).or_else(|r| bad("ssh_timeout", r))?;
        if let Some((field, reason)) = self.disk_profile.iotune().problems().into_iter().next() {
            return bad(field, reason);
        }
        if let Some((_, reason)) = self
            .cpu_pinning
            .iter()
            .flat_map(|p| p.problems(self.vcpus))
            .next()
        {
            return bad("cpu_pinning", reason);
        }
        self.image.validate()
    }
}

impl ImageSpec {
    pub fn validate(&self) -> Result<(), VmError> {
        let bad = |field, reason: String| Err(VmError::Config { field, reason });
        if crate::recipe::recipe(&self.recipe).is_none() {
            return bad(
                "image.recipe",
                format!(
                    "unknown recipe `{}`; known: {}",
                    self.recipe,
                    crate::recipe::RECIPES.join(", ")
                ),
            );
        }
        if self.suite.is_empty()
            || !self
                .suite
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            return bad(
                "image.suite",
                format!("`{}` is not a suite name", self.suite),
            );
        }
        check_disk_gib(self.disk_gib)?;
        if let Some(p) = self.extra_packages.iter().find(|p| !is_package_name(p)) {
            return bad(
                "image.packages",
                format!("`{p}` is not a Debian package name (optionally `name=version`)"),
            );
        }
        Ok(())
    }
}

/// `labrun-<lab>`: the prefix marks the domain as labrun's at a glance.
pub fn domain_name(lab_name: &str) -> String {
    format!("labrun-{lab_name}")
}

/// A package of the image's list, optionally `name=version`: Debian's rules
/// (the artifact crate's, the same `labrun check` applies), since the list
/// ends up on mmdebstrap's command line.
fn is_package_name(s: &str) -> bool {
    use labrun_artifact::debian;
    match s.split_once('=') {
        Some((name, version)) => debian::is_package_name(name) && debian::is_version(version),
        None => debian::is_package_name(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> VmConfig {
        VmConfig::new("default", "/srv/lab.yaml")
    }

    #[test]
    fn defaults_are_the_protocols_machine_and_valid() {
        let c = cfg();
        assert_eq!((c.vcpus, c.memory_mib, c.image.disk_gib()), (4, 3072, 40));
        assert_eq!(c.domain_name(), "labrun-default");
        c.validate().unwrap();
    }

    #[test]
    fn rejects_what_would_break_the_host_side() {
        let mut c = cfg();
        c.lab_name = "Bad Name".into();
        assert!(matches!(
            c.validate(),
            Err(VmError::Config {
                field: "lab_name",
                ..
            })
        ));
        let mut c = cfg();
        c.vcpus = 0;
        assert!(matches!(
            c.validate(),
            Err(VmError::Config { field: "vcpus", .. })
        ));
        let mut c = cfg();
        c.disk_profile = DiskProfile::Custom(IoTune {
            total_iops_sec: Some(100),
            read_iops_sec: Some(50),
            ..IoTune::default()
        });
        assert!(matches!(
            c.validate(),
            Err(VmError::Config {
                field: "total_iops_sec",
                ..
            })
        ));
        // Fewer pinned CPUs than vCPUs: `up` refuses what `check` does.
        let mut c = cfg();
        c.cpu_pinning = Some(CpuPinning::Cpus(labrun_vocab::CpuList {
            vcpus: vec![0, 1],
            emulator: None,
        }));
        match c.validate() {
            Err(VmError::Config {
                field: "cpu_pinning",
                reason,
            }) => assert!(reason.contains("names 2 host CPUs for 4 vCPUs"), "{reason}"),
            other => panic!("{other:?}"),
        }
        c.vcpus = 2;
        c.validate().unwrap();
        let mut c = cfg();
        c.lab_path = "lab.yaml".into();
        assert!(c.validate().is_err());
        let mut c = cfg();
        c.image =
            recipe(|r| r.extra_packages = vec!["python3-msgpack".into(), "x; rm -rf /".into()]);
        assert!(matches!(
            c.validate(),
            Err(VmError::Config {
                field: "image.packages",
                ..
            })
        ));
        let mut c = cfg();
        c.image = recipe(|r| r.extra_packages = vec!["libfoo1=1.2-3+deb12u1".into()]);
        c.validate().unwrap();
        let mut c = cfg();
        c.image = recipe(|r| r.recipe = "fedora".into());
        assert!(c.validate().is_err());
    }

    #[test]
    fn a_throttled_disk_is_another_shape() {
        let mut c = cfg();
        let unthrottled = c.shape();
        assert_eq!(unthrottled, "4 vCPU, 3072 MiB, disk cache none");
        c.disk_profile = DiskProfile::Hdd;
        assert_eq!(
            c.shape(),
            "4 vCPU, 3072 MiB, disk cache none, disk speed hdd (total_bytes_sec=150000000, total_iops_sec=200)"
        );
        c.disk_profile = DiskProfile::Unthrottled;
        c.cpu_pinning = Some(CpuPinning::Auto);
        assert_eq!(
            c.shape(),
            "4 vCPU, 3072 MiB, disk cache none, cpu pinning auto"
        );
    }

    fn recipe(edit: impl FnOnce(&mut ImageSpec)) -> ImageSource {
        let mut r = ImageSpec::default();
        edit(&mut r);
        ImageSource::Recipe(r)
    }

    #[test]
    fn a_cloud_image_needs_an_absolute_path_and_a_digest() {
        let good = CloudImage {
            path: "/var/cache/labrun/artifacts/ab/debian-12-genericcloud-amd64.qcow2".into(),
            sha256: "ab".repeat(32),
            disk_gib: 20,
        };
        let mut c = cfg();
        c.image = ImageSource::Cloud(good.clone());
        c.validate().unwrap();
        assert_eq!(c.image.disk_gib(), 20);
        assert!(c.image.recipe().is_none());
        for bad in [
            CloudImage {
                path: "disk.qcow2".into(),
                ..good.clone()
            },
            CloudImage {
                sha256: "xyz".into(),
                ..good.clone()
            },
            CloudImage {
                disk_gib: 1,
                ..good.clone()
            },
        ] {
            c.image = ImageSource::Cloud(bad);
            assert!(c.validate().is_err());
        }
    }
}
