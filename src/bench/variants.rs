//! A lab with variants: every variant is a complete run of its own lab,
//! into `results/<run>/variants/<name>/`; variants that share a machine
//! shape share a boot and run in rounds, cycle by cycle
//! ([`crate::bench::interleave`]), a new shape gets a boot of its own (never
//! timed). At the end the variants are set side by side.
//!
//! The agent and the follower see ordinary runs: a variant is data.

use crate::bench::layout::HostRun;
use crate::bench::progress::Display;
use crate::bench::request::BenchRequest;
use crate::bench::start::run_lab;
use crate::exit;
use anyhow::Context as _;
use labrun_evidence::variant::{VARIANT_FILE, VARIANTS_DIR, VARIANTS_INDEX, VariantsIndex};
use labrun_lab::{Lab, Machine, PlanOverrides, Variant};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set when the user pressed Ctrl-C during a variant: the variants after it
/// are not started.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

pub async fn run_all(
    req: &BenchRequest,
    lab: &Lab,
    run_id: &str,
    started: u64,
    display: &mut dyn Display,
) -> anyhow::Result<ExitCode> {
    // Load-time validation expanded them already: this cannot fail here.
    let variants = lab.variants().map_err(|problems| {
        anyhow::anyhow!(
            "the lab's variants are invalid: {}",
            problems
                .iter()
                .map(|p| p.render(&lab.source.file.display().to_string()))
                .collect::<Vec<_>>()
                .join("; ")
        )
    })?;
    let run_dir = req.results.join(run_id);
    std::fs::create_dir_all(&run_dir)
        .with_context(|| format!("cannot create {}", run_dir.display()))?;
    let index = VariantsIndex {
        run_id: run_id.to_string(),
        variants: variants.iter().map(|v| v.record.clone()).collect(),
    };
    write_json(&run_dir.join(VARIANTS_INDEX), &index)?;
    let boots = labrun_lab::variant::boots(&variants);
    display.note(&format!(
        "run {run_id}: {} variants in {boots} boot(s); results in {}",
        variants.len(),
        run_dir.display()
    ));

    // Ctrl-C at any point (a variant's boot included, whose own handler
    // cleans up the boot) ends the run after the variant it came in.
    let listener = tokio::spawn(async {
        if tokio::signal::ctrl_c().await.is_ok() {
            INTERRUPTED.store(true, Ordering::SeqCst);
        }
    });
    let mut failed: Vec<String> = Vec::new();
    let groups = boot_groups(&variants);
    let pool = crate::bench::pool::hosts_for(&req.ctx, lab)?;
    let mut lost_hosts = Vec::new();
    if pool.len() > 1 {
        lost_hosts = crate::bench::pool::run(
            req,
            run_id,
            started,
            &pool,
            &groups,
            variants.len(),
            &run_dir,
            display,
            &mut failed,
        )
        .await;
    } else {
        for group in &groups {
            if INTERRUPTED.load(Ordering::SeqCst) {
                break;
            }
            let outcome = run_boot(
                req,
                run_id,
                started,
                group,
                variants.len(),
                &run_dir,
                display,
                &mut failed,
            )
            .await?;
            if let RunOutcome::ConnectionLost(code) = outcome {
                return Ok(code);
            }
        }
    }
    if INTERRUPTED.load(Ordering::SeqCst) {
        safe_eprintln!(
            "labrun: interrupted: the variants not yet started were not run; what ran is kept and compared"
        );
    }

    listener.abort();
    match labrun_report::variants::make_report(&run_dir) {
        Ok((comparison, written)) => {
            safe_print!("{}", labrun_report::variants::render_terminal(&comparison));
            for p in written {
                safe_println!("wrote {}", p.display());
            }
        }
        Err(e) => safe_eprintln!("labrun: the variants' comparison could not be made: {e}"),
    }
    if !lost_hosts.is_empty() {
        // Not finished: a variant goes on where the connection was lost.
        // Its `--attach` line is above; the comparison is made again by
        // `labrun report` once it is back.
        if !failed.is_empty() {
            safe_eprintln!(
                "labrun: variants with a failed step or no evidence: {}",
                failed.join(", ")
            );
        }
        safe_eprintln!(
            "labrun: the connection to {} was lost while a variant ran there: finish it with the `labrun bench --attach` line above, then `labrun report {}` compares every variant",
            lost_hosts
                .iter()
                .map(|h| format!("host `{h}`"))
                .collect::<Vec<_>>()
                .join(", "),
            run_dir.display()
        );
        return Ok(ExitCode::from(exit::CONNECTION_LOST));
    }
    if failed.is_empty() && !INTERRUPTED.load(Ordering::SeqCst) {
        Ok(ExitCode::SUCCESS)
    } else {
        if !failed.is_empty() {
            safe_eprintln!(
                "labrun: variants with a failed step or no evidence: {}",
                failed.join(", ")
            );
        }
        Ok(ExitCode::from(exit::FAILED))
    }
}

/// The variants in boots: consecutive variants of one machine shape share a
/// boot (`record.boot`).
fn boot_groups(variants: &[Variant]) -> Vec<Vec<(usize, &Variant)>> {
    let mut groups: Vec<Vec<(usize, &Variant)>> = Vec::new();
    for (i, v) in variants.iter().enumerate() {
        match groups.last_mut() {
            Some(g) if g[0].1.record.boot == v.record.boot => g.push((i, v)),
            _ => groups.push(vec![(i, v)]),
        }
    }
    groups
}

/// One boot's variants on one machine: in rounds when there are several.
#[allow(clippy::too_many_arguments)]
pub async fn run_boot(
    req: &BenchRequest,
    run_id: &str,
    started: u64,
    group: &[(usize, &Variant)],
    total: usize,
    run_dir: &Path,
    display: &mut dyn Display,
    failed: &mut Vec<String>,
) -> anyhow::Result<RunOutcome> {
    if let [(i, v)] = group {
        return run_one(req, run_id, started, v, *i, total, run_dir, display, failed).await;
    }
    let (_, first) = group[0];
    match ensure_machine(req, first, display).await {
        Ok(()) => {
            crate::bench::interleave::run_group(
                req, run_id, started, group, total, run_dir, display, failed,
            )
            .await
        }
        Err(e) => {
            // No variant of this boot can run: each says why.
            for (i, v) in group {
                let host = start_variant(run_dir, v, *i, total, display)?;
                record_failure(&host, &v.record.name, &e, failed);
            }
            Ok(RunOutcome::Done)
        }
    }
}

/// How a variant (or a group of them) ended, for the run to go on or not.
pub enum RunOutcome {
    /// Finished, passed or not (the failed ones are named in `failed`).
    Done,
    /// The connection was lost while a variant goes on in the guest: the
    /// run stops here, with this exit code.
    ConnectionLost(ExitCode),
}

/// A variant's folder made, with the record of what it changes, and said.
pub fn start_variant(
    run_dir: &Path,
    v: &Variant,
    i: usize,
    total: usize,
    display: &mut dyn Display,
) -> anyhow::Result<HostRun> {
    display.note(&format!(
        "variant {}/{total} `{}`: {}",
        i + 1,
        v.record.name,
        v.record.changes_text("")
    ));
    let host = HostRun::new(&run_dir.join(VARIANTS_DIR), &v.record.name);
    std::fs::create_dir_all(host.raw())
        .with_context(|| format!("cannot create {}", host.raw().display()))?;
    write_json(&host.raw().join(VARIANT_FILE), &v.record)?;
    Ok(host)
}

/// A variant that could not run (or go on): why goes into its folder, which
/// keeps whatever evidence it has; the other variants still run.
pub fn record_failure(host: &HostRun, name: &str, e: &anyhow::Error, failed: &mut Vec<String>) {
    let why = format!("{e:#}");
    let _ = std::fs::write(
        host.raw().join(labrun_evidence::variant::BENCH_ERROR_FILE),
        &why,
    );
    safe_eprintln!("labrun: variant `{name}` could not run: {why}");
    failed.push(name.to_string());
}

/// A variant alone on its machine: its whole run, then the next.
#[allow(clippy::too_many_arguments)]
async fn run_one(
    req: &BenchRequest,
    run_id: &str,
    started: u64,
    v: &Variant,
    i: usize,
    total: usize,
    run_dir: &Path,
    display: &mut dyn Display,
    failed: &mut Vec<String>,
) -> anyhow::Result<RunOutcome> {
    let name = &v.record.name;
    let host = start_variant(run_dir, v, i, total, display)?;
    let outcome = async {
        ensure_machine(req, v, display).await?;
        let o = variant_overrides(req, v);
        let sub_id = format!("{run_id}.{name}");
        run_lab(req, &v.lab, &o, &sub_id, started, &host, display).await
    }
    .await;
    match outcome {
        Ok(code) if code == ExitCode::SUCCESS => {}
        Ok(code) if code == ExitCode::from(exit::CONNECTION_LOST) => {
            safe_eprintln!(
                "labrun: variant `{name}` goes on in the guest without this connection; the variants after it were not started"
            );
            return Ok(RunOutcome::ConnectionLost(code));
        }
        Ok(_) => failed.push(name.clone()),
        Err(e) => record_failure(&host, name, &e, failed),
    }
    Ok(RunOutcome::Done)
}

/// What the command line changes for a variant: all it says, but the scale
/// of a variant that sets its own (a scale ladder).
pub fn variant_overrides(req: &BenchRequest, v: &Variant) -> PlanOverrides {
    let mut o = req.overrides.clone();
    if v.record.changes.iter().any(|c| c.field == "dataset.scale") {
        o.scale = None;
    }
    o
}

/// For a VM lab: the VM up in this variant's shape. A VM up in another
/// shape is taken down first (its boot belongs to the variants before).
async fn ensure_machine(
    req: &BenchRequest,
    v: &Variant,
    display: &mut dyn Display,
) -> anyhow::Result<()> {
    if !matches!(v.lab.machine(), Machine::Vm(_)) {
        return Ok(());
    }
    let ctx = &req.ctx;
    let cfg = crate::lab_vm::vm_of(&v.lab, ctx)?;
    let dir = labrun_vm::LabDir::for_config(&ctx.state_root, &cfg);
    let wanted = cfg.shape();
    if let Some(state) = dir.read_state()? {
        if state.phase == labrun_vm::Phase::Ready && state.shape == wanted {
            return Ok(());
        }
        display.note(&format!(
            "the VM is up as {}; variant `{}` needs {wanted}: taking it down to boot that",
            if state.shape.is_empty() {
                "an unrecorded shape"
            } else {
                &state.shape
            },
            v.record.name
        ));
        req.machines.down(ctx).await?;
    }
    display.note(&format!("booting the VM as {wanted} (not timed)"));
    let code = req.machines.up(ctx, &v.lab, req.tools()).await?;
    if code != ExitCode::SUCCESS {
        anyhow::bail!(
            "bringing the VM up as {wanted} failed (see above); `labrun down` cleans up what is left"
        );
    }
    Ok(())
}

fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> anyhow::Result<()> {
    std::fs::write(path, serde_json::to_vec_pretty(value)?)
        .with_context(|| format!("writing {}", path.display()))
}
