//! A pool host against what the lab expects of it (`hosts[].expect`):
//! checked before `up` makes anything there, so a variant's figures never
//! come from a machine the lab was not written for.

use labrun_lab::HostExpect;
use labrun_report::Machine;

/// Every fact of `expect` the machine does not have, in words.
pub fn mismatches(expect: &HostExpect, m: &Machine) -> Vec<String> {
    let mut out = Vec::new();
    let shown = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
    if let Some(want) = &expect.cpu_model
        && !m
            .cpu_model
            .as_deref()
            .is_some_and(|c| c.contains(want.as_str()))
    {
        out.push(format!(
            "CPU model `{}`, expected one containing `{want}`",
            shown(&m.cpu_model)
        ));
    }
    if let Some(want) = expect.cpus
        && m.cpus != Some(want)
    {
        out.push(format!(
            "{} CPUs, expected {want}",
            m.cpus
                .map_or("an unknown number of".to_string(), |c| c.to_string())
        ));
    }
    if let Some(want) = expect.memory {
        let want_mib = want.bytes() >> 20;
        // MemTotal is a little under the installed size: 3% of slack.
        if m.memory_mib.is_none_or(|have| have * 100 < want_mib * 97) {
            out.push(format!(
                "{} MiB of memory, expected at least {want_mib}",
                m.memory_mib
                    .map_or("unknown".to_string(), |v| v.to_string())
            ));
        }
    }
    if let Some(want) = &expect.kernel
        && !m
            .kernel
            .as_deref()
            .is_some_and(|k| k.starts_with(want.as_str()))
    {
        out.push(format!(
            "kernel `{}`, expected one beginning with `{want}`",
            shown(&m.kernel)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use labrun_lab::ByteSize;

    fn machine() -> Machine {
        Machine {
            cpu_model: Some("AMD EPYC 7543 32-Core Processor".into()),
            cpus: Some(2),
            memory_mib: Some(24_000),
            kernel: Some("6.1.0-57-amd64".into()),
            ..Machine::default()
        }
    }

    #[test]
    fn a_matching_host_passes() {
        let expect = HostExpect {
            cpu_model: Some("EPYC 7543".into()),
            cpus: Some(2),
            memory: Some(ByteSize::gib(24)),
            kernel: Some("6.1.".into()),
        };
        assert!(mismatches(&expect, &machine()).is_empty());
        assert!(mismatches(&HostExpect::default(), &Machine::default()).is_empty());
    }

    #[test]
    fn each_difference_is_named() {
        let expect = HostExpect {
            cpu_model: Some("Xeon".into()),
            cpus: Some(4),
            memory: Some(ByteSize::gib(64)),
            kernel: Some("6.12".into()),
        };
        let m = mismatches(&expect, &machine());
        assert_eq!(m.len(), 4, "{m:?}");
        assert!(m[0].contains("AMD EPYC") && m[0].contains("Xeon"));
        assert!(m[1].contains("2 CPUs, expected 4"));
        assert!(m[2].contains("24000 MiB") && m[2].contains("65536"));
        assert!(m[3].contains("6.1.0-57-amd64"));
        // Nothing known fails every expectation, without a panic.
        assert_eq!(mismatches(&expect, &Machine::default()).len(), 4);
    }
}
