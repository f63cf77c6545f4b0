//! `bench --attach`: back to a run in progress (the newest, or the one
//! named), on the machine and host it runs on, followed to its end.

use crate::bench::connect::connect;
use crate::bench::follow::{AtEnd, follow_to_end};
use crate::bench::host_phases::HostPhases;
use crate::bench::layout::HostRun;
use crate::bench::machine;
use crate::bench::progress::Display;
use crate::bench::remote;
use crate::bench::request::BenchRequest;
use crate::bench::session_file::SessionFile;
use crate::context::Context;
use anyhow::{Context as _, bail};
use labrun_lab::Lab;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// Attaches to the run `id` under the request's results (the newest when
/// `id` is empty).
pub async fn attach(
    req: &BenchRequest,
    id: &str,
    display: &mut dyn Display,
) -> anyhow::Result<ExitCode> {
    let dir = if id.is_empty() {
        newest_run(&req.results)?
    } else {
        req.results.join(id)
    };
    let host = HostRun { dir };
    let mut s = SessionFile::read(&host.session_file())?;
    let lab = machine_lab(Lab::load(Path::new(&s.lab_path))?, &host)?;
    let ctx = on_the_run_host(&req.ctx, &s)?;
    let access = machine::resolve(&ctx, &lab)?;
    display.note(&format!("attaching to run {}", s.run_id));
    let session = Arc::new(connect(&access).await?);
    let pid = match s.agent_pid {
        Some(pid) => pid,
        // `bench` stopped while it started the agent: the guest knows.
        None => {
            let Some(pid) = remote::read_agent_pid(&session, &s.remote).await? else {
                bail!(
                    "run {} never started in the guest: `labrun bench` stopped before it started the agent (no {}); start a new run with `labrun bench`",
                    s.run_id,
                    s.remote.pid_file()
                );
            };
            s.agent_pid = Some(pid);
            s.write(&host.session_file())?;
            pid
        }
    };
    let mut phases = HostPhases::appending_to(&host.raw());
    let noise = crate::bench::environment::NoiseProbe::of(&ctx, &lab);
    follow_to_end(
        &session,
        &s.remote,
        pid,
        &host,
        display,
        &mut phases,
        AtEnd {
            noise: noise.as_ref(),
            summary: true,
        },
    )
    .await
}

/// The lab whose machine a run used: a variant's run (`<run>/variants/<name>`)
/// ran on that variant's machine, which may have another shape (its own VM)
/// than the lab's.
fn machine_lab(lab: Lab, host: &HostRun) -> anyhow::Result<Lab> {
    let Some(name) = variant_of(&host.dir) else {
        return Ok(lab);
    };
    let variants = lab.variants().map_err(|_| {
        anyhow::anyhow!(
            "{} no longer expands into its variants: the run's variant `{name}` cannot be found",
            lab.source.file.display()
        )
    })?;
    variants
        .into_iter()
        .find(|v| v.record.name == name)
        .map(|v| v.lab)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "{} has no variant `{name}` any more: put it back to attach to its run",
                lab.source.file.display()
            )
        })
}

/// The variant a run folder belongs to, if it is a variant's.
fn variant_of(dir: &Path) -> Option<String> {
    let parent = dir.parent()?;
    (parent.file_name()? == labrun_evidence::variant::VARIANTS_DIR)
        .then(|| dir.file_name().map(|n| n.to_string_lossy().into_owned()))
        .flatten()
}

/// The context `--attach` connects with: the pool host the run is on, as its
/// session file says, unless `--host` names it already. Another host is
/// refused (the run's agent is not there).
fn on_the_run_host(ctx: &Context, s: &SessionFile) -> anyhow::Result<Context> {
    match (&ctx.host, &s.host) {
        (Some(given), Some(ran)) if given != ran => bail!(
            "run {} is on host `{ran}`, not `{given}`: attach without --host (or with --host {ran})",
            s.run_id
        ),
        (None, Some(ran)) => Ok(Context {
            host: Some(ran.clone()),
            ..ctx.clone()
        }),
        _ => Ok(ctx.clone()),
    }
}

/// What `--attach` takes for this run: its folder under `--results`
/// (`<run>/variants/<name>` for a variant's run).
pub fn attach_id(host: &HostRun, run_id: &str) -> String {
    let parts: Vec<String> = host
        .dir
        .iter()
        .rev()
        .take(3)
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    match parts.as_slice() {
        [name, dir, run] if dir == labrun_evidence::variant::VARIANTS_DIR => {
            format!("{run}/{dir}/{name}")
        }
        _ => run_id.to_string(),
    }
}

/// The run whose session file is newest: a run folder, or a variant's
/// folder inside one (`<run>/variants/<name>`).
fn newest_run(results: &Path) -> anyhow::Result<PathBuf> {
    let entries =
        std::fs::read_dir(results).with_context(|| format!("no runs in {}", results.display()))?;
    let runs: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    let variants = runs.iter().flat_map(|run| {
        std::fs::read_dir(run.join(labrun_evidence::variant::VARIANTS_DIR))
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|e| e.path())
    });
    let session = |dir: &PathBuf| std::fs::metadata(dir.join("session.json")).ok();
    runs.iter()
        .cloned()
        .chain(variants.collect::<Vec<_>>())
        .filter_map(|dir| Some((session(&dir)?.modified().ok()?, dir)))
        .max_by_key(|(modified, _)| *modified)
        .map(|(_, dir)| dir)
        .ok_or_else(|| anyhow::anyhow!("no run to attach to in {}", results.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::layout::RemoteRun;

    #[test]
    fn a_variants_run_is_attached_by_its_folder() {
        let v = HostRun::new(Path::new("results/lab-x/variants"), "512m");
        assert_eq!(attach_id(&v, "lab-x.512m"), "lab-x/variants/512m");
        let plain = HostRun::new(Path::new("results"), "lab-x");
        assert_eq!(attach_id(&plain, "lab-x"), "lab-x");
        // The same folders tell `--attach` whose machine the run used.
        assert_eq!(variant_of(&v.dir).as_deref(), Some("512m"));
        assert_eq!(variant_of(&plain.dir), None);
    }

    #[test]
    fn attach_goes_to_the_pool_host_the_run_is_on() {
        let ctx = |host: Option<&str>| Context {
            lab_path: "lab.yaml".into(),
            mirror: None,
            cache_dir: "cache".into(),
            state_root: "state".into(),
            host: host.map(String::from),
            force_host: false,
        };
        let session = |host: Option<&str>| SessionFile {
            run_id: "lab-x.second".into(),
            lab_path: "/lab.yaml".into(),
            remote: RemoteRun {
                base: "/srv/labrun".into(),
                run_id: "lab-x.second".into(),
            },
            agent_pid: Some(7),
            started_unix: 1,
            host: host.map(String::from),
        };
        let on = |c: Option<&str>, s: Option<&str>| {
            on_the_run_host(&ctx(c), &session(s)).map(|c| c.host)
        };
        // Not told: the host the run is on.
        assert_eq!(on(None, Some("remote")).unwrap().as_deref(), Some("remote"));
        assert_eq!(
            on(Some("remote"), Some("remote")).unwrap().as_deref(),
            Some("remote")
        );
        // A run of a lab with one host, or of an older labrun: as before.
        assert_eq!(on(None, None).unwrap(), None);
        assert_eq!(on(Some("here"), None).unwrap().as_deref(), Some("here"));
        let other = on(Some("here"), Some("remote")).unwrap_err().to_string();
        assert!(
            other.contains("is on host `remote`, not `here`") && other.contains("--host remote"),
            "{other}"
        );
    }
}
