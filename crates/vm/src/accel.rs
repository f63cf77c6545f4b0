//! Which acceleration can boot a stock Debian kernel on this host.
//!
//! `/dev/kvm` is not enough: on PVM hosts (`/sys/module/kvm_pvm`, no
//! vmx/svm in the CPU flags) KVM only runs PVM-enlightened guest kernels and a
//! stock kernel hangs with an empty console. Those hosts get TCG.

use crate::error::VmError;
pub use labrun_vocab::{Accel, Acceleration};
use std::path::Path;

/// libvirt's `<domain type=...>` for the acceleration the domain runs with.
pub fn domain_type(a: Acceleration) -> &'static str {
    match a {
        Acceleration::Kvm => "kvm",
        Acceleration::Tcg => "qemu",
    }
}

/// The facts the choice rests on, read from the host (or from test fixtures).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccelProbe {
    pub dev_kvm: bool,
    pub kvm_pvm_loaded: bool,
    pub cpu_virt_flags: bool,
}

impl AccelProbe {
    pub fn read_host() -> AccelProbe {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        AccelProbe::from_parts(Path::new("/dev/kvm"), Path::new("/sys/module"), &cpuinfo)
    }

    pub fn from_parts(dev_kvm: &Path, sys_module: &Path, cpuinfo: &str) -> AccelProbe {
        AccelProbe {
            dev_kvm: dev_kvm.exists(),
            kvm_pvm_loaded: sys_module.join("kvm_pvm").exists(),
            cpu_virt_flags: cpuinfo
                .lines()
                .filter(|l| l.starts_with("flags"))
                .any(|l| l.split_whitespace().any(|f| f == "vmx" || f == "svm")),
        }
    }

    /// Why KVM cannot run a stock kernel here, or None when it can.
    pub fn kvm_unusable_reason(&self) -> Option<String> {
        if !self.dev_kvm {
            Some("there is no /dev/kvm".into())
        } else if self.kvm_pvm_loaded {
            Some("/dev/kvm is PVM (/sys/module/kvm_pvm), which runs only PVM guest kernels".into())
        } else if !self.cpu_virt_flags {
            Some("the CPU has no vmx/svm flag".into())
        } else {
            None
        }
    }
}

/// The acceleration to use for what the lab asked, with a warning to print
/// loudly when it is TCG.
pub fn choose(
    requested: Accel,
    probe: &AccelProbe,
) -> Result<(Acceleration, Option<String>), VmError> {
    choose_for(requested, probe.kvm_unusable_reason())
}

/// [`choose`] given why KVM cannot be used (None: it can), for reasons the
/// probe does not see (a session QEMU that cannot open `/dev/kvm`).
pub fn choose_for(
    requested: Accel,
    unusable: Option<String>,
) -> Result<(Acceleration, Option<String>), VmError> {
    match (requested, unusable) {
        (Accel::Kvm, Some(reason)) => Err(VmError::KvmUnusable { reason }),
        (Accel::Kvm, None) | (Accel::Auto, None) => Ok((Acceleration::Kvm, None)),
        (Accel::Auto, Some(reason)) => Ok((Acceleration::Tcg, Some(tcg_warning(&reason)))),
        (Accel::Tcg, _) => Ok((
            Acceleration::Tcg,
            Some(tcg_warning("the lab asks for `accel: tcg`")),
        )),
    }
}

fn tcg_warning(reason: &str) -> String {
    format!(
        "SOFTWARE EMULATION (TCG): {reason}. The guest runs several times slower than under KVM; timings from this run are NOT comparable with KVM runs (the evidence records `acceleration: tcg`)."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTEL: &str = "processor : 0\nflags\t\t: fpu vme de pse vmx sse2\n";
    const NO_VIRT: &str = "processor : 0\nflags\t\t: fpu vme de pse sse2 hypervisor\n";

    fn probe(kvm: bool, pvm: bool, cpuinfo: &str) -> AccelProbe {
        let tmp = tempfile::tempdir().unwrap();
        let dev = tmp.path().join("kvm");
        if kvm {
            std::fs::write(&dev, "").unwrap();
        }
        let sys = tmp.path().join("module");
        std::fs::create_dir(&sys).unwrap();
        std::fs::create_dir(sys.join("kvm")).unwrap();
        if pvm {
            std::fs::create_dir(sys.join("kvm_pvm")).unwrap();
        }
        AccelProbe::from_parts(&dev, &sys, cpuinfo)
    }

    #[test]
    fn pvm_host_picks_tcg_with_a_warning() {
        // This project's machines: /dev/kvm present, kvm_pvm loaded, no vmx.
        let p = probe(true, true, NO_VIRT);
        let (a, warn) = choose(Accel::Auto, &p).unwrap();
        assert_eq!(a, Acceleration::Tcg);
        assert_eq!(domain_type(a), "qemu");
        assert!(warn.unwrap().contains("NOT comparable"));
        let err = choose(Accel::Kvm, &p).unwrap_err().to_string();
        assert!(err.contains("PVM") && err.contains("accel: auto"), "{err}");
    }

    #[test]
    fn real_kvm_host_picks_kvm() {
        let p = probe(true, false, INTEL);
        assert_eq!(choose(Accel::Auto, &p).unwrap(), (Acceleration::Kvm, None));
        assert_eq!(choose(Accel::Kvm, &p).unwrap().0, Acceleration::Kvm);
        assert_eq!(choose(Accel::Tcg, &p).unwrap().0, Acceleration::Tcg);
    }

    #[test]
    fn no_dev_kvm_or_no_cpu_flag_means_tcg() {
        assert_eq!(
            choose(Accel::Auto, &probe(false, false, INTEL)).unwrap().0,
            Acceleration::Tcg
        );
        assert_eq!(
            choose(Accel::Auto, &probe(true, false, NO_VIRT)).unwrap().0,
            Acceleration::Tcg
        );
    }

    /// `read_host` reads this host's real /dev/kvm, /sys/module and CPU
    /// flags (read here on their own), and `choose` follows what it read.
    #[test]
    fn this_host_is_probed_from_its_real_files() {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").expect("/proc/cpuinfo is readable");
        let virt_flags = cpuinfo
            .lines()
            .filter(|l| l.split(':').next().map(str::trim) == Some("flags"))
            .flat_map(|l| l.split(':').nth(1).unwrap_or("").split_whitespace())
            .any(|f| f == "vmx" || f == "svm");
        let want = AccelProbe {
            dev_kvm: Path::new("/dev/kvm").exists(),
            kvm_pvm_loaded: Path::new("/sys/module/kvm_pvm").exists(),
            cpu_virt_flags: virt_flags,
        };
        let p = AccelProbe::read_host();
        assert_eq!(p, want);

        let usable = want.dev_kvm && !want.kvm_pvm_loaded && want.cpu_virt_flags;
        let (a, warning) = choose(Accel::Auto, &p).unwrap();
        assert_eq!(a == Acceleration::Kvm, usable, "{p:?} chose {a}");
        match p.kvm_unusable_reason() {
            None => assert!(usable && warning.is_none()),
            Some(reason) => {
                assert!(!usable);
                let warning = warning.expect("TCG is chosen with a warning");
                assert!(warning.contains(&reason), "{warning}");
                assert!(choose(Accel::Kvm, &p).is_err());
            }
        }
    }
}
