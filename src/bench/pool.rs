//! A lab whose `hosts:` name several hypervisors: its boots (the variants
//! that share a machine) are spread over the hosts and run in parallel, one
//! machine per host. Each variant runs entirely on one host, so the figures
//! within a variant come from one machine; its environment names the host.
//!
//! A host that fails or is lost (its connection gone) ends only its own
//! share: its variants not yet run are named as not run, and the others go
//! on.

use crate::bench::layout::HostRun;
use crate::bench::progress::{Display, plain_line};
use crate::bench::request::BenchRequest;
use crate::bench::variants::{self, RunOutcome, record_failure, start_variant};
use crate::context::Context;
use labrun_evidence::Event;
use labrun_evidence::variant::VARIANTS_DIR;
use labrun_lab::{Lab, Variant};
use std::cell::RefCell;
use std::path::Path;
use std::sync::atomic::Ordering;

/// The hosts a run spreads over: the lab's pool, or those `--host` names
/// (`--host a,b`: a part of it).
pub fn hosts_for(ctx: &Context, lab: &Lab) -> anyhow::Result<Vec<String>> {
    let Some(named) = &ctx.host else {
        return Ok(lab.hosts.iter().map(|h| h.name.clone()).collect());
    };
    let mut out = Vec::new();
    for name in named.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        // The same refusal `up` gives for a name the lab does not have.
        crate::lab_vm::pick_host(lab, Some(name))?;
        if !out.iter().any(|o: &String| o == name) {
            out.push(name.to_string());
        }
    }
    Ok(out)
}

/// Which boots each host runs: the heaviest boot first to the host with the
/// least work so far (work: variants x cycles). Returns, per host, indices
/// into `groups` in run order.
pub fn assign(weights: &[u64], hosts: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..weights.len()).collect();
    // Stable: equal weights keep the lab's order.
    order.sort_by_key(|&g| std::cmp::Reverse(weights[g]));
    let mut load = vec![0u64; hosts];
    let mut out = vec![Vec::new(); hosts];
    for g in order {
        let h = (0..hosts).min_by_key(|&h| (load[h], h)).unwrap_or(0);
        load[h] += weights[g];
        out[h].push(g);
    }
    for share in &mut out {
        share.sort_unstable();
    }
    out
}

/// With fewer boots than hosts, the largest boots are split into one boot
/// per variant until every host has one (or no boot has two variants left):
/// a pool is for running side by side. Those variants then no longer share
/// a machine, and the comparison pairs only variants of one host.
fn split_for<T: Clone>(groups: &[Vec<(usize, T)>], hosts: usize) -> Vec<Vec<(usize, T)>> {
    let mut out: Vec<Vec<(usize, T)>> = groups.to_vec();
    while out.len() < hosts {
        let Some(largest) = (0..out.len())
            .filter(|&g| out[g].len() > 1)
            .max_by_key(|&g| (out[g].len(), std::cmp::Reverse(g)))
        else {
            break;
        };
        let last = out[largest].pop();
        out.extend(last.map(|v| vec![v]));
    }
    out.sort_by_key(|g| g[0].0);
    out
}

/// Runs every boot on its host, the hosts side by side. Returns the hosts
/// whose connection was lost while a variant went on there (it can be
/// finished with `bench --attach`).
#[allow(clippy::too_many_arguments)]
pub async fn run(
    req: &BenchRequest,
    run_id: &str,
    started: u64,
    hosts: &[String],
    groups: &[Vec<(usize, &Variant)>],
    total: usize,
    run_dir: &Path,
    display: &mut dyn Display,
    failed: &mut Vec<String>,
) -> Vec<String> {
    let groups = &split_for(groups, hosts.len());
    let weights: Vec<u64> = groups
        .iter()
        .map(|g| g.iter().map(|(_, v)| u64::from(v.lab.cycles)).sum())
        .collect();
    let shares = assign(&weights, hosts.len());
    for (host, share) in hosts.iter().zip(&shares) {
        let names: Vec<&str> = share
            .iter()
            .flat_map(|&g| groups[g].iter().map(|(_, v)| v.record.name.as_str()))
            .collect();
        display.note(&format!(
            "host `{host}`: {}",
            if names.is_empty() {
                "nothing to run".to_string()
            } else {
                names.join(", ")
            }
        ));
    }
    let shared = RefCell::new(display);
    let runs = hosts.iter().zip(&shares).map(|(host, share)| {
        let shared = &shared;
        async move {
            let req = req.on(Context {
                host: Some(host.clone()),
                ..req.ctx.clone()
            });
            let mut display = HostDisplay { host, shared };
            let mut failed = Vec::new();
            let mut lost = false;
            let mut left = share.iter();
            for &g in left.by_ref() {
                if variants::INTERRUPTED.load(Ordering::SeqCst) {
                    break;
                }
                let group = &groups[g];
                match variants::run_boot(
                    &req,
                    run_id,
                    started,
                    group,
                    total,
                    run_dir,
                    &mut display,
                    &mut failed,
                )
                .await
                {
                    Ok(RunOutcome::Done) => {}
                    Ok(RunOutcome::ConnectionLost(_)) => {
                        display.note(&format!(
                            "lost the connection to `{host}`: its running variant goes on there and keeps what it measured; the host's other variants are not run"
                        ));
                        lost = true;
                        // The boot's variants that never began are said, as
                        // those of the host's later boots are below.
                        let reason = anyhow::anyhow!(
                            "not run: the connection to host `{host}` was lost before this variant"
                        );
                        for (i, v) in group {
                            let began = HostRun::new(&run_dir.join(VARIANTS_DIR), &v.record.name)
                                .dir
                                .exists();
                            if !began
                                && let Ok(dir) = start_variant(run_dir, v, *i, total, &mut display)
                            {
                                record_failure(&dir, &v.record.name, &reason, &mut failed);
                            }
                        }
                        break;
                    }
                    Err(e) => {
                        display.note(&format!("host `{host}` failed: {e:#}"));
                        for (i, v) in group {
                            if let Ok(dir) = start_variant(run_dir, v, *i, total, &mut display) {
                                record_failure(&dir, &v.record.name, &e, &mut failed);
                            }
                        }
                    }
                }
            }
            // What the host never reached is said, in its folder too.
            let reason = anyhow::anyhow!("not run: host `{host}` stopped before this variant");
            for &g in left {
                for (i, v) in &groups[g] {
                    if let Ok(dir) = start_variant(run_dir, v, *i, total, &mut display) {
                        record_failure(&dir, &v.record.name, &reason, &mut failed);
                    }
                }
            }
            (failed, lost.then(|| host.clone()))
        }
    });
    let mut lost_hosts = Vec::new();
    for (f, lost) in futures::future::join_all(runs).await {
        failed.extend(f);
        lost_hosts.extend(lost);
    }
    lost_hosts
}

/// One host's view of the run's display: its lines say which host they are
/// from, and the hosts' lines interleave as they come.
struct HostDisplay<'a, 'd> {
    host: &'a str,
    shared: &'a RefCell<&'d mut dyn Display>,
}

impl Display for HostDisplay<'_, '_> {
    fn event(&mut self, event: &Event) {
        // Borrowed for the call only: the hosts' futures take turns.
        let mut inner = self.shared.borrow_mut();
        match (event, plain_line(event)) {
            // Warnings keep their own treatment (a quiet display shows them).
            (Event::Warning { .. }, _) => inner.event(event),
            (_, Some(line)) => inner.note(&format!("[{}] {line}", self.host)),
            (_, None) => {}
        }
    }
    fn note(&mut self, message: &str) {
        self.shared
            .borrow_mut()
            .note(&format!("[{}] {message}", self.host));
    }
    fn finish(&mut self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heaviest_boots_go_first_to_the_least_loaded_host() {
        // Boots of 3, 1, 1, 2 variant-cycles over two hosts.
        let shares = assign(&[3, 1, 1, 2], 2);
        // 3 to the first, 2 to the second, then each 1 to the lighter.
        assert_eq!(shares, vec![vec![0, 2], vec![1, 3]]);
        let load = |s: &Vec<usize>| s.iter().map(|&g| [3, 1, 1, 2][g]).sum::<u64>();
        assert_eq!((load(&shares[0]), load(&shares[1])), (4, 3));
    }

    #[test]
    fn boots_are_split_only_while_hosts_would_be_idle() {
        let one_boot = vec![vec![(0, 'a'), (1, 'b'), (2, 'c')]];
        assert_eq!(
            split_for(&one_boot, 2),
            vec![vec![(0, 'a'), (1, 'b')], vec![(2, 'c')]]
        );
        assert_eq!(split_for(&one_boot, 1), one_boot);
        // Singletons cannot be split further.
        let two = vec![vec![(0, 'a')], vec![(1, 'b')]];
        assert_eq!(split_for(&two, 3), two);
    }

    #[test]
    fn more_hosts_than_boots_leaves_hosts_idle_and_every_boot_runs_once() {
        let shares = assign(&[2, 2], 3);
        assert_eq!(shares, vec![vec![0], vec![1], vec![]]);
        let mut all: Vec<usize> = shares.concat();
        all.sort_unstable();
        assert_eq!(all, vec![0, 1]);
    }
}
