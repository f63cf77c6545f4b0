//! The facts a run's folder keeps beside its measurements, gathered before
//! the agent starts: where each tool came from, the machine's environment,
//! and how long the run should take.

use crate::bench::environment;
use crate::bench::estimate;
use crate::bench::layout::RemoteRun;
use crate::bench::machine::Access;
use crate::bench::progress::Display;
use crate::context::Context;
use anyhow::Context as _;
use labrun_evidence::Plan;
use labrun_lab::Lab;
use std::path::Path;

/// Where each of the lab's tools came from (the lab's source in one line;
/// for a binary built here, the build's own record: toolchain, flags, the
/// binary's embedded build info), and whether this run runs it.
pub fn write_tool_sources(ctx: &Context, lab: &Lab, plan: &Plan, raw: &Path) -> anyhow::Result<()> {
    let tools: Vec<labrun_report::ToolSource> = lab
        .tools
        .iter()
        .map(|t| {
            let a = &t.artifact;
            let build = a
                .source
                .is_build()
                .then(|| labrun_artifact::build::find_record(&ctx.cache_dir, &a.sha256))
                .flatten();
            labrun_report::ToolSource {
                name: t.name.clone(),
                version: Some(t.version.clone()),
                source: a.provenance(),
                run: plan.tools.iter().any(|p| p.name == t.name),
                sha256: Some(a.sha256.clone()),
                sha256_source: a.sha256_source.clone(),
                binary_sha256: a.binary_sha256.clone(),
                build,
                download: labrun_artifact::Cache::new(&ctx.cache_dir).download_record(&a.sha256),
            }
        })
        .collect();
    let path = raw.join(labrun_report::TOOL_SOURCES_FILE);
    std::fs::write(&path, serde_json::to_vec_pretty(&tools)?)
        .with_context(|| format!("writing {}", path.display()))
}

/// Says how long the run should take, from the machine's measured rates.
pub async fn say_estimate(
    session: &labrun_ssh::Session,
    lab: &Lab,
    plan: &Plan,
    access: &Access,
    remote: &RemoteRun,
    display: &mut dyn Display,
) -> Option<estimate::Estimate> {
    use labrun_evidence::{DatasetPlan, HistorySource};
    let (scale, commits) = match &plan.dataset {
        DatasetPlan::Synthetic { scale, .. } => (Some(*scale), 1),
        // A generated history has no scale: the lab gives its size and
        // its number of commits.
        DatasetPlan::GitHistory {
            source: HistorySource::Generate(g),
        } => (None, g.commits),
        // A repository's trees and a real tree's size are measured when
        // they are read, pushed or unpacked, after this: no guess.
        DatasetPlan::GitHistory { .. } | DatasetPlan::Tree(_) => return None,
    };
    let bytes = estimate::dataset_bytes(lab, scale);
    let probe = format!(
        "mkdir -p {base} && cd {base} && {}",
        estimate::PROBE,
        base = crate::bench::layout::sh_quote(&remote.base)
    );
    let rates = match session.exec(&probe).await {
        Ok(o) => estimate::MachineRates::parse(&String::from_utf8_lossy(&o.stdout)),
        Err(_) => None,
    };
    let emulated = access
        .acceleration
        .is_some_and(labrun_vm::Acceleration::is_emulated);
    match rates {
        Some(rates) => {
            let work = estimate::Workload::of(&plan.protocol, commits);
            let e = estimate::estimate(bytes, plan.tools.len(), plan.cycles, work, rates);
            display.note(&estimate::describe(&e, scale, emulated));
            Some(e)
        }
        None => {
            display
                .note("could not measure the machine's write and hash rates: no duration estimate");
            None
        }
    }
}

/// The machine's environment as the guest reports it, completed with what
/// the host knows of the machine (its VM's settings, its pool host).
pub async fn environment_of(
    session: &labrun_ssh::Session,
    access: &Access,
) -> labrun_report::Environment {
    let mut env = environment::capture(session, access.hypervisor.as_ref()).await;
    env.acceleration = access.acceleration;
    env.disk_cache = access.disk_cache.clone();
    env.disk_profile = access.disk_profile.map(|p| p.name().to_string());
    env.disk_iotune = access.disk_profile.map(|p| p.iotune());
    env.cpu_pinning = access.cpu_pinning.clone();
    env.boot_retry = access.boot_retry.clone();
    env.libvirt_version = env
        .libvirt_version
        .take()
        .or_else(|| access.libvirt_version.clone());
    env.qemu_version = env
        .qemu_version
        .take()
        .or_else(|| access.qemu_version.clone());
    env.hypervisor = access.pool_host.clone().or(env.hypervisor.take());
    env
}
