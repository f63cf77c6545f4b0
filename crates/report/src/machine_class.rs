//! A run's machine class: what decides whether two runs' times may be put in
//! one verdict or trend. Runs of different classes sit side by side, never
//! mixed (issue 45): the host's CPU model, the machine under test's vCPUs and
//! memory, and how its CPU ran (KVM or TCG differ by an order of magnitude).

use crate::environment::Environment;
use std::fmt;

/// The class of the machine a run measured on. Every part is optional (an
/// older run or a hand-made one may lack any); a missing part reads `?`, so
/// two runs that both lack it still fall in one class.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MachineClass {
    /// The CPU model of the machine that ran the guest's CPU: the host for a
    /// VM (the guest's model is what QEMU shows it), the target itself for an
    /// SSH target (which has no acceleration).
    pub cpu_model: Option<String>,
    pub vcpus: Option<u32>,
    pub memory_mib: Option<u64>,
    /// `kvm`, `tcg`, or absent for an SSH target or an older run.
    pub acceleration: Option<String>,
}

impl MachineClass {
    /// The class of a run that recorded `env`.
    pub fn of(env: &Environment) -> Self {
        let cpu_owner = if env.acceleration.is_some() {
            &env.host
        } else {
            &env.guest
        };
        MachineClass {
            cpu_model: cpu_owner
                .cpu_model
                .as_deref()
                .map(|m| m.split_whitespace().collect::<Vec<_>>().join(" "))
                .filter(|m| !m.is_empty()),
            vcpus: env.guest.cpus,
            memory_mib: env.guest.memory_mib,
            acceleration: env.acceleration.map(|a| a.as_str().to_string()),
        }
    }

    /// The class's key: one line, stable across labrun versions, so a store
    /// can group and filter by it (`labrun runs --machine KEY`).
    pub fn key(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for MachineClass {
    /// e.g. `Intel Xeon Gold 6338 · 4 vCPU · 2.9 GiB · tcg`.
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let cpu = self.cpu_model.as_deref().unwrap_or("?");
        let vcpus = self.vcpus.map_or("?".to_string(), |n| n.to_string());
        let memory = self
            .memory_mib
            .map_or("?".to_string(), |m| format!("{:.1}", m as f64 / 1024.0));
        let accel = self.acceleration.as_deref().unwrap_or("no vm");
        write!(f, "{cpu} · {vcpus} vCPU · {memory} GiB · {accel}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::environment::Machine;
    use labrun_vocab::Acceleration;

    fn env(accel: Option<Acceleration>) -> Environment {
        Environment {
            host: Machine {
                cpu_model: Some("Intel(R)  Xeon(R) Gold 6338".into()),
                cpus: Some(2),
                memory_mib: Some(24_000),
                ..Machine::default()
            },
            guest: Machine {
                cpu_model: Some("QEMU Virtual CPU".into()),
                cpus: Some(4),
                memory_mib: Some(2_969),
                ..Machine::default()
            },
            acceleration: accel,
            ..Environment::default()
        }
    }

    #[test]
    fn a_vm_run_is_classed_by_the_hosts_cpu_and_the_guests_size() {
        let c = MachineClass::of(&env(Some(Acceleration::Tcg)));
        assert_eq!(
            c.key(),
            "Intel(R) Xeon(R) Gold 6338 · 4 vCPU · 2.9 GiB · tcg"
        );
    }

    #[test]
    fn a_target_run_is_classed_by_its_own_cpu() {
        let c = MachineClass::of(&env(None));
        assert_eq!(c.key(), "QEMU Virtual CPU · 4 vCPU · 2.9 GiB · no vm");
    }

    #[test]
    fn acceleration_and_size_each_make_another_class() {
        let tcg = MachineClass::of(&env(Some(Acceleration::Tcg)));
        let kvm = MachineClass::of(&env(Some(Acceleration::Kvm)));
        assert_ne!(tcg, kvm);
        let mut bigger = env(Some(Acceleration::Tcg));
        bigger.guest.cpus = Some(8);
        assert_ne!(MachineClass::of(&bigger), tcg);
        assert_eq!(MachineClass::default().key(), "? · ? vCPU · ? GiB · no vm");
    }
}
