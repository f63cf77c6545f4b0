//! `up`: host checks, image, overlay, keys, seed, domain, SSH. The state file
//! is written before anything else is made and updated as `up` goes, so
//! `down` finds whatever a killed `up` left. Any failure or cancellation
//! tears down what this `up` made before returning.

use crate::accel::Acceleration;
use crate::cloud;
use crate::config::{ImageSource, VmConfig};
use crate::console_watch::{self, ConsoleWatch};
use crate::disks::{self, Disks};
use crate::down::teardown;
use crate::error::VmError;
use crate::host;
use crate::hypervisor::{Hypervisor, StartError};
use crate::image::{self, BaseImage};
use crate::lock::LabLock;
use crate::nocloud;
use crate::preflight::{self, HostReport};
use crate::remote::HostShell;
use crate::seed::{self, SeedKeys};
use crate::state::{LabDir, Phase, VmState};
use crate::xml::{self, Boot, DomainSpec, LabrunMetadata};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Where labrun keeps things on the host.
#[derive(Debug, Clone)]
pub struct Paths {
    pub cache_dir: PathBuf,
    pub state_root: PathBuf,
    /// The host's apt configuration folder (`/etc/apt`).
    pub apt_dir: PathBuf,
}

/// Set to `true` to make `up` stop and clean up (Ctrl-C).
pub type Cancel = watch::Receiver<bool>;

/// What `up` reports while it works.
pub trait UpProgress: Send + Sync {
    /// A loud warning (TCG, disk space).
    fn warn(&self, message: &str);
    /// A new step begins.
    fn step(&self, message: &str);
    /// A line of the image build's output.
    fn image_line(&self, line: &str);
    /// Waiting for SSH: attempt `n` is starting.
    fn ssh_attempt(&self, n: u32);
}

/// How `up` ended.
pub enum UpOutcome {
    /// The lab's VM was up already and answered SSH: nothing was done.
    AlreadyUp { state: VmState },
    /// A fresh VM, SSH ready. Keep `lock` while installing tools.
    Started {
        state: VmState,
        session: labrun_ssh::Session,
        lock: LabLock,
        /// Domain start to SSH answering.
        boot: Duration,
        image_built: bool,
        /// How the first boot crashed, when `up` booted the guest again
        /// (also in `state.boot_retry`).
        boot_retry: Option<String>,
    },
}

/// Brings the lab's VM up. See the module docs.
pub async fn up(
    cfg: &VmConfig,
    paths: &Paths,
    progress: &dyn UpProgress,
    mut cancel: Cancel,
) -> Result<UpOutcome, VmError> {
    cfg.validate()?;
    let dir = LabDir::for_config(&paths.state_root, cfg);
    let name = cfg.domain_name();
    let hv = Hypervisor::open(&cfg.uri)?;
    dir.create()?;
    let lock = LabLock::acquire(&dir.lock_file(), &cfg.lab_name, "labrun up")?;

    if let Some(state) = already_up(&dir, &hv, &name).await {
        return Ok(UpOutcome::AlreadyUp { state });
    }
    if let Some(d) = hv.find(&name)?
        && let Some(m) = &d.metadata
        && m.lab_path != cfg.lab_path
    {
        return Err(VmError::NameTaken {
            name,
            owner: format!("the lab at {}", m.lab_path.display()),
        });
    }
    // A remote hypervisor's host: files go there over SSH.
    let shell = match &cfg.remote {
        Some(r) => Some(r.connect().await?),
        None => None,
    };
    // Leftovers of an earlier `up` of this lab (killed, or its VM died).
    let stale = teardown(&hv, &dir, &name, true, shell.as_ref()).await?;
    if !stale.is_empty() {
        progress.step(&format!(
            "removed leftovers of an earlier `up`: {}",
            stale.join(", ")
        ));
    }

    let cached = match &cfg.image {
        ImageSource::Recipe(spec) => image::cached(&paths.cache_dir, spec)?,
        ImageSource::Cloud(_) => None,
    };
    let must_build = cfg.image.recipe().is_some() && cached.is_none();
    let report: HostReport = match &shell {
        None => preflight::preflight(cfg, &paths.cache_dir, &paths.state_root, must_build)?,
        Some(sh) => preflight::remote(cfg, &paths.cache_dir, must_build, sh).await?,
    };
    for w in &report.warnings {
        progress.warn(w);
    }
    // A list naming CPUs the host lacks stops `up` here, before anything
    // is made; what `auto` could not pin is said and recorded.
    let cpu_pinning = crate::pinning::for_up(cfg, shell.as_ref()).await?;
    for note in cpu_pinning.iter().flat_map(|p| &p.notes) {
        progress.warn(&format!("cpu pinning: {note}"));
    }

    let (image, image_built) = match (&cfg.image, cached) {
        (_, Some(img)) => (BootImage::recipe(img), false),
        (ImageSource::Recipe(spec), None) => {
            progress.step("building the base image (once; cached afterwards)");
            let mut on_line = |l: &str| progress.image_line(l);
            let built = tokio::select! {
                r = image::build(&paths.cache_dir, spec, &paths.apt_dir, false, &mut on_line) => r?,
                _ = cancelled(&mut cancel) => {
                    teardown(&hv, &dir, &name, false, shell.as_ref()).await?;
                    return Err(VmError::Cancelled);
                }
            };
            (BootImage::recipe(built), true)
        }
        (ImageSource::Cloud(c), None) => {
            let format = cloud::inspect(c).await?;
            (BootImage::cloud(c, format), false)
        }
    };

    let now = std::time::SystemTime::now();
    let up_id = format!(
        "{}-{}",
        now.duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0),
        std::process::id()
    );
    let mut state = VmState {
        schema: VmState::schema(),
        lab_name: cfg.lab_name.clone(),
        lab_path: cfg.lab_path.clone(),
        domain_name: name.clone(),
        uri: cfg.uri.clone(),
        up_id,
        created: humantime::format_rfc3339_seconds(now).to_string(),
        phase: Phase::Creating,
        ssh_port: None,
        vcpus: cfg.vcpus,
        memory_mib: cfg.memory_mib,
        disk_profile: cfg.disk_profile,
        cpu_pinning,
        acceleration: report.acceleration,
        image_digest: image.digest.clone(),
        image_dir: image.dir.clone(),
        host_key: None,
        client_key: dir.client_key(),
        shape: cfg.shape(),
        remote: cfg.remote.clone(),
        boot_retry: None,
    };
    dir.write_state(&state)?;

    let disks = match (&shell, &cfg.remote) {
        (Some(sh), Some(r)) => Disks::There {
            shell: sh,
            dir: r.lab_dir(&dir.path),
        },
        _ => Disks::Here,
    };
    let accel = describe(state.acceleration);
    // A guest whose kernel crashes while booting is booted once more, from
    // fresh disks; the crash is said and kept in the state.
    let boot_once = async |first_crash: Option<&str>| {
        if let Some(first) = first_crash {
            progress.warn(&format!(
                "the guest's kernel {first}: removing the domain and booting it again (once)"
            ));
            teardown(&hv, &dir, &name, true, shell.as_ref()).await?;
            state.boot_retry = Some(first.to_string());
            state.phase = Phase::Creating;
            dir.write_state(&state)?;
        }
        make_and_boot(cfg, &hv, &dir, &disks, image.clone(), &mut state, progress).await
    };
    let made = tokio::select! {
        r = boot_retrying_a_crash(boot_once, accel) => r,
        _ = cancelled(&mut cancel) => Err(VmError::Cancelled),
    };
    match made {
        Ok(((session, boot), boot_retry)) => Ok(UpOutcome::Started {
            state,
            session,
            lock,
            boot,
            image_built,
            boot_retry,
        }),
        Err(e) => {
            // Whatever went wrong, leave nothing behind.
            teardown(&hv, &dir, &name, false, shell.as_ref()).await?;
            Err(e)
        }
    }
}

/// Boots with `boot`; when the guest's kernel crashes while booting
/// ([`VmError::GuestCrashed`]), boots once more, telling `boot` the first
/// crash (to clear it away and record it first). Returns what the boot
/// made, and the first crash when there was a second boot; a second crash
/// is [`VmError::GuestCrashedTwice`]. Any other error is returned at once.
async fn boot_retrying_a_crash<T>(
    mut boot: impl AsyncFnMut(Option<&str>) -> Result<T, VmError>,
    accel: &'static str,
) -> Result<(T, Option<String>), VmError> {
    let first = match boot(None).await {
        Err(VmError::GuestCrashed { after, line, .. }) => {
            format!("crashed {after:.1?} into its boot ({line})")
        }
        other => return other.map(|made| (made, None)),
    };
    match boot(Some(&first)).await {
        Ok(made) => Ok((made, Some(first))),
        Err(second @ VmError::GuestCrashed { .. }) => Err(VmError::GuestCrashedTwice {
            first,
            second: Box::new(second),
            accel,
        }),
        Err(e) => Err(e),
    }
}

/// The disk the domain boots from, and how.
#[derive(Clone)]
struct BootImage {
    /// The file the overlay is backed by (never written).
    base: PathBuf,
    /// Its format, for `qemu-img create -F`.
    format: String,
    /// Size of the overlay when it must be bigger than the base.
    size_gib: Option<u32>,
    boot: Boot,
    /// Recorded in the state: the recipe digest, or the cloud image's SHA-256.
    digest: String,
    dir: PathBuf,
}

impl BootImage {
    fn recipe(img: BaseImage) -> BootImage {
        BootImage {
            base: img.disk(),
            format: "qcow2".into(),
            size_gib: None,
            boot: Boot::Kernel {
                kernel: img.kernel(),
                initrd: img.initrd(),
            },
            digest: img.digest,
            dir: img.dir,
        }
    }

    fn cloud(c: &crate::config::CloudImage, format: String) -> BootImage {
        BootImage {
            base: c.path.clone(),
            format,
            size_gib: Some(c.disk_gib),
            boot: Boot::Disk,
            digest: c.sha256.clone(),
            dir: c.path.parent().map(PathBuf::from).unwrap_or_default(),
        }
    }

    /// The same image on a remote hypervisor's host: uploaded there once
    /// (checked by SHA-256), then booted from the host's copy.
    async fn on_host(
        self,
        shell: &HostShell,
        progress: &dyn UpProgress,
    ) -> Result<BootImage, VmError> {
        let mut files = vec![self.base.clone()];
        let manifest = match &self.boot {
            Boot::Kernel { kernel, initrd } => {
                files.extend([kernel.clone(), initrd.clone()]);
                Some(self.dir.join(image::MANIFEST))
            }
            Boot::Disk => None,
        };
        let on_step = |m: &str| progress.step(m);
        let there = shell
            .place_image(
                &self.digest,
                &disks::image_files(&files),
                manifest.as_deref(),
                &on_step,
            )
            .await?;
        let moved = |p: &PathBuf| -> PathBuf {
            let name = p.file_name().map(PathBuf::from).unwrap_or_default();
            PathBuf::from(&there).join(name)
        };
        Ok(BootImage {
            base: moved(&self.base),
            boot: match &self.boot {
                Boot::Kernel { kernel, initrd } => Boot::Kernel {
                    kernel: moved(kernel),
                    initrd: moved(initrd),
                },
                Boot::Disk => Boot::Disk,
            },
            dir: PathBuf::from(&there),
            ..self
        })
    }
}

/// Files, domain, SSH: the part that is undone on failure.
async fn make_and_boot(
    cfg: &VmConfig,
    hv: &Hypervisor,
    dir: &LabDir,
    disks: &Disks<'_>,
    image: BootImage,
    state: &mut VmState,
    progress: &dyn UpProgress,
) -> Result<(labrun_ssh::Session, Duration), VmError> {
    let image = match disks {
        Disks::There { shell, .. } => image.on_host(shell, progress).await?,
        Disks::Here => image,
    };
    let image = &image;
    progress.step("making keys, overlay disk and seed");
    let client_public = if dir.client_key().exists() {
        labrun_ssh::public_key_line(&dir.client_key())?
    } else {
        labrun_ssh::generate_ed25519(&dir.client_key(), "labrun-client")?
    };
    for p in [dir.host_key(), dir.host_key().with_extension("pub")] {
        let _ = std::fs::remove_file(p);
    }
    let host_public = labrun_ssh::generate_ed25519(&dir.host_key(), &state.domain_name)?;
    let host_private = std::fs::read(dir.host_key()).map_err(VmError::io(dir.host_key()))?;
    disks
        .create_overlay(dir, &image.base, &image.format, image.size_gib)
        .await?;
    let keys = SeedKeys {
        authorized_key: &client_public,
        host_private_key: &host_private,
        host_public_key: &host_public,
    };
    match image.boot {
        Boot::Kernel { .. } => seed::write_seed(&dir.seed(), &keys)?,
        Boot::Disk => nocloud::write_seed(
            &dir.seed(),
            &keys,
            &nocloud::Identity {
                instance_id: &state.up_id,
                hostname: &state.domain_name,
            },
        )?,
    }
    disks.place_seed(dir).await?;
    let host_key = key_type_and_blob(&host_public);
    // HostKeyAlias=<domain> keeps this line valid whatever the port.
    crate::state::write_atomic(
        &dir.known_hosts(),
        format!("{} {host_key}\n", state.domain_name).as_bytes(),
        0o644,
    )?;
    state.host_key = Some(host_key);

    progress.step(&format!(
        "starting {} ({} vCPU, {} MiB, {})",
        state.domain_name,
        cfg.vcpus,
        cfg.memory_mib,
        state.acceleration.as_str()
    ));
    let started = start_domain(cfg, hv, dir, disks, image, state).await?;
    state.phase = Phase::Booting;
    dir.write_state(state)?;

    let Some(target) = state.ssh_target() else {
        return Err(VmError::Libvirt("internal: no SSH port recorded".into()));
    };
    progress.step("waiting for SSH");
    let timeout = cfg.ssh_timeout();
    let waited = tokio::select! {
        r = wait_for_ssh(&target, timeout, progress) => r,
        (line, console) = console_crash(disks, dir) => {
            return Err(VmError::GuestCrashed {
                after: started.elapsed(),
                line,
                console,
            });
        }
    };
    let session = match waited {
        Ok(s) => s,
        Err(labrun_ssh::SshError::Timeout(_)) => {
            return Err(VmError::SshTimeout {
                timeout,
                console: disks.console_tail(dir, 20).await,
            });
        }
        Err(e) => return Err(e.into()),
    };
    let boot = started.elapsed();
    state.phase = Phase::Ready;
    dir.write_state(state)?;
    Ok((session, boot))
}

/// Returns when the guest's console reports a kernel crash, with the crash's
/// line and the console's last lines; never, for a guest that boots. The
/// console is followed as it grows here, or read again every 2 s on a
/// remote hypervisor's host.
async fn console_crash(disks: &Disks<'_>, dir: &LabDir) -> (String, String) {
    match disks {
        Disks::Here => {
            let mut watch = ConsoleWatch::new(dir.console_log());
            loop {
                if let Some(line) = watch.poll() {
                    return (line, watch.last_lines());
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
        Disks::There { .. } => loop {
            tokio::time::sleep(Duration::from_secs(2)).await;
            let tail = disks.console_tail(dir, 200).await;
            if let Some(line) = console_watch::first_crash(&tail) {
                let lines: Vec<&str> = tail.lines().collect();
                let start = lines.len().saturating_sub(console_watch::KEPT_LINES);
                return (line.to_string(), lines[start..].join("\n"));
            }
        },
    }
}

/// Polls sshd through the forwarded port. Through slirp the TCP connect
/// succeeds before sshd listens and the attempt then hangs until its
/// timeout, so the first minute and a half uses short attempts (3 s, 0.2 s
/// apart: SSH is seen within ~3 s of sshd listening); after that, attempts
/// get 10 s, for a guest so starved that its handshake is slow.
async fn wait_for_ssh(
    target: &labrun_ssh::Target,
    timeout: Duration,
    progress: &dyn UpProgress,
) -> Result<labrun_ssh::Session, labrun_ssh::SshError> {
    let started = Instant::now();
    let quick = labrun_ssh::ConnectOptions {
        attempt_timeout: Duration::from_secs(3),
        retry_pause: Duration::from_millis(200),
        ..Default::default()
    };
    let patient = labrun_ssh::ConnectOptions {
        attempt_timeout: Duration::from_secs(10),
        ..Default::default()
    };
    let mut attempts = 0;
    let mut on_attempt = |n: u32| {
        attempts = n;
        progress.ssh_attempt(n)
    };
    let first = timeout.min(Duration::from_secs(90));
    match labrun_ssh::wait_until_ready_with(target, first, &quick, &mut on_attempt).await {
        Err(labrun_ssh::SshError::Timeout(_)) if first < timeout => {}
        other => return other,
    }
    let offset = attempts;
    let rest = timeout.saturating_sub(started.elapsed());
    let mut on_attempt = |n: u32| progress.ssh_attempt(offset + n);
    match labrun_ssh::wait_until_ready_with(target, rest, &patient, &mut on_attempt).await {
        Err(labrun_ssh::SshError::Timeout(_)) => Err(labrun_ssh::SshError::Timeout(timeout)),
        other => other,
    }
}

/// Picks a port and starts the domain, retrying with another port when the
/// first was taken in between. Returns when the domain was started.
async fn start_domain(
    cfg: &VmConfig,
    hv: &Hypervisor,
    dir: &LabDir,
    disks: &Disks<'_>,
    image: &BootImage,
    state: &mut VmState,
) -> Result<Instant, VmError> {
    const ATTEMPTS: u32 = 5;
    let mut last = String::new();
    for _ in 0..ATTEMPTS {
        let port = host::free_local_port()?;
        let spec = DomainSpec {
            name: state.domain_name.clone(),
            acceleration: state.acceleration,
            vcpus: cfg.vcpus,
            memory_mib: cfg.memory_mib,
            boot: image.boot.clone(),
            overlay: disks.overlay(dir),
            seed: disks.seed(dir),
            console_log: disks.console_log(dir),
            ssh_port: port,
            disk_cache: cfg.disk_cache,
            iotune: cfg.disk_profile.iotune(),
            pins: state
                .cpu_pinning
                .as_ref()
                .map(|p| p.cpus.clone())
                .unwrap_or_default(),
            metadata: LabrunMetadata {
                lab_name: cfg.lab_name.clone(),
                lab_path: cfg.lab_path.clone(),
                state_dir: dir.path.clone(),
                up_id: state.up_id.clone(),
                created: state.created.clone(),
            },
        };
        let domain_xml = xml::domain_xml(&spec);
        crate::state::write_atomic(&dir.domain_xml(), domain_xml.as_bytes(), 0o644)?;
        // Recorded before the start, so `down` after a kill right here still
        // knows the port and the domain.
        state.ssh_port = Some(port);
        dir.write_state(state)?;
        let started = Instant::now();
        match hv.create(&domain_xml) {
            Ok(()) => return Ok(started),
            Err(StartError::PortInUse(m)) => last = m,
            Err(StartError::Other(e)) => return Err(e),
        }
    }
    Err(VmError::NoPort {
        attempts: ATTEMPTS,
        reason: last,
    })
}

/// The VM of this lab, if it is running and answers SSH with the pinned key.
async fn already_up(dir: &LabDir, hv: &Hypervisor, name: &str) -> Option<VmState> {
    let state = dir.read_state().ok()??;
    if state.phase != Phase::Ready {
        return None;
    }
    let d = hv.find(name).ok()??;
    if !d.active {
        return None;
    }
    let target = state.ssh_target()?;
    let session = labrun_ssh::connect(&target, Duration::from_secs(10))
        .await
        .ok()?;
    let _ = session.close().await;
    Some(state)
}

/// `ssh-ed25519 AAAA...` without the comment.
fn key_type_and_blob(line: &str) -> String {
    line.split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}

async fn cancelled(cancel: &mut Cancel) {
    loop {
        if *cancel.borrow() {
            return;
        }
        if cancel.changed().await.is_err() {
            // The sender is gone: nobody can cancel any more.
            std::future::pending::<()>().await;
        }
    }
}

/// The acceleration in effect, for callers that only need to say it.
pub fn describe(a: Acceleration) -> &'static str {
    match a {
        Acceleration::Kvm => "KVM",
        Acceleration::Tcg => "TCG (software emulation)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crash(line: &str) -> VmError {
        VmError::GuestCrashed {
            after: Duration::from_millis(1800),
            line: line.into(),
            console: format!("[    1.8] {line}\n[    1.9] ---[ end Kernel panic ]---"),
        }
    }

    /// Runs the retry with boots that end as `ends` says, in turn; returns
    /// its result and the crash each boot was told of.
    async fn boots(
        ends: Vec<Result<u32, VmError>>,
    ) -> (Result<(u32, Option<String>), VmError>, Vec<Option<String>>) {
        let mut ends = ends.into_iter();
        let mut told = Vec::new();
        let boot = async |first: Option<&str>| {
            told.push(first.map(str::to_string));
            ends.next().expect("no more boots than planned")
        };
        let r = boot_retrying_a_crash(boot, "TCG (software emulation)").await;
        (r, told)
    }

    #[tokio::test]
    async fn a_crash_while_booting_is_booted_again_once() {
        let panic = "Kernel panic - not syncing: Attempted to kill the idle task!";
        let (r, told) = boots(vec![Err(crash(panic)), Ok(7)]).await;
        let (made, retry) = r.unwrap();
        assert_eq!(made, 7);
        let retry = retry.expect("the retry is recorded");
        assert!(
            retry.contains("1.8s into its boot") && retry.contains(panic),
            "{retry}"
        );
        assert_eq!(told, [None, Some(retry)]);
    }

    #[tokio::test]
    async fn a_second_crash_is_a_clear_error_after_one_retry() {
        let (r, told) = boots(vec![Err(crash("Oops: 0000 [#1]")), Err(crash("BUG: x"))]).await;
        assert_eq!(told.len(), 2, "one retry, no more");
        let err = r.unwrap_err().to_string();
        assert!(err.contains("crashed while booting, twice"), "{err}");
        assert!(
            err.contains("Oops: 0000 [#1]") && err.contains("BUG: x"),
            "{err}"
        );
        assert!(err.contains("end Kernel panic"), "the console lines: {err}");
        assert!(err.contains("labrun up` again"), "what to do: {err}");
    }

    #[tokio::test]
    async fn other_failures_are_not_retried() {
        let (r, told) = boots(vec![Err(VmError::SshTimeout {
            timeout: Duration::from_secs(300),
            console: String::new(),
        })])
        .await;
        assert!(matches!(r, Err(VmError::SshTimeout { .. })));
        assert_eq!(told.len(), 1);
        let (r, told) = boots(vec![Ok(1)]).await;
        assert_eq!(r.unwrap(), (1, None));
        assert_eq!(told.len(), 1);
    }

    #[test]
    fn pinned_key_drops_the_comment() {
        assert_eq!(
            key_type_and_blob("ssh-ed25519 AAAAC3 labrun-demo\n"),
            "ssh-ed25519 AAAAC3"
        );
    }
}
