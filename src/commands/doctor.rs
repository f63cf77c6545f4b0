//! `labrun doctor`: what this host will give a run of the lab, and why, one
//! line per fact with what to do about it. Read-only. Exit 0 when a run can
//! start, 1 when it cannot: the verdict is `up`'s own host checks
//! (`labrun_vm::preflight`), so doctor and `up` never disagree.

use crate::bench::environment::NoiseProbe;
use crate::context::Context;
use crate::exit;
use labrun_vm::accel::{self, AccelProbe, Acceleration};
use labrun_vm::preflight::{self, OVERLAY_MIN_MIB};
use labrun_vm::{ImageSource, VmConfig};
use std::path::Path;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {}

/// One fact: how it stands, in words, and what to do when it is not fine.
struct Line {
    mark: Mark,
    fact: String,
    todo: Option<String>,
}

#[derive(Clone, Copy)]
enum Mark {
    Ok,
    Warn,
    /// A run cannot start until it is fixed.
    Fail,
    Info,
}

impl Line {
    fn new(mark: Mark, fact: impl Into<String>, todo: Option<String>) -> Line {
        Line {
            mark,
            fact: fact.into(),
            todo,
        }
    }

    fn render(&self) -> String {
        let mark = match self.mark {
            Mark::Ok => "ok  ",
            Mark::Warn => "warn",
            Mark::Fail => "FAIL",
            Mark::Info => "    ",
        };
        let mut s = format!("{mark}  {}\n", self.fact);
        if let Some(t) = &self.todo {
            s.push_str(&format!("      do: {t}\n"));
        }
        s
    }
}

pub async fn run(ctx: &Context, _args: Args) -> anyhow::Result<ExitCode> {
    if !ctx.lab_path.exists() {
        return host_only(ctx).await;
    }
    let lab = labrun_lab::Lab::load(&ctx.lab_path)?;
    if !matches!(lab.machine(), labrun_lab::Machine::Vm(_)) {
        safe_println!(
            "lab `{}` runs on an SSH target, not a VM: doctor checks a VM lab's hypervisor host, and nothing here limits a run",
            lab.name
        );
        return Ok(ExitCode::SUCCESS);
    }
    let cfg = match crate::lab_vm::vm_of(&lab, ctx) {
        Ok(cfg) => cfg,
        Err(e) => {
            safe_println!("a run cannot start here: {e:#}");
            return Ok(ExitCode::from(exit::FAILED));
        }
    };
    let where_ = cfg
        .remote
        .as_ref()
        .map_or("this host".to_string(), |r| format!("host `{}`", r.name));
    // One print at the end: a reader that stops early (`| head`) gets whole
    // lines, and the facts read as one moment's.
    let mut out = format!(
        "labrun doctor: what {where_} gives a run of lab `{}` ({}), libvirt at {}\n",
        lab.name,
        ctx.lab_path.display(),
        cfg.uri
    );
    let mut lines = Vec::new();
    if cfg.remote.is_none() {
        lines.extend(local_facts(&cfg, ctx));
    }
    let verdict = verdict(&cfg, ctx).await;
    lines.extend(
        verdict
            .warnings
            .iter()
            .map(|w| Line::new(Mark::Warn, w, None)),
    );
    for l in &lines {
        out.push_str(&l.render());
    }
    out.push_str(&noise_lines(&lab, ctx).await);
    let blocked = lines.iter().any(|l| matches!(l.mark, Mark::Fail));
    let can_run = match &verdict.outcome {
        Ok(a) if !blocked => {
            out.push_str(&format!("a run can start here (acceleration {a})\n"));
            true
        }
        Ok(_) => {
            out.push_str("a run cannot start here: see the FAIL lines above\n");
            false
        }
        Err(why) => {
            out.push_str(&format!("a run cannot start here: {why}\n"));
            false
        }
    };
    // Lab names and remote text: escaped (terminal.rs).
    safe_print!("{out}");
    Ok(if can_run {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(exit::FAILED)
    })
}

/// No lab file: what this host gives the protocol's machine (4 vCPU,
/// 3 GiB on `qemu:///system`), so doctor answers from any folder; a lab's
/// own needs come with `-f LAB`.
async fn host_only(ctx: &Context) -> anyhow::Result<ExitCode> {
    let cfg = VmConfig::new("doctor", ctx.lab_path.clone());
    let mut out = format!(
        "labrun doctor: no lab file at {} (pass one with `-f LAB` for its own needs); what this host gives the protocol's machine ({}), libvirt at {}\n",
        ctx.lab_path.display(),
        cfg.shape(),
        cfg.uri
    );
    let lines = local_facts(&cfg, ctx);
    for l in &lines {
        out.push_str(&l.render());
    }
    let blocked = lines.iter().any(|l| matches!(l.mark, Mark::Fail));
    out.push_str(if blocked {
        "a run cannot start here: see the FAIL lines above\n"
    } else {
        "nothing here stops a run of a lab that asks for no more than this\n"
    });
    safe_print!("{out}");
    Ok(if blocked {
        ExitCode::from(exit::FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

/// Facts of this host (a remote hypervisor's are in `up`'s own checks).
fn local_facts(cfg: &VmConfig, ctx: &Context) -> Vec<Line> {
    let mut out = vec![
        program_line(
            "qemu-system-x86_64",
            "QEMU",
            "apt install qemu-system-x86 qemu-utils",
        ),
        libvirt_version_line(),
        match labrun_vm::hypervisor::Hypervisor::open(&cfg.uri) {
            Ok(_) => Line::new(Mark::Ok, format!("libvirtd answers at {}", cfg.uri), None),
            Err(e) => Line::new(
                Mark::Fail,
                format!("libvirtd does not answer at {}", cfg.uri),
                Some(e.to_string()),
            ),
        },
        cgroup_line(Path::new("/")),
        accel_line(cfg),
    ];
    out.extend(disk_lines(cfg, ctx));
    out
}

fn program_line(program: &str, name: &str, install: &str) -> Line {
    match crate::bench::machine::first_line_of(program, &["--version"]) {
        Some(v) => Line::new(Mark::Ok, format!("{name}: {v}"), None),
        None => Line::new(
            Mark::Fail,
            format!("{name}: `{program}` is not installed (or not on PATH)"),
            Some(format!("`{install}`")),
        ),
    }
}

/// libvirtd lives in /usr/sbin, outside an ordinary user's PATH; a host of
/// split daemons (virtqemud) has none, and still answers: the version is
/// then unknown, which stops nothing (the reachability line decides).
fn libvirt_version_line() -> Line {
    let version = crate::bench::machine::first_line_of("libvirtd", &["--version"])
        .or_else(|| crate::bench::machine::first_line_of("/usr/sbin/libvirtd", &["--version"]));
    match version {
        Some(v) => Line::new(Mark::Ok, format!("libvirt: {v}"), None),
        None => Line::new(
            Mark::Info,
            "libvirt: version unknown (no libvirtd on PATH or in /usr/sbin)",
            None,
        ),
    }
}

/// libvirt puts each domain's QEMU in a cgroup of its own (machine.slice):
/// under v2 its CPU time and pinning are one tree to read and to set.
fn cgroup_line(root: &Path) -> Line {
    let cgroup = root.join("sys/fs/cgroup");
    let fix = || Some("boot with `systemd.unified_cgroup_hierarchy=1` for one cgroup tree".into());
    if cgroup.join("cgroup.controllers").exists() {
        Line::new(
            Mark::Ok,
            "cgroup v2: libvirt confines each domain's QEMU in its own cgroup",
            None,
        )
    } else if cgroup.join("unified/cgroup.controllers").exists() {
        Line::new(
            Mark::Warn,
            "cgroup v2: hybrid (v1 controllers at /sys/fs/cgroup, v2 only at /sys/fs/cgroup/unified)",
            fix(),
        )
    } else {
        Line::new(
            Mark::Warn,
            "cgroup v2: not mounted (/sys/fs/cgroup has no cgroup.controllers)",
            fix(),
        )
    }
}

/// The acceleration the lab will get here, and why.
fn accel_line(cfg: &VmConfig) -> Line {
    let probe = AccelProbe::read_host();
    let reason = probe.kvm_unusable_reason();
    let pvm = probe.kvm_pvm_loaded && probe.dev_kvm;
    match accel::choose_for(cfg.accel, reason.clone()) {
        Ok((Acceleration::Kvm, _)) => Line::new(
            Mark::Ok,
            "acceleration: KVM (hardware virtualization)",
            None,
        ),
        Ok((Acceleration::Tcg, _)) => {
            let why = match (&reason, pvm) {
                (Some(r), true) => format!("PVM: cannot boot a stock kernel ({r}), using TCG"),
                (Some(r), false) => format!("{r}, using TCG"),
                (None, _) => "the lab asks for `accel: tcg`".to_string(),
            };
            Line::new(
                Mark::Warn,
                format!("acceleration: TCG (software emulation): {why}"),
                Some(
                    "times are several times longer than under KVM and compare only within runs of this host; for KVM figures use a host whose CPU has vmx/svm and a stock /dev/kvm".into(),
                ),
            )
        }
        Err(e) => Line::new(
            Mark::Fail,
            "acceleration: the lab asks for KVM, which this host cannot give",
            Some(e.to_string()),
        ),
    }
}

/// Free disk for the base image (cache) and the guest's disk (state), which
/// holds the dataset, its copies and the repositories.
fn disk_lines(cfg: &VmConfig, ctx: &Context) -> Vec<Line> {
    let disk_mib = u64::from(cfg.image.disk_gib()) * 1024;
    let mut out = Vec::new();
    for (dir, what, need, todo) in [
        (
            &ctx.cache_dir,
            "cache (base images)",
            preflight::IMAGE_BUILD_MIB,
            "a base image needs this much to build",
        ),
        (
            &ctx.state_root,
            "state (the guest's disk: the dataset, its copies, the repositories)",
            disk_mib.max(OVERLAY_MIN_MIB),
            "the guest's disk can grow to the lab's `vm.disk`",
        ),
    ] {
        out.push(match preflight::free_mib(dir) {
            Ok(free) if free >= need => Line::new(
                Mark::Ok,
                format!(
                    "disk: {free} MiB free under {} for the {what}",
                    dir.display()
                ),
                None,
            ),
            Ok(free) => Line::new(
                Mark::Warn,
                format!(
                    "disk: {free} MiB free under {} for the {what}, {need} MiB wanted",
                    dir.display()
                ),
                Some(format!("free space there or point it elsewhere; {todo}")),
            ),
            Err(e) => Line::new(Mark::Warn, format!("disk: {e}"), None),
        });
    }
    out
}

struct Verdict {
    /// The acceleration a run gets, or why it cannot start.
    outcome: Result<Acceleration, String>,
    warnings: Vec<String>,
}

/// `up`'s own host checks, the image build included when it would build.
async fn verdict(cfg: &VmConfig, ctx: &Context) -> Verdict {
    let must_build = match &cfg.image {
        ImageSource::Recipe(spec) => {
            matches!(labrun_vm::image::cached(&ctx.cache_dir, spec), Ok(None))
        }
        ImageSource::Cloud(_) => false,
    };
    let report = match &cfg.remote {
        None => {
            let (cfg, cache, state) = (cfg.clone(), ctx.cache_dir.clone(), ctx.state_root.clone());
            tokio::task::spawn_blocking(move || {
                preflight::preflight(&cfg, &cache, &state, must_build)
            })
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r.map_err(|e| e.to_string()))
        }
        Some(r) => match r.connect().await {
            Ok(shell) => preflight::remote(cfg, &ctx.cache_dir, must_build, &shell)
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        },
    };
    match report {
        Ok(r) => Verdict {
            outcome: Ok(r.acceleration),
            warnings: r
                .warnings
                .into_iter()
                .filter(|w| cfg.remote.is_some() || !said_by_local_facts(w))
                .collect(),
        },
        Err(why) => Verdict {
            outcome: Err(why),
            warnings: Vec::new(),
        },
    }
}

/// `up`'s warnings that this host's own lines already say, with the fix:
/// TCG (the acceleration line) and free space (the disk lines).
fn said_by_local_facts(warning: &str) -> bool {
    warning.starts_with("SOFTWARE EMULATION") || warning.contains(" MiB free under ")
}

/// The noise sources a run would record, read as `bench` reads them.
async fn noise_lines(lab: &labrun_lab::Lab, ctx: &Context) -> String {
    let mut s = String::from("noise sources (read only; nothing here is changed):\n");
    let Some(probe) = NoiseProbe::of(ctx, lab) else {
        s.push_str("      not read: the lab's VM does not resolve here\n");
        return s;
    };
    let noise = match probe.read().await {
        Ok(n) => n,
        Err(why) => {
            s.push_str(&format!("      unknown: {why}\n"));
            return s;
        }
    };
    for (source, value) in noise.facts() {
        s.push_str(&Line::new(Mark::Info, format!("{source}: {value}"), None).render());
    }
    for f in noise.findings() {
        s.push_str(&Line::new(Mark::Warn, f.found, Some(format!("`{}`", f.fix))).render());
    }
    s
}
