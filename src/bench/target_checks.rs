//! What is checked on the target before anything is written there: no run
//! going on beside this one, and every tool of the plan installed.

use crate::bench::layout::RemoteRun;
use crate::bench::machine::Access;
use crate::bench::remote;
use anyhow::{Context as _, bail};
use labrun_evidence::Plan;

/// Refuses to start beside a run that goes on on the target.
pub async fn refuse_if_busy(
    session: &labrun_ssh::Session,
    remote: &RemoteRun,
    access: &Access,
) -> anyhow::Result<()> {
    let Some(running) = remote::running_agent(session, remote)
        .await
        .context("checking for a run already going on on the target")?
    else {
        return Ok(());
    };
    bail!(
        "a run is already going on on {host}: run {id} (agent pid {pid} there); a second one beside it would skew both.\n  follow it (and get its evidence) with: labrun bench --attach {id}   (Ctrl-C there stops it and keeps what it measured)\n  or stop it on the target with: kill {pid}",
        host = access.target.host,
        id = running.run_id,
        pid = running.pid,
    )
}

/// Prints each quoted path that is an executable file, in the given order;
/// exits 1 when any is not. (Their digests are the agent's: it hashes each
/// binary once, checks the lab's pins and keeps the listing as evidence.)
fn installed_script(paths: &[String]) -> String {
    format!(
        "rc=0\nfor f in {}; do if [ -f \"$f\" ] && [ -x \"$f\" ]; then printf '%s\\n' \"$f\"; else rc=1; fi; done\nexit $rc\n",
        paths.join(" ")
    )
}

/// Before anything is pushed: every tool of the plan is installed in the
/// guest, or the run is refused with what to do.
pub async fn check_installed(session: &labrun_ssh::Session, plan: &Plan) -> anyhow::Result<()> {
    let paths: Vec<String> = plan
        .tools
        .iter()
        .map(|t| crate::bench::layout::sh_quote(&t.binary))
        .collect();
    let out = session.exec(&installed_script(&paths)).await?;
    if out.exit_code == Some(0) {
        return Ok(());
    }
    let listed = String::from_utf8_lossy(&out.stdout);
    let (present, missing): (
        Vec<&labrun_evidence::ToolPlan>,
        Vec<&labrun_evidence::ToolPlan>,
    ) = plan
        .tools
        .iter()
        .partition(|t| listed.lines().any(|l| l == t.binary));
    let names = |ts: &[&labrun_evidence::ToolPlan]| {
        ts.iter()
            .map(|t| format!("{} ({})", t.name, t.binary))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let others = if present.is_empty() {
        String::new()
    } else {
        let installed: Vec<&str> = present.iter().map(|t| t.name.as_str()).collect();
        format!(
            ", or run the installed ones with `--tools {}`",
            installed.join(",")
        )
    };
    bail!(
        "not installed in the guest: {}\n  install them with `labrun up` (VM; `up --tools` installs a subset) or on the target machine{others}",
        names(&missing),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn installed_lists_the_executables_in_order_and_fails_for_any_other() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, plain) = (
            dir.path().join("a b"),
            dir.path().join("b"),
            dir.path().join("plain"),
        );
        for p in [&a, &b, &plain] {
            std::fs::write(p, "#!/bin/sh\n").unwrap();
        }
        for p in [&a, &b] {
            std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
        }
        let quoted = |p: &Path| crate::bench::layout::sh_quote(&p.display().to_string());
        let run = |paths: &[String]| {
            std::process::Command::new("sh")
                .arg("-c")
                .arg(installed_script(paths))
                .output()
                .unwrap()
        };
        let out = run(&[quoted(&b), quoted(&a)]);
        assert!(out.status.success());
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            format!("{}\n{}\n", b.display(), a.display())
        );
        for other in [plain, dir.path().join("missing"), dir.path().to_path_buf()] {
            let out = run(&[quoted(&a), quoted(&other)]);
            assert_eq!(out.status.code(), Some(1), "{}", other.display());
            assert_eq!(
                String::from_utf8(out.stdout).unwrap(),
                format!("{}\n", a.display())
            );
        }
    }
}
