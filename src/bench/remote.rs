//! Driving the agent in the guest over SSH: push it (checked by SHA-256 in
//! the guest), write the plan, start it detached so it outlives the
//! connection, and stop it on request.
//!
//! Each command is a round trip and a shell start in the guest (with
//! whatever rc files the guest user's shell reads), so related commands
//! share one exec.

use crate::bench::layout::{RemoteRun, sh_quote};
use anyhow::{Context as _, bail};
use labrun_evidence::{AgentMarker, Plan};
use labrun_ssh::Session;
use std::path::{Path, PathBuf};

/// Runs a command that must succeed; its stderr becomes the error.
pub async fn run_ok(session: &Session, command: &str) -> anyhow::Result<String> {
    let out = session.exec(command).await?;
    if out.exit_code != Some(0) {
        bail!(
            "`{command}` failed in the guest (exit {}): {}",
            out.exit_code
                .map_or_else(|| "none".to_string(), |c| c.to_string()),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Uploads the agent unless the guest already has this exact binary, then
/// checks its digest there.
///
/// It travels gzipped where the guest has `gzip`: under emulation the
/// guest's sshd deciphers well under 1 MB/s, and the static binary packs
/// to 40% (measured under TCG: 3.9 MB took 6.7 s, its gzip 1 s with the
/// unpacking). Unpacking, renaming and the digest share one exec.
pub async fn push_agent(
    session: &Session,
    remote: &RemoteRun,
    local_agent: &Path,
    local_sha256: &str,
    cache: &Path,
) -> anyhow::Result<()> {
    let agent = sh_quote(&remote.agent());
    // The folder the upload needs, what is already there, and whether the
    // guest can unpack, in one exec.
    let have = run_ok(
        session,
        &format!(
            "mkdir -p {} && {{ sha256sum {agent} 2>/dev/null; true; }} && {{ command -v gzip >/dev/null && echo {GZIP_MARK}; true; }}",
            sh_quote(&format!("{}/bin", remote.base))
        ),
    )
    .await?;
    let already = have
        .split_whitespace()
        .next()
        .is_some_and(|d| d == local_sha256);
    if already {
        // The digest just read is the check: no second one.
        return Ok(());
    }
    let check = if have.lines().any(|l| l == GZIP_MARK) {
        let packed = PackedAgent::of(local_agent, local_sha256, cache)?;
        let gz = format!("{}.gz", remote.agent());
        session
            .upload(packed.path(), &gz, 0o600)
            .await
            .context("uploading the agent")?;
        let (gz, part) = (sh_quote(&gz), sh_quote(&format!("{}.part", remote.agent())));
        format!(
            "gzip -dc {gz} > {part} && chmod 755 {part} && mv -f {part} {agent} && rm -f {gz} && sha256sum {agent}"
        )
    } else {
        session
            .upload(local_agent, &remote.agent(), 0o755)
            .await
            .context("uploading the agent")?;
        format!("sha256sum {agent}")
    };
    let out = run_ok(session, &check).await?;
    let got = out.split_whitespace().next().unwrap_or_default();
    if got != local_sha256 {
        bail!(
            "the agent in the guest ({}) has SHA-256 {got}, expected {local_sha256}: the upload was corrupted; run `labrun bench` again",
            remote.agent()
        );
    }
    Ok(())
}

/// What the first exec prints when the guest has `gzip`.
const GZIP_MARK: &str = "labrun-has-gzip";

/// The agent gzipped, packed once per build: kept in the cache under its
/// digest (packing is 0.3 s of CPU, as long as the rest of a push over
/// loopback), or in a temporary file when the cache cannot be written.
enum PackedAgent {
    Cached(PathBuf),
    Temporary(tempfile::NamedTempFile),
}

impl PackedAgent {
    fn of(local: &Path, sha256: &str, cache: &Path) -> anyhow::Result<PackedAgent> {
        let dir = cache.join("agents");
        let kept = dir.join(format!("{sha256}.gz"));
        if kept.is_file() {
            mark_used(&kept);
            return Ok(PackedAgent::Cached(kept));
        }
        let Ok(()) = std::fs::create_dir_all(&dir) else {
            return gzip_to_temp(local, None).map(PackedAgent::Temporary);
        };
        // Packed beside its final name and renamed: a cached file is whole.
        let packed = match gzip_to_temp(local, Some(&dir)) {
            Ok(packed) => match packed.persist(&kept) {
                Ok(_) => PackedAgent::Cached(kept),
                Err(e) => PackedAgent::Temporary(e.file),
            },
            Err(_) => gzip_to_temp(local, None).map(PackedAgent::Temporary)?,
        };
        remove_unused_packs(&dir, packed.path());
        Ok(packed)
    }

    fn path(&self) -> &Path {
        match self {
            PackedAgent::Cached(p) => p,
            PackedAgent::Temporary(t) => t.path(),
        }
    }
}

/// A packed agent (or a packing left half-done by a killed run) not used
/// for this long is removed when a new build is packed: each build of the
/// agent leaves a 2 MB file, and a week keeps the ones a user switches
/// between (and the one another run is pushing right now).
const PACKS_KEPT_UNUSED_FOR: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

/// Dates a cached pack as used now, so it is kept while it is in use.
fn mark_used(pack: &Path) {
    if let Ok(file) = std::fs::File::options().append(true).open(pack) {
        let _ = file.set_modified(std::time::SystemTime::now());
    }
}

/// Removes what the agents folder holds that was not used for a week,
/// except `keep`. Best effort: the cache is only a saving.
fn remove_unused_packs(dir: &Path, keep: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let unused_for = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok());
        if path != keep && unused_for.is_some_and(|d| d > PACKS_KEPT_UNUSED_FOR) {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// `local`, gzipped into a temporary file (removed when dropped) in `dir`,
/// else the system's temporary folder.
fn gzip_to_temp(local: &Path, dir: Option<&Path>) -> anyhow::Result<tempfile::NamedTempFile> {
    let mut input = std::fs::File::open(local)
        .with_context(|| format!("reading the agent {}", local.display()))?;
    let packed = match dir {
        Some(d) => tempfile::NamedTempFile::new_in(d),
        None => tempfile::NamedTempFile::new(),
    }
    .context("a temporary file for the agent")?;
    let mut gz = flate2::write::GzEncoder::new(packed.as_file(), flate2::Compression::default());
    std::io::copy(&mut input, &mut gz)
        .and_then(|_| gz.finish().map(|_| ()))
        .with_context(|| format!("packing the agent into {}", packed.path().display()))?;
    Ok(packed)
}

/// Creates the run folders, writes the plan and starts the agent on it, in
/// one exec (a round trip less before the first step: a second or more in
/// an emulated guest, whose shell starts slowly). The plan (it carries the
/// repository passwords) goes from memory to the guest's stdin, never into a
/// file on the host. Returns the agent's pid.
pub async fn start_run(session: &Session, remote: &RemoteRun, plan: &Plan) -> anyhow::Result<u32> {
    let bytes = serde_json::to_vec_pretty(plan)?;
    let script = format!(
        "{}\n{}",
        plan_upload_script(remote, bytes.len()),
        start_agent_command(remote)
    );
    let out = session
        .exec_with_input(&script, &bytes)
        .await
        .context("writing the plan and starting the agent")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.exit_code != Some(0) {
        bail!(
            "writing the plan and starting the agent in the guest failed (exit {}): {}",
            out.exit_code
                .map_or_else(|| "none".to_string(), |c| c.to_string()),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    stdout
        .trim()
        .parse::<u32>()
        .with_context(|| format!("the guest did not report the agent's pid (got {stdout:?})"))
}

/// The plan carries repository passwords: it is written with umask 077 into
/// a 0700 folder, under a temporary name until its size is checked, so an
/// interrupted upload never leaves a partial plan for the agent to read.
fn plan_upload_script(remote: &RemoteRun, size: usize) -> String {
    let q = |s: String| sh_quote(&s);
    format!(
        "umask 077 && mkdir -p {work} {ev} && chmod 700 {dir} || exit 1\n\
         cat > {tmp} || {{ rm -f {tmp}; exit 1; }}\n\
         n=$(wc -c < {tmp}); [ \"$n\" -eq {size} ] || \
           {{ echo \"labrun: the plan arrived incomplete ($n of {size} bytes)\" >&2; rm -f {tmp}; exit 1; }}\n\
         mv -f {tmp} {plan} || exit 1",
        work = q(remote.work()),
        ev = q(remote.evidence()),
        dir = q(remote.dir()),
        tmp = q(format!("{}.part", remote.plan())),
        plan = q(remote.plan()),
    )
}

/// Starts the agent in its own session (setsid), stdio to files, so it keeps
/// running when the SSH connection drops, and prints its pid.
fn start_agent_command(remote: &RemoteRun) -> String {
    let q = |s: String| sh_quote(&s);
    // The exit status is written by the wrapper shell when the agent ends, so
    // a later attach can tell "finished with 1" from "killed".
    // The agent deletes the plan once read (it holds the tools' passwords,
    // and an SSH target lives on after the run); the evidence keeps a
    // redacted copy. The lock is the machine's, not the run's: a second
    // agent refuses to start beside this one.
    let inner = format!(
        "{agent} run --plan {plan} --remove-plan --lock {lock} --datasets {datasets} --work {work} --evidence {ev}; echo $? > {exit}",
        agent = q(remote.agent()),
        plan = q(remote.plan()),
        lock = q(remote.agent_lock()),
        datasets = q(remote.datasets()),
        work = q(remote.work()),
        ev = q(remote.evidence()),
        exit = q(remote.exit_file()),
    );
    // Only the agent's wrapper goes to the background (the braces), with all
    // three streams redirected: a backgrounded `a && b & ...` list would keep
    // this channel's stdout open, and this call would last as long as the run.
    format!(
        "cd {dir} && rm -f {exit} && {{ setsid nohup sh -c {inner} > {out} 2> {err} < /dev/null & echo $! > {pid}; }} && cat {pid}",
        dir = q(remote.dir()),
        exit = q(remote.exit_file()),
        inner = sh_quote(&inner),
        out = q(remote.agent_stdout()),
        err = q(remote.agent_stderr()),
        pid = q(remote.pid_file()),
    )
}

/// The pid `start_run` left in the guest's pid file, if it got that far.
pub async fn read_agent_pid(session: &Session, remote: &RemoteRun) -> anyhow::Result<Option<u32>> {
    let out = session
        .exec(&format!(
            "cat {} 2>/dev/null; true",
            sh_quote(&remote.pid_file())
        ))
        .await?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().parse().ok())
}

/// A run whose agent is alive on the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningAgent {
    pub run_id: String,
    pub pid: u32,
}

/// The run going on on the target, if any: the agent named in the
/// machine's marker, if that very process (same start time, same boot)
/// still runs. A marker left by a dead agent is no run: the next agent
/// takes it over (and stops what that agent left running).
pub async fn running_agent(
    session: &Session,
    remote: &RemoteRun,
) -> anyhow::Result<Option<RunningAgent>> {
    // The agent rewrites the marker in place while it runs; a read that
    // catches a rewrite half done is read again.
    let mut marker = None;
    for _ in 0..3 {
        let out = session
            .exec(&format!(
                "cat {} 2>/dev/null; true",
                sh_quote(&remote.agent_lock())
            ))
            .await?;
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if text.is_empty() {
            return Ok(None);
        }
        if let Ok(m) = serde_json::from_str::<AgentMarker>(&text) {
            marker = Some(m);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // Not a marker at all: nothing to go by; the agent's own lock still
    // keeps two agents apart.
    let Some(marker) = marker else {
        return Ok(None);
    };
    let out = session
        .exec(&format!(
            "cat /proc/sys/kernel/random/boot_id 2>/dev/null; echo; cat /proc/{}/stat 2>/dev/null; true",
            marker.agent.pid
        ))
        .await?;
    let text = String::from_utf8_lossy(&out.stdout);
    let (boot_id, stat) = text.split_once('\n').unwrap_or((&text, ""));
    let alive = marker.agent.is_running(boot_id, stat);
    Ok(alive.then_some(RunningAgent {
        run_id: marker.run_id,
        pid: marker.agent.pid,
    }))
}

/// The end of what the agent wrote on stderr (its error, when it could not
/// run), or a word on why there is none.
pub async fn agent_error(session: &Session, remote: &RemoteRun) -> String {
    let command = format!(
        "tail -c 4000 {} 2>/dev/null",
        sh_quote(&remote.agent_stderr())
    );
    match session.exec(&command).await {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if text.is_empty() {
                format!("it wrote nothing on stderr ({})", remote.agent_stderr())
            } else {
                text
            }
        }
        Err(e) => format!(
            "its stderr ({}) could not be read: {e}",
            remote.agent_stderr()
        ),
    }
}

/// The agent's state as seen from the guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentState {
    Running,
    Exited(i32),
    /// Gone without writing an exit status (killed, or the guest rebooted).
    Vanished,
}

pub async fn agent_state(
    session: &Session,
    remote: &RemoteRun,
    pid: u32,
) -> anyhow::Result<AgentState> {
    // The exit status first: once the wrapper wrote it the agent is done,
    // even while the wrapper still shows as a process (a zombie, until
    // whatever adopted it reaps it). `-s`: not a file being written.
    let out = session
        .exec(&format!(
            "if [ -s {exit} ]; then cat {exit}; elif kill -0 {pid} 2>/dev/null; then echo running; elif [ -f {exit} ]; then cat {exit}; else echo vanished; fi",
            exit = sh_quote(&remote.exit_file())
        ))
        .await?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    Ok(match text.as_str() {
        "running" => AgentState::Running,
        "vanished" | "" => AgentState::Vanished,
        code => code
            .parse::<i32>()
            .map_or(AgentState::Vanished, AgentState::Exited),
    })
}

/// Asks the agent to stop: it kills the running tool, records the
/// interruption and flushes its evidence.
pub async fn stop_agent(session: &Session, pid: u32) -> anyhow::Result<()> {
    // The wrapper `sh` is the session leader; the agent is its child. Only the
    // agent is signalled, so the wrapper still records its exit status.
    session
        .exec(&format!("pkill -TERM -P {pid} 2>/dev/null; true"))
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn the_agent_is_packed_once_per_digest_and_kept_in_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let agent = dir.path().join("agent");
        std::fs::write(&agent, vec![7u8; 100_000]).unwrap();
        let cache = dir.path().join("cache");
        let first = PackedAgent::of(&agent, "d1", &cache).unwrap();
        let kept = cache.join("agents/d1.gz");
        assert_eq!(first.path(), kept);
        // The next run finds it: the file is not packed again (a new pack
        // would be renamed over it, a new inode; reuse only redates it).
        use std::os::unix::fs::MetadataExt;
        let before = std::fs::metadata(&kept).unwrap().ino();
        let again = PackedAgent::of(&agent, "d1", &cache).unwrap();
        assert_eq!(again.path(), kept);
        assert_eq!(std::fs::metadata(&kept).unwrap().ino(), before);
        // Nothing half-written is left beside it.
        let names: Vec<_> = std::fs::read_dir(cache.join("agents")).unwrap().collect();
        assert_eq!(names.len(), 1);
        // A cache that cannot be made (a file where the folder should be):
        // packed into a temporary file instead.
        let blocked = dir.path().join("blocked");
        std::fs::write(&blocked, b"").unwrap();
        let temp = PackedAgent::of(&agent, "d1", &blocked).unwrap();
        assert!(matches!(temp, PackedAgent::Temporary(_)));
        assert!(temp.path().is_file());
    }

    #[test]
    fn packs_unused_for_a_week_go_when_a_new_build_is_packed() {
        let dir = tempfile::tempdir().unwrap();
        let agent = dir.path().join("agent");
        std::fs::write(&agent, vec![7u8; 1000]).unwrap();
        let cache = dir.path().join("cache");
        let agents = cache.join("agents");
        std::fs::create_dir_all(&agents).unwrap();
        let aged = |name: &str, days: u64| {
            let path = agents.join(name);
            std::fs::write(&path, b"old").unwrap();
            let then =
                std::time::SystemTime::now() - std::time::Duration::from_secs(days * 24 * 3600);
            std::fs::File::options()
                .append(true)
                .open(&path)
                .unwrap()
                .set_modified(then)
                .unwrap();
            path
        };
        let stale = aged("old.gz", 8);
        let half_packed = aged(".tmpAbCdEf", 30);
        let recent = aged("recent.gz", 2);
        // In use again today: dated now, so it stays.
        let reused = aged("reused.gz", 9);
        PackedAgent::of(&agent, "reused", &cache).unwrap();

        let new = PackedAgent::of(&agent, "new", &cache).unwrap();
        assert!(new.path().is_file());
        assert!(!stale.exists() && !half_packed.exists());
        assert!(recent.exists() && reused.exists());
    }

    #[test]
    fn the_packed_agent_unpacks_to_the_same_bytes_with_gzip() {
        let dir = tempfile::tempdir().unwrap();
        let agent = dir.path().join("agent");
        let bytes: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        std::fs::write(&agent, &bytes).unwrap();
        let packed = gzip_to_temp(&agent, None).unwrap();
        assert!(std::fs::metadata(packed.path()).unwrap().len() < bytes.len() as u64 / 2);
        // As the guest unpacks it: gzip -dc.
        let mut gunzip = std::process::Command::new("gzip")
            .arg("-dc")
            .arg(packed.path())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = Vec::new();
        gunzip.stdout.take().unwrap().read_to_end(&mut out).unwrap();
        assert!(gunzip.wait().unwrap().success());
        assert_eq!(out, bytes);
    }
}
