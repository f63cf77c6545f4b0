//! Two runs are comparable only when measured alike: the same host CPU,
//! the same acceleration (kvm or tcg) and the same guest kernel.

use crate::environment::Environment;

/// Each difference in words, e.g. `acceleration: kvm in A, tcg in B`.
/// A run without `environment.json` cannot be checked: that is a difference.
pub fn differences(a: Option<&Environment>, b: Option<&Environment>) -> Vec<String> {
    let (a, b) = match (a, b) {
        (Some(a), Some(b)) => (a, b),
        (None, None) => {
            return vec![
                "neither run has raw/environment.json, so their machines cannot be checked".into(),
            ];
        }
        (None, Some(_)) => {
            return vec![
                "the baseline run has no raw/environment.json, so its machine cannot be checked"
                    .into(),
            ];
        }
        (Some(_), None) => {
            return vec![
                "the candidate run has no raw/environment.json, so its machine cannot be checked"
                    .into(),
            ];
        }
    };
    let accel = |e: &Environment| e.acceleration.map(|x| x.to_string());
    let (accel_a, accel_b) = (accel(a), accel(b));
    let fields: [(&str, &Option<String>, &Option<String>); 3] = [
        ("host CPU", &a.host.cpu_model, &b.host.cpu_model),
        ("acceleration", &accel_a, &accel_b),
        ("guest kernel", &a.guest.kernel, &b.guest.kernel),
    ];
    // Two hosts of one pool may be alike, but are still two machines; a run
    // that names none (no pool) is not taken for a different one.
    let hosts = (a.hypervisor.is_some() && b.hypervisor.is_some()).then_some((
        "hypervisor host",
        &a.hypervisor,
        &b.hypervisor,
    ));
    fields
        .into_iter()
        .chain(hosts)
        .filter(|(_, x, y)| normalized(x) != normalized(y))
        .map(|(what, x, y)| {
            format!(
                "{what}: {} in the baseline run, {} in the candidate run",
                shown(x),
                shown(y)
            )
        })
        .collect()
}

fn normalized(v: &Option<String>) -> Option<String> {
    v.as_ref().map(|s| s.trim().to_ascii_lowercase())
}

fn shown(v: &Option<String>) -> String {
    match v {
        Some(s) => format!("{s:?}"),
        None => "unknown".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(cpu: &str, accel: &str, kernel: &str) -> Environment {
        let mut e = Environment::default();
        e.host.cpu_model = Some(cpu.into());
        e.acceleration = accel.parse().ok();
        e.guest.kernel = Some(kernel.into());
        e
    }

    #[test]
    fn names_each_difference() {
        let a = env("AMD EPYC 7763", "kvm", "6.1.0-27-amd64");
        assert!(differences(Some(&a), Some(&a.clone())).is_empty());
        let b = env("AMD EPYC 7763", "TCG", "6.1.0-28-amd64");
        let d = differences(Some(&a), Some(&b));
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d[0].starts_with("acceleration: \"kvm\""), "{d:?}");
        assert!(d[1].contains("guest kernel"), "{d:?}");
        assert!(differences(Some(&a), None)[0].contains("candidate run has no"));
    }

    #[test]
    fn two_hosts_of_a_pool_are_two_machines_even_when_alike() {
        let mut here = env("AMD EPYC 7763", "kvm", "6.1.0-27-amd64");
        let mut there = here.clone();
        // No pool on either side, or only on one: not a difference.
        assert!(differences(Some(&here), Some(&there)).is_empty());
        there.hypervisor = Some("rack2".into());
        assert!(differences(Some(&here), Some(&there)).is_empty());
        here.hypervisor = Some("here".into());
        let d = differences(Some(&here), Some(&there));
        assert_eq!(
            d,
            ["hypervisor host: \"here\" in the baseline run, \"rack2\" in the candidate run"]
        );
        there.hypervisor = Some("here".into());
        assert!(differences(Some(&here), Some(&there)).is_empty());
    }
}
