//! A restore over older data (`over:`): before the tool restores, `{target}`
//! is filled with the tree of an earlier snapshot, so the tool's own
//! overwrite mode meets what users meet (restic#5432, rustic#922). The
//! agent's work: untimed, recorded as a step of its own.

use super::tool_step::Commands;
use super::{GENERATED, Halt, ToolCycle, path_str};
use crate::run::env::{from_process, tool_env};
use labrun_evidence::{RunStep, Step};
use std::path::PathBuf;

/// Fills the (empty) `{target}` with `older_tree`, the manifest of the
/// snapshot `older` was made of; false (recorded) when it cannot.
pub(super) fn fill_target_over(
    commands: &mut Commands,
    tc: &ToolCycle,
    restore: &RunStep,
    older: &str,
    older_tree: Option<&str>,
) -> Result<bool, Halt> {
    let name = Step::named(format!("fill_{}", restore.name));
    // Only the generated tree is kept whole for the run (the pristine
    // copy); a changed tree exists only as the source, which moved on.
    if older_tree != Some(GENERATED) || !commands.ws.pristine.is_dir() {
        commands.ctx.check_stop()?;
        let (mut rec, _) = commands.tally.start_step(tc, name)?;
        rec.error = Some(format!(
            "step {}: `over: {older}` needs a snapshot of the generated source (the tree before any `change`), which the agent keeps; make `{older}` right after `source`",
            restore.name
        ));
        commands.tally.append(&rec)?;
        return Ok(false);
    }
    // `PRISTINE/.`: its contents, into the target itself.
    let argv = vec![
        "cp".to_string(),
        "-a".to_string(),
        "--reflink=auto".to_string(),
        format!("{}/.", path_str(&commands.ws.pristine)),
        tc.vars.target.clone(),
    ];
    let env = tool_env(&Default::default(), &tc.vars, from_process);
    let how = RunStep {
        timed: false,
        drop_cache: false,
        repo_size: false,
        ..RunStep::new(name, "cp")
    };
    let rec = commands.measured_step(tc, &how, argv, PathBuf::from(&tc.vars.work), &env)?;
    let ok = rec.ok;
    commands.tally.append(&rec)?;
    Ok(ok)
}
