//! `labrun check`: validate a lab file and say what it will do. The logic
//! lives in `labrun-lab`; this file only decides what to print and the exit
//! status (0 valid, 1 invalid or unreadable, its CPU pinning names CPUs
//! this host lacks, or a tree of its dataset cannot be used; 2 bad
//! `--scale`). "ok: ... is valid" is the last line, and only with 0.

use crate::context::Context;
use crate::exit;
use labrun_lab::{Lab, LabError, check_scale};
use std::path::Path;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Describe the dataset at this scale (0 < F <= 1) instead of the lab's.
    #[arg(long, value_name = "F")]
    pub scale: Option<f64>,
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let mut outcome = check(&ctx.lab_path, args.scale);
    let pinning = outcome
        .lab
        .as_ref()
        .map(|lab| pinning_line(lab, ctx.host.as_deref()));
    if let Some(Err(e)) = &pinning {
        // Valid, but not on this host.
        outcome.stderr.push_str(e);
        outcome.status = exit::FAILED;
    }
    // The description and the problems quote the lab file: escaped here.
    safe_print!("{}", outcome.stdout);
    if let Some(lab) = &outcome.lab {
        safe_print!("{}", hypervisor_line(lab, ctx.host.as_deref()));
        if let Some(Ok(line)) = &pinning {
            safe_print!("{line}");
        }
        safe_print!(
            "{}",
            resolutions(lab, &ctx.cache_dir, ctx.mirror.as_deref())
        );
        let trees =
            crate::real_tree::describe::describe(lab, &ctx.cache_dir, ctx.mirror.as_deref());
        safe_print!("{}", trees.text);
        if let Some(refused) = refused_trees(&trees.unusable) {
            outcome.stderr.push_str(&refused);
            outcome.status = exit::FAILED;
        }
        // Last, and only when nothing the run would refuse was found.
        if outcome.status == exit::OK {
            safe_print!("ok: {} is valid\n", ctx.lab_path.display());
        }
    }
    safe_eprint!("{}", outcome.stderr);
    Ok(ExitCode::from(outcome.status))
}

/// The verdict when a tree cannot be used: the lab is written right, but
/// its run would stop at that tree, so `check` is no pass.
fn refused_trees(unusable: &[usize]) -> Option<String> {
    let numbers: Vec<String> = unusable.iter().map(|n| n.to_string()).collect();
    let (first, _) = unusable.split_first()?;
    let which = if numbers.len() == 1 {
        format!("tree {first}")
    } else {
        format!("trees {}", numbers.join(", "))
    };
    Some(format!(
        "labrun check: the run would refuse {which} of the dataset (`cannot be used:` above says why): fix the dataset or its `dataset:` entry, then check again\n"
    ))
}

struct Outcome {
    stdout: String,
    stderr: String,
    status: u8,
    /// The lab, when it loaded and validated.
    lab: Option<Lab>,
}

/// Which libvirt the lab's machine would use here, and who runs its QEMU
/// (an ordinary user may get the session daemon); nothing for another
/// host's hypervisor or an existing machine.
fn hypervisor_line(lab: &Lab, host: Option<&str>) -> String {
    match crate::lab_vm::local_access(lab, host) {
        Ok(None) => String::new(),
        Ok(Some(access)) => format!("hypervisor: {}\n", access.describe()),
        Err(e) => format!("hypervisor: none usable here: {e:#}\n"),
    }
}

/// What `up` would pin on the lab's host, read from this host's topology
/// (`labrun_vm::pinning`), with what it cannot pin as warnings; an error
/// when the lab's list names CPUs this host does not have. A remote host's
/// topology is read by `up`, there.
fn pinning_line(lab: &Lab, host: Option<&str>) -> Result<String, String> {
    let labrun_lab::Machine::Vm(vm) = lab.machine() else {
        return Ok(String::new());
    };
    let Some(asked) = &vm.cpu_pinning else {
        return Ok(String::new());
    };
    match crate::lab_vm::pick_host(lab, host) {
        Ok(Some(h)) if h.ssh.is_some() => {
            return Ok(format!(
                "cpu pinning: {} (decided on host `{}` by `labrun up`, from its topology)\n",
                asked.describe(),
                h.name
            ));
        }
        Ok(_) => {}
        // `hypervisor_line` has said why the host is unusable.
        Err(_) => return Ok(String::new()),
    }
    let pinned = labrun_vm::pinning::Topology::here()
        .and_then(|topo| labrun_vm::pinning::choose(Some(asked), vm.vcpus, &topo));
    match pinned {
        Ok(Some(p)) => {
            let mut out = format!("cpu pinning {}: {}\n", asked.describe(), p.cpus.describe());
            for note in &p.notes {
                out.push_str(&format!("warning: cpu pinning: {note}\n"));
            }
            Ok(out)
        }
        Ok(None) => Ok(String::new()),
        Err(labrun_vm::VmError::Config { reason, .. }) => {
            let p = lab.locate(labrun_lab::Problem::new("vm.cpu_pinning", reason));
            Err(format!(
                "{}\n",
                p.render(&lab.source.file.display().to_string())
            ))
        }
        Err(e) => Err(format!(
            "labrun check: cannot read this host's CPUs for `cpu_pinning`: {e}\n"
        )),
    }
}

/// Where each tool's artifact would come from on this machine, decided
/// offline; an artifact nothing here provides is named. Names and URLs come
/// from the lab file: each stays on its line, escaped.
fn resolutions(lab: &Lab, cache: &Path, mirror: Option<&Path>) -> String {
    use crate::terminal::one_line;
    let mut out = String::from("artifacts on this machine:\n");
    if let labrun_lab::Machine::Vm(vm) = lab.machine()
        && let labrun_lab::ImageSpec::Cloud(image) = &vm.image
    {
        let r = labrun_artifact::resolve_offline(image, cache, mirror);
        out.push_str(&format!(
            "  {:<12} {}\n",
            "vm image",
            one_line(&r.to_string())
        ));
    }
    // The storage servers' binaries are fetched and built like the tools'.
    for (kind, server) in &lab.servers {
        let r = labrun_artifact::resolve_offline(&server.artifact, cache, mirror);
        let name = labrun_lab::storage::ServerSpec::install_name(*kind);
        out.push_str(&format!("  {name:<12} {}\n", one_line(&r.to_string())));
    }
    let (mut ready, mut download, mut cannot) = (Vec::new(), Vec::new(), Vec::new());
    for tool in &lab.tools {
        let r = labrun_artifact::resolve_offline(&tool.artifact, cache, mirror);
        let name = one_line(&tool.name);
        out.push_str(&format!("  {name:<12} {}\n", one_line(&r.to_string())));
        match r {
            labrun_artifact::Resolution::Download(url) => {
                download.push(format!("{name} ({})", one_line(&url)))
            }
            labrun_artifact::Resolution::Unresolvable(why) => {
                cannot.push(format!("{name} ({})", one_line(&why)))
            }
            _ => ready.push(name.into_owned()),
        }
    }
    let none = || "none".to_string();
    let list = |v: &[String]| if v.is_empty() { none() } else { v.join(", ") };
    out.push_str(&format!("tools that can run here now: {}", list(&ready)));
    if !download.is_empty() {
        out.push_str(&format!(
            "; need a download first (`labrun fetch`, or --mirror DIR offline): {}",
            list(&download)
        ));
    }
    if !cannot.is_empty() {
        out.push_str(&format!("; cannot run here: {}", list(&cannot)));
    }
    if ready.len() < lab.tools.len() && !ready.is_empty() {
        out.push_str(&format!(
            "\n  run those alone with `labrun up --tools {0}` and `labrun bench --tools {0}`",
            ready.join(",")
        ));
    }
    out.push('\n');
    out
}

fn check(path: &Path, scale: Option<f64>) -> Outcome {
    let fail = |stderr: String, status| Outcome {
        stdout: String::new(),
        stderr,
        status,
        lab: None,
    };
    if let Some(s) = scale
        && let Err(msg) = check_scale(s)
    {
        return fail(
            format!("labrun check: --scale: {msg}\n"),
            exit::NOTHING_DONE,
        );
    }
    match Lab::load(path) {
        Ok(lab) if scale.is_some() && lab.dataset.is_real() => fail(
            "labrun check: --scale sizes the synthetic dataset only: a real tree has the size it has; for a quicker look at a big tree add `sample: {fraction: 0.1}` to the dataset\n".into(),
            exit::NOTHING_DONE,
        ),
        // The "ok" line comes last, once every check of `run` has passed.
        Ok(lab) => Outcome {
            stdout: lab.describe(scale),
            stderr: String::new(),
            status: exit::OK,
            lab: Some(lab),
        },
        // Already `file:line:column: path: message`, one per problem.
        Err(e @ (LabError::Parse { .. } | LabError::Invalid { .. })) => {
            fail(format!("{e}\n"), exit::FAILED)
        }
        Err(e) => fail(format!("labrun check: {e}\n"), exit::FAILED),
    }
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn shipped_labs_pass_and_describe_themselves() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for lab in ["lab.yaml", "labs/restic-borg-kopia.yaml"] {
            let out = check(&root.join(lab), Some(0.01));
            assert_eq!(out.status, 0, "{lab}: {}", out.stderr);
            assert!(out.stdout.contains("timed steps"), "{lab}: {}", out.stdout);
        }
    }

    #[test]
    fn the_hypervisor_and_who_runs_qemu_are_said() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let lab = check(&root.join("lab.yaml"), None).lab.expect("valid lab");
        let line = super::hypervisor_line(&lab, None);
        assert!(line.starts_with("hypervisor: qemu:///"), "{line}");
        if labrun_vm::access::is_root() {
            // Root is told without a connection: nothing changes for it.
            assert_eq!(line, "hypervisor: qemu:///system (as root)\n");
        }
    }

    #[test]
    fn artifacts_nothing_here_provides_are_named() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let lab = check(&root.join("labs/restic-borg-kopia.yaml"), None)
            .lab
            .expect("valid lab");
        let cache = tempfile::tempdir().unwrap();
        let text = super::resolutions(&lab, cache.path(), None);
        for tool in ["restic", "borg", "kopia"] {
            let line = text
                .lines()
                .find(|l| l.trim_start().starts_with(tool))
                .unwrap_or_else(|| panic!("no line for {tool}:\n{text}"));
            assert!(line.contains("--mirror"), "{line}");
        }
        let mirror = tempfile::tempdir().unwrap();
        std::fs::write(mirror.path().join("restic_0.19.1_linux_amd64.bz2"), b"x").unwrap();
        let text = super::resolutions(&lab, cache.path(), Some(mirror.path()));
        assert!(text.contains("in the mirror folder"), "{text}");
    }

    /// A lab of `vcpus` vCPUs pinned as `pinning` (YAML), loaded.
    fn pinned_lab(dir: &std::path::Path, vcpus: u32, pinning: &str) -> labrun_lab::Lab {
        let text = format!(
            r#"vm:
  vcpus: {vcpus}
  cpu_pinning: {pinning}
name: pinned
tools:
  - name: restic
    version: 0.19.1
    artifact:
      url: https://example.invalid/restic_0.19.1_linux_amd64.bz2
      sha256: f415415624dcc452f2a02b8c33641791a8c6d6d3b65bbb3543fcf9a25151585c
      extract: bz2
    env: {{RESTIC_PASSWORD: pw-not-secret}}
    secret_env: [RESTIC_PASSWORD]
    commands:
      init: ["{{bin}}", init, -r, "{{repo}}"]
      backup: ["{{bin}}", backup, -r, "{{repo}}", "{{source}}"]
      restore: ["{{bin}}", restore, latest, -r, "{{repo}}", --target, "{{target}}"]
"#
        );
        let path = dir.join("pinned.yaml");
        std::fs::write(&path, text).unwrap();
        let out = check(&path, None);
        out.lab.unwrap_or_else(|| panic!("{}", out.stderr))
    }

    #[test]
    fn a_pinning_list_naming_cpus_this_host_lacks_is_refused_where_written() {
        let dir = tempfile::tempdir().unwrap();
        let lab = pinned_lab(dir.path(), 2, "[0, 4095]");
        let e = super::pinning_line(&lab, None).unwrap_err();
        assert!(
            e.contains("pinned.yaml:3:16: vm.cpu_pinning: names host CPU 4095 that this host does not have online"),
            "{e}"
        );
        let lab = pinned_lab(dir.path(), 1, "[0]");
        let line = super::pinning_line(&lab, None).unwrap();
        assert!(
            line.starts_with("cpu pinning [0]: vCPU 0 on CPU 0; emulator threads unpinned\n"),
            "{line}"
        );
    }

    #[test]
    fn auto_says_what_it_cannot_pin() {
        let dir = tempfile::tempdir().unwrap();
        let lab = pinned_lab(dir.path(), 64, "auto");
        let cpus = labrun_vm::pinning::Topology::here().unwrap().cpus().len();
        let line = super::pinning_line(&lab, None).unwrap();
        if cpus < 64 {
            assert!(
                line.contains("warning: cpu pinning: cannot pin 64 vCPUs: the host has ")
                    && line.contains(&format!("{cpus} online CPU")),
                "{line}"
            );
        }
        assert!(line.starts_with("cpu pinning auto: "), "{line}");
    }

    #[test]
    fn every_problem_is_printed_and_the_status_is_1() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.yaml");
        std::fs::write(&path, "name: bad\ncycles: 0\ntools: []\n").unwrap();
        let out = check(&path, None);
        assert_eq!(out.status, 1);
        assert!(
            out.stderr
                .contains("bad.yaml:2:9: cycles: must be at least 1"),
            "{}",
            out.stderr
        );
        assert!(
            out.stderr
                .contains("bad.yaml:3:8: tools: a lab needs at least one tool"),
            "{}",
            out.stderr
        );

        let out = check(&dir.path().join("missing.yaml"), None);
        assert_eq!(out.status, 1);
        assert!(out.stderr.contains("-f FILE"), "{}", out.stderr);

        assert_eq!(check(&path, Some(0.0)).status, 2);
    }
}
