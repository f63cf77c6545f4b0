//! The summary's warnings for the host's noise sources recorded in
//! `environment.json`: one per source found, with the command that removes
//! it. What counts as noise is `labrun-host`'s rule, not decided here.

use crate::environment::Environment;
use crate::warning::{Warning, WarningKind};
use labrun_host::{Finding, Source};

pub fn warnings(env: &Environment) -> Vec<Warning> {
    let Some(noise) = env.noise.as_ref() else {
        return Vec::new();
    };
    let before = noise
        .before
        .as_ref()
        .map(|n| n.findings())
        .unwrap_or_default();
    let after = noise
        .after
        .as_ref()
        .map(|n| n.findings())
        .unwrap_or_default();
    let in_before = |s: Source| before.iter().any(|f| f.source == s);
    let in_after = |f: &Finding| {
        after
            .iter()
            .any(|a| a.source == f.source && a.found == f.found)
    };
    let mut out: Vec<Warning> = before
        .iter()
        .map(|f| {
            let when = if in_after(f) {
                "before and after the run"
            } else {
                "before the run"
            };
            warning(f, when)
        })
        .collect();
    // A source that appeared during the run, or read differently at its
    // end (another load, another domain), is said as found then.
    out.extend(
        after
            .iter()
            .filter(|f| !(in_before(f.source) && before.iter().any(|b| b.found == f.found)))
            .map(|f| warning(f, "after the run")),
    );
    if let Some(why) = &noise.not_read {
        out.push(Warning::new(
            WarningKind::HostNoise,
            format!(
                "The host's noise sources were not all read ({why}): a source may have gone unseen."
            ),
        ));
    }
    out
}

fn warning(f: &Finding, when: &str) -> Warning {
    Warning::new(
        WarningKind::HostNoise,
        format!(
            "Host noise {when}: {}. Nothing was changed on the host; to remove it: `{}`.",
            f.found, f.fix
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use labrun_host::{HostNoise, NoiseRecord};

    fn env(before: Option<HostNoise>, after: Option<HostNoise>) -> Environment {
        Environment {
            noise: Some(NoiseRecord {
                before,
                after,
                not_read: None,
            }),
            ..Environment::default()
        }
    }

    #[test]
    fn each_source_is_warned_about_once_with_its_fix() {
        let thp = HostNoise {
            transparent_hugepages: Some("always".into()),
            ..HostNoise::default()
        };
        let swap_too = HostNoise {
            memory: Some(labrun_host::Memory {
                swap_used_mib: Some(300),
                ..Default::default()
            }),
            ..thp.clone()
        };
        let w = warnings(&env(Some(thp), Some(swap_too)));
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w.iter().all(|w| w.kind == WarningKind::HostNoise));
        assert!(
            w[0].message
                .starts_with("Host noise before and after the run: transparent huge pages")
                && w[0]
                    .message
                    .contains("`echo never > /sys/kernel/mm/transparent_hugepage/enabled`"),
            "{}",
            w[0].message
        );
        assert!(
            w[1].message
                .starts_with("Host noise after the run: 300 MiB of swap")
                && w[1].message.contains("`swapoff -a`"),
            "{}",
            w[1].message
        );
    }

    #[test]
    fn nothing_recorded_or_nothing_found_warns_of_nothing() {
        assert!(warnings(&Environment::default()).is_empty());
        let quiet = HostNoise {
            transparent_hugepages: Some("never".into()),
            ..HostNoise::default()
        };
        assert!(warnings(&env(Some(quiet), None)).is_empty());
        assert!(warnings(&env(None, None)).is_empty());
    }

    #[test]
    fn a_side_not_read_is_said() {
        let mut e = env(None, None);
        if let Some(n) = e.noise.as_mut() {
            n.not_read = Some("rack2 did not answer over SSH".into());
        }
        let w = warnings(&e);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].message.contains("rack2 did not answer"),
            "{}",
            w[0].message
        );
    }
}
