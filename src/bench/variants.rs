//! A lab with variants: every variant is a complete run of its own lab,
//! into `results/<run>/variants/<name>/`, one after another; variants that
//! share a machine shape share a boot, a new shape gets a boot of its own
//! (never timed). At the end the variants are set side by side.
//!
//! The agent and the follower see ordinary runs: a variant is data.

use crate::bench::layout::HostRun;
use crate::bench::progress::Display;
use crate::commands::bench::{Args, EXIT_CONNECTION_LOST, overrides, run_lab};
use crate::context::Context;
use anyhow::Context as _;
use labrun_evidence::variant::{VARIANT_FILE, VARIANTS_DIR, VARIANTS_INDEX, VariantsIndex};
use labrun_lab::{Lab, Machine, Variant};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set when the user pressed Ctrl-C during a variant: the variants after it
/// are not started.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

pub async fn run_all(
    ctx: &Context,
    args: &Args,
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
    let run_dir = args.results.join(run_id);
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
    for (i, v) in variants.iter().enumerate() {
        let name = &v.record.name;
        display.note(&format!(
            "variant {}/{} `{name}`: {}",
            i + 1,
            variants.len(),
            v.record.changes_text("")
        ));
        let host = HostRun::new(&run_dir.join(VARIANTS_DIR), name);
        std::fs::create_dir_all(host.raw())
            .with_context(|| format!("cannot create {}", host.raw().display()))?;
        write_json(&host.raw().join(VARIANT_FILE), &v.record)?;
        let outcome = async {
            ensure_machine(ctx, args, v, display).await?;
            let mut o = overrides(args);
            // A variant that sets its own scale (a scale ladder) keeps it.
            if v.record.changes.iter().any(|c| c.field == "dataset.scale") {
                o.scale = None;
            }
            let sub_id = format!("{run_id}.{name}");
            run_lab(ctx, args, &v.lab, &o, &sub_id, started, &host, display).await
        }
        .await;
        match outcome {
            Ok(code) if code == ExitCode::SUCCESS => {}
            Ok(code) if code == ExitCode::from(EXIT_CONNECTION_LOST) => {
                safe_eprintln!(
                    "labrun: variant `{name}` goes on in the guest without this connection; the variants after it were not started"
                );
                return Ok(code);
            }
            Ok(_) => failed.push(name.clone()),
            Err(e) => {
                // The variant's folder keeps why it has no (or partial)
                // evidence; the other variants still run.
                let why = format!("{e:#}");
                let _ = std::fs::write(
                    host.raw().join(labrun_evidence::variant::BENCH_ERROR_FILE),
                    &why,
                );
                safe_eprintln!("labrun: variant `{name}` could not run: {why}");
                failed.push(name.clone());
            }
        }
        if INTERRUPTED.load(Ordering::SeqCst) {
            safe_eprintln!(
                "labrun: interrupted: the variants after `{name}` were not started; what ran is kept and compared"
            );
            break;
        }
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
    if failed.is_empty() && !INTERRUPTED.load(Ordering::SeqCst) {
        Ok(ExitCode::SUCCESS)
    } else {
        if !failed.is_empty() {
            safe_eprintln!(
                "labrun: variants with a failed step or no evidence: {}",
                failed.join(", ")
            );
        }
        Ok(ExitCode::from(1))
    }
}

/// For a VM lab: the VM up in this variant's shape. A VM up in another
/// shape is taken down first (its boot belongs to the variants before).
async fn ensure_machine(
    ctx: &Context,
    args: &Args,
    v: &Variant,
    display: &mut dyn Display,
) -> anyhow::Result<()> {
    if !matches!(v.lab.machine(), Machine::Vm(_)) {
        return Ok(());
    }
    let cfg = crate::lab_vm::vm_of(&v.lab, &ctx.cache_dir)?;
    let dir = labrun_vm::LabDir::for_lab(&ctx.state_root, &cfg.lab_name, &cfg.lab_path);
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
        crate::commands::down::take_down(ctx).await?;
    }
    display.note(&format!("booting the VM as {wanted} (not timed)"));
    let code = crate::commands::up::bring_up_lab(ctx, &v.lab, args.tools.as_deref()).await?;
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
