//! The lab file's `vm:` section turned into the VM crate's own typed settings
//! (the VM crate knows nothing of lab files), and the lab's identity for
//! commands that must work even when the lab file is gone or broken (`down`).

use crate::context::Context;
use anyhow::{Context as _, bail};
use labrun_lab::{HostSpec, Lab, Machine, VmSpec};
use labrun_vm::{CloudImage, ImageSource, ImageSpec, VmConfig};
use std::path::{Path, PathBuf};

/// The lab file's absolute path (it need not exist any more).
pub fn lab_path(ctx: &Context) -> anyhow::Result<PathBuf> {
    absolute(&ctx.lab_path)
}

fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    if let Ok(p) = std::fs::canonicalize(path) {
        return Ok(p);
    }
    let cwd = std::env::current_dir().context("cannot read the current folder")?;
    Ok(cwd.join(path))
}

/// Loads the lab and its VM settings; a lab that names an existing machine
/// (`target:`) has no VM to bring up.
pub fn load(ctx: &Context) -> anyhow::Result<(Lab, VmConfig)> {
    let lab = Lab::load(&ctx.lab_path)?;
    let cfg = vm_of(&lab, ctx)?;
    Ok((lab, cfg))
}

/// The VM settings of a lab already loaded, keyed by the file it was loaded
/// from (not by `-f`: `bench --attach` loads the lab its run named), on the
/// host `--host` names (default: the first of the lab's `hosts:`, else
/// this one).
pub fn vm_of(lab: &Lab, ctx: &Context) -> anyhow::Result<VmConfig> {
    vm_on(lab, &ctx.cache_dir, pick_host(lab, ctx.host.as_deref())?)
}

/// The host of the lab's pool called `name`, or the pool's first; None when
/// the lab has no pool (this host, at `vm.uri`).
pub fn pick_host<'a>(lab: &'a Lab, name: Option<&str>) -> anyhow::Result<Option<&'a HostSpec>> {
    if let Some(n) = name.filter(|n| n.contains(',')) {
        bail!(
            "`--host {n}` names several hosts: only `bench` of a lab with variants spreads over several; name one here"
        );
    }
    match (name, lab.hosts.first()) {
        (None, first) => Ok(first),
        (Some(n), _) => match lab.hosts.iter().find(|h| h.name == n) {
            Some(h) => Ok(Some(h)),
            None if lab.hosts.is_empty() => bail!(
                "`--host {n}`: lab `{}` names no `hosts:`; its VM runs on this host",
                lab.name
            ),
            None => bail!(
                "`--host {n}`: lab `{}` has no such host; its hosts are {}",
                lab.name,
                lab.hosts
                    .iter()
                    .map(|h| h.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
    }
}

/// How this user reaches the libvirt of the lab's machine on `host` (as
/// [`pick_host`] picks it): None for another host's hypervisor or a lab
/// without a VM. The URI the lab wrote, resolved once per process.
pub fn local_access(
    lab: &Lab,
    host: Option<&str>,
) -> anyhow::Result<Option<labrun_vm::access::LocalAccess>> {
    let Machine::Vm(vm) = lab.machine() else {
        return Ok(None);
    };
    let uri = pick_host(lab, host)?.map_or(&vm.uri, |h| &h.uri);
    if !labrun_vm::preflight::is_local_uri(uri) {
        return Ok(None);
    }
    Ok(Some(labrun_vm::access::resolve(uri)?))
}

/// The lab's VM on `host` (None: this host, at `vm.uri`).
pub fn vm_on(lab: &Lab, cache_dir: &Path, host: Option<&HostSpec>) -> anyhow::Result<VmConfig> {
    let path = absolute(&lab.source.file)?;
    let cfg = match lab.machine() {
        Machine::Vm(vm) => {
            let mut cfg = vm_config(&lab.name, &path, &vm, cache_dir)?;
            add_python_venv(lab, &mut cfg);
            if let Some(h) = host {
                cfg.uri = h.uri.clone();
                cfg.remote = h.ssh.as_ref().map(|t| labrun_vm::RemoteHost {
                    name: h.name.clone(),
                    ssh: crate::bench::machine::ssh_target(&lab.source.file, t),
                    dir: t.workdir.clone(),
                });
            }
            // A user without the system daemon gets its own session one.
            cfg.uri = labrun_vm::access::local_uri(&cfg.uri)?;
            cfg.validate()?;
            cfg
        }
        Machine::Target(t) => bail!(
            "lab `{}` runs on an existing machine ({}@{}:{}), not in a VM: `labrun up` and `labrun down` have nothing to do; run `labrun bench`",
            lab.name,
            t.user,
            t.host,
            t.port
        ),
    };
    Ok(cfg)
}

/// A Python package's venv needs the guest's python3-venv (which brings
/// python3): added to the image only for a lab with such a tool, so every
/// other lab's image (and its cache key) stays as it was.
fn add_python_venv(lab: &Lab, cfg: &mut VmConfig) {
    use labrun_artifact::{ArtifactSource, BuildRecipe};
    let python = lab.tools.iter().any(|t| {
        matches!(
            &t.artifact.source,
            ArtifactSource::Build(BuildRecipe::Python(_))
        )
    });
    if python
        && let ImageSource::Recipe(spec) = &mut cfg.image
        && !spec.extra_packages.iter().any(|p| p == "python3-venv")
    {
        spec.extra_packages.push("python3-venv".into());
    }
}

/// `cache_dir` locates a cloud image: where the artifact cache keeps the
/// pinned file. `labrun up` fetches and verifies it there
/// ([`fetch_cloud_image`]) before anything boots.
pub fn vm_config(
    lab_name: &str,
    lab_path: &Path,
    vm: &VmSpec,
    cache_dir: &Path,
) -> anyhow::Result<VmConfig> {
    let disk_gib = u32::try_from(vm.disk.bytes().div_ceil(1 << 30)).unwrap_or(u32::MAX);
    let image = match &vm.image {
        labrun_lab::ImageSpec::Debian12 | labrun_lab::ImageSpec::Debian(_) => {
            let defaults = ImageSpec::default();
            ImageSource::Recipe(ImageSpec {
                suite: vm.image.suite().unwrap_or(&defaults.suite).to_string(),
                extra_packages: vm.packages.clone(),
                disk_gib,
                ..defaults
            })
        }
        labrun_lab::ImageSpec::Cloud(a) => {
            let name = match a.file_name()? {
                labrun_artifact::FileName::Exact(n) => n,
                _ => bail!("`vm.image.cloud` must name its file (a url or file source)"),
            };
            ImageSource::Cloud(CloudImage {
                path: labrun_artifact::Cache::new(cache_dir)
                    .dir_for(&a.sha256)
                    .join(name),
                sha256: a.sha256.clone(),
                disk_gib,
            })
        }
    };
    let cfg = VmConfig {
        lab_name: lab_name.to_string(),
        lab_path: lab_path.to_path_buf(),
        uri: vm.uri.clone(),
        vcpus: vm.vcpus,
        memory_mib: vm.memory.bytes() / (1 << 20),
        accel: vm.accel,
        disk_cache: vm.disk_cache,
        disk_profile: vm.disk_profile,
        cpu_pinning: vm.cpu_pinning.clone(),
        ssh_timeout_secs: vm.ssh_timeout.as_secs(),
        image,
        remote: None,
    };
    cfg.validate()?;
    Ok(cfg)
}

/// Fetches the lab's cloud image (if it names one) and checks its SHA-256,
/// then points `cfg` at the verified disk and returns it. A wrong digest
/// stops `up` before anything is made.
pub async fn fetch_cloud_image(
    ctx: &Context,
    lab: &Lab,
    cfg: &mut VmConfig,
    progress: &mut dyn labrun_artifact::Progress,
) -> anyhow::Result<Option<CloudImage>> {
    let (Machine::Vm(vm), ImageSource::Cloud(cloud)) = (lab.machine(), &mut cfg.image) else {
        return Ok(None);
    };
    let labrun_lab::ImageSpec::Cloud(spec) = &vm.image else {
        return Ok(None);
    };
    let fetcher = labrun_artifact::Fetcher::new(labrun_artifact::FetchOptions::new(
        ctx.cache_dir.clone(),
        ctx.mirror.clone(),
    ))?;
    let fetched = fetcher.fetch("vm-image", spec, progress).await?;
    cloud.path = match &spec.extract {
        // Booted in place: no copy of a multi-GiB file.
        labrun_artifact::Extract::Raw => fetched.path,
        _ => {
            let spec = spec.clone();
            tokio::task::spawn_blocking(move || labrun_artifact::extract(&fetched, &spec))
                .await??
                .path
        }
    };
    // libvirt's QEMU user reads the base through the overlay.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&cloud.path, std::fs::Permissions::from_mode(0o644))
        .with_context(|| format!("making {} readable", cloud.path.display()))?;
    Ok(Some(cloud.clone()))
}

/// Every VM of the lab to take down: with `--host`, that host's; else the
/// lab's on each host it has state on, and the first host's (a lab file
/// that no longer loads: whatever `up` recorded for it).
pub fn configs_for_teardown(ctx: &Context) -> anyhow::Result<Vec<VmConfig>> {
    let first = config_for_teardown(ctx)?;
    if ctx.host.is_some() {
        return Ok(vec![first]);
    }
    let path = lab_path(ctx)?;
    let mut out = vec![first];
    for dir in labrun_vm::state::lab_dirs(&ctx.state_root).unwrap_or_default() {
        let Some(s) = dir.read_state().ok().flatten() else {
            continue;
        };
        if s.lab_path != path || s.lab_name != out[0].lab_name {
            continue;
        }
        let mut cfg = VmConfig::new(s.lab_name, s.lab_path);
        cfg.uri = s.uri;
        cfg.remote = s.remote;
        let same = |c: &VmConfig| {
            labrun_vm::LabDir::for_config(&ctx.state_root, c)
                == labrun_vm::LabDir::for_config(&ctx.state_root, &cfg)
        };
        if !out.iter().any(same) {
            out.push(cfg);
        }
    }
    Ok(out)
}

/// The VM settings when the lab file loads; otherwise (deleted, broken) the
/// settings `up` recorded for this lab file, so `down` can always clean up.
pub fn config_for_teardown(ctx: &Context) -> anyhow::Result<VmConfig> {
    match load(ctx) {
        Ok((_, cfg)) => Ok(cfg),
        Err(load_error) => {
            let path = lab_path(ctx)?;
            let recorded = labrun_vm::state::lab_dirs(&ctx.state_root)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|d| d.read_state().ok().flatten())
                .find(|s| s.lab_path == path);
            match recorded {
                Some(s) => {
                    let mut cfg = VmConfig::new(s.lab_name, s.lab_path);
                    cfg.uri = s.uri;
                    cfg.remote = s.remote;
                    Ok(cfg)
                }
                None => Err(load_error.context(format!(
                    "and no VM recorded for {} under {}",
                    path.display(),
                    ctx.state_root.display()
                ))),
            }
        }
    }
}
