//! Repositories on a storage server behind the agent's own network: the
//! real restic (and borg) from Debian's packages backing up and restoring
//! through OpenSSH's sshd (sftp), restic's rest-server and an S3 gateway
//! (versitygw), in a network
//! namespace the agent makes and removes. Run as root (the namespace needs
//! it), as CI and labrun's VM do.
//!
//! The tests share the storage network's addresses, so they take turns.

mod common;

use common::*;
use labrun_evidence::{Step, StorageRecord};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn take_turn() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Fails loudly, saying what is missing, when this host cannot run them.
fn require_host() {
    // SAFETY: geteuid(2) has no preconditions.
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "these tests make network namespaces: run them as root"
    );
    for (bin, what) in [
        (
            "/usr/bin/restic",
            "restic (scripts/host-setup.sh installs it)",
        ),
        ("/usr/sbin/sshd", "openssh-server"),
        ("/usr/bin/ssh", "openssh-client"),
        ("/usr/sbin/ip", "iproute2"),
        ("/usr/sbin/tc", "iproute2"),
    ] {
        assert!(Path::new(bin).exists(), "{bin} is missing: install {what}");
    }
}

/// labrun's test cache, shared with tests/vm.rs (its `--cache`).
const TEST_CACHE: &str = "/var/tmp/labrun-test-cache";

const REST_SERVER_VERSION: &str = "0.14.0";
const VERSITYGW_VERSION: &str = "1.8.0";

/// restic's rest-server 0.14.0, built once with the host's Go and kept in
/// the test cache.
fn rest_server() -> PathBuf {
    go_built(
        "github.com/restic/rest-server",
        REST_SERVER_VERSION,
        "cmd/rest-server",
    )
}

/// Versity's S3 gateway (versitygw) 1.8.0, likewise.
fn s3_server() -> PathBuf {
    go_built(
        "github.com/versity/versitygw",
        VERSITYGW_VERSION,
        "cmd/versitygw",
    )
}

/// `module`'s `package` at `version`, built once with the host's Go and
/// kept in the test cache. Built the way labrun builds a lab's Go tools
/// (in the module's own folder, `-trimpath`, CGO off, baseline amd64) and
/// with the module and build caches of labrun's test cache, which
/// tests/vm.rs's `up` fills when it builds the same rest-server for its
/// guest: whichever of the two builds comes second only links.
fn go_built(module: &str, version: &str, package: &str) -> PathBuf {
    let name = package.rsplit('/').next().unwrap_or(package);
    let dir = PathBuf::from(format!("{TEST_CACHE}/{name}-{version}"));
    let bin = dir.join(name);
    if bin.exists() {
        return bin;
    }
    let go = "/usr/local/go/bin/go";
    assert!(
        Path::new(go).exists(),
        "{go} is missing: the storage tests build {module} with Go"
    );
    // As crates/artifact's Go builds set it (`go_env`): the same variables
    // give the same compile actions, so the build cache is shared.
    let caches = Path::new(TEST_CACHE).join("go");
    let go_cmd = |dir: &Path| {
        let mut cmd = Command::new(go);
        cmd.current_dir(dir)
            .env("GOMODCACHE", caches.join("mod"))
            .env("GOCACHE", caches.join("build-cache"))
            .env("GOPATH", caches.join("path"))
            .env("GOFLAGS", "-modcacherw")
            .env("GOWORK", "off")
            .env("CGO_ENABLED", "0")
            .env("GOOS", "linux")
            .env("GOARCH", "amd64")
            .env("GOAMD64", "v1")
            .env("LC_ALL", "C");
        cmd
    };
    // `go mod download` of the pinned version, then a build inside it (`go
    // install pkg@version` also asks the proxy for deprecations, which this
    // machine's proxy refuses).
    let work = tempfile::tempdir().unwrap();
    let out = go_cmd(work.path())
        .args(["mod", "download", "-json", &format!("{module}@v{version}")])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "downloading {module} {version} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    let downloaded: Value = serde_json::from_slice(&out.stdout).unwrap();
    let source = PathBuf::from(downloaded["Dir"].as_str().expect("the module's Dir"));
    std::fs::create_dir_all(&dir).unwrap();
    let out = go_cmd(&source)
        .args(["build", "-trimpath", "-buildvcs=false", "-o"])
        .arg(&bin)
        .arg(format!("./{package}"))
        .output()
        .unwrap();
    assert!(
        out.status.success() && bin.exists(),
        "building {module} {version} failed: {}",
        stderr(&out)
    );
    bin
}

fn sha256(path: &Path) -> String {
    labrun_evidence::digest::sha256_file(path).unwrap()
}

/// `-o sftp.command=...`: restic's own ssh, told to use the run's config.
const SFTP_COMMAND: &str = "sftp.command=ssh -F {ssh_config} {repo_user}@{repo_host} -s sftp";

fn restic(name: &str, form: &str, extra: &[&str]) -> Value {
    let with = |args: &[&str]| -> Vec<String> {
        let mut argv = vec!["{bin}".to_string()];
        argv.extend(args.iter().map(|a| a.to_string()));
        argv.extend(extra.iter().map(|a| a.to_string()));
        argv
    };
    json!({
        "name": name, "version": "0.14", "binary": "/usr/bin/restic",
        "env": {"RESTIC_PASSWORD": PASSWORD, "RESTIC_CACHE_DIR": "{work}/cache"},
        "secret_env": ["RESTIC_PASSWORD"],
        "repo": form,
        "commands": {
            "init": {"argv": with(&["init", "-r", "{repo}"])},
            "backup": {"argv": with(&["backup", "-r", "{repo}", "."]), "cwd": "{source}"},
            "restore": {"argv": with(&["restore", "latest", "-r", "{repo}", "--target", "{target}"])}
        }
    })
}

fn borg_over_ssh() -> Value {
    json!({
        "name": "borg", "version": "1.2", "binary": "/usr/bin/borg",
        "env": {
            "BORG_PASSPHRASE": PASSWORD, "BORG_BASE_DIR": "{work}",
            "BORG_RSH": "ssh -F {ssh_config}"
        },
        "secret_env": ["BORG_PASSPHRASE"],
        "repo": "ssh://{repo_user}@{repo_host}{repo_path}",
        "commands": {
            "init": {"argv": ["{bin}", "init", "--encryption=repokey-blake2", "{repo}"]},
            "backup": {"argv": ["{bin}", "create", "{repo}::{snapshot}", "."], "cwd": "{source}"},
            "restore": {"argv": ["{bin}", "extract", "{repo}::{snapshot}"], "cwd": "{target}"}
        }
    })
}

fn with_storage(mut plan: Value, storage: Value) -> Value {
    plan["storage"] = storage;
    plan
}

/// The agents' namespaces on this machine.
fn storage_namespaces() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with("labrun-store-"))
        .map(str::to_string)
        .collect()
}

/// Processes whose command line mentions `needle` (the lab's folder).
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(needle) {
            found.push(format!("{:?}: {cmdline}", entry.file_name()));
        }
    }
    found
}

/// Nothing of the run's network or server is left.
fn assert_nothing_left(lab: &Lab) {
    assert_eq!(storage_namespaces(), Vec::<String>::new());
    let lab_dir = lab.dir.path().to_string_lossy().into_owned();
    assert_eq!(processes_mentioning(&lab_dir), Vec::<String>::new());
    let addrs = Command::new("ip")
        .args(["-o", "-4", "addr", "show"])
        .output()
        .unwrap();
    let addrs = String::from_utf8_lossy(&addrs.stdout);
    assert!(!addrs.contains("10.250.0.1/"), "{addrs}");
}

fn storage_record(lab: &Lab) -> StorageRecord {
    let path = lab.evidence().join(labrun_evidence::storage::STORAGE_FILE);
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

/// Every step passed, every restore verified, and the repository's bytes
/// (measured in its folder by the agent) grew with the incremental backup.
fn assert_tool_passed(lab: &Lab, tool: &str) {
    let records = lab.records();
    assert_eq!(steps_of(&records, tool, 1), full_cycle(), "{tool}");
    let find = |step| {
        records
            .iter()
            .find(|r| r.tool == tool && r.step == step)
            .unwrap()
    };
    let full = find(Step::BACKUP_FULL).repo_size_bytes.unwrap();
    let incr = find(Step::BACKUP_INCREMENTAL).repo_size_bytes.unwrap();
    assert!(full > 50_000 && incr > full, "{tool}: {full} then {incr}");
    let v = find(Step::VERIFY).verify.clone().unwrap();
    assert!(v.passed && v.files_checked > 10, "{tool}: {v:?}");
}

fn assert_rtts(record: &StorageRecord) {
    assert_eq!(record.connect_rtt_ms.len(), 5, "{record:?}");
    // A connect over the veth pair: more than nothing, well under a second.
    assert!(
        record
            .connect_rtt_ms
            .iter()
            .all(|&ms| ms > 0.0 && ms < 1000.0),
        "{record:?}"
    );
    assert_eq!(record.qdiscs.len(), 2, "{record:?}");
}

#[test]
#[ignore = "needs root and a network namespace: `make test` runs it"]
fn restic_and_borg_through_sftp() {
    require_host();
    assert!(
        Path::new("/usr/bin/borg").exists(),
        "/usr/bin/borg is missing: run scripts/host-setup.sh (installs borgbackup)"
    );
    let _turn = take_turn();
    let lab = Lab::new();
    let plan = with_storage(
        base_plan(
            "sftp",
            1,
            vec![
                restic(
                    "restic",
                    "sftp:{repo_user}@{repo_host}:{repo_path}",
                    &["-o", SFTP_COMMAND],
                ),
                borg_over_ssh(),
            ],
        ),
        json!({"server": "sftp"}),
    );
    let out = lab.run(&plan);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}\n{}",
        stderr(&out),
        lab.failures()
    );
    assert_tool_passed(&lab, "restic");
    assert_tool_passed(&lab, "borg");

    let record = storage_record(&lab);
    assert_eq!(record.address, "10.250.0.2:22");
    assert_rtts(&record);
    let version = record.server_version.clone().unwrap_or_default();
    assert!(version.starts_with("OpenSSH_"), "{record:?}");
    // The tools really came through the server, from the client end.
    let log = std::fs::read_to_string(lab.evidence().join("logs/storage/server.err")).unwrap();
    let logins = log
        .matches("Accepted publickey for root from 10.250.0.1")
        .count();
    assert!(logins >= 6, "{logins} logins in {log}");
    assert!(lab.warnings().is_empty(), "{:?}", lab.warnings());
    assert_nothing_left(&lab);
}

/// Runs one cycle of `tool` with its repository on `server` (its pinned
/// `binary`), which must pass; returns the lab, the plan and what the agent
/// measured of the network (its round trips already checked).
fn passes_through(
    server: &str,
    binary: &Path,
    version: &str,
    tool: Value,
) -> (Lab, Value, StorageRecord) {
    let lab = Lab::new();
    let plan = with_storage(
        base_plan(server, 1, vec![tool]),
        json!({
            "server": server,
            "binary": binary.to_string_lossy(),
            "binary_sha256": sha256(binary),
            "version": version,
        }),
    );
    let out = lab.run(&plan);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}\n{}",
        stderr(&out),
        lab.failures()
    );
    assert_tool_passed(&lab, "restic");
    let record = storage_record(&lab);
    assert_rtts(&record);
    (lab, plan, record)
}

#[test]
#[ignore = "needs root, a network namespace and a Go build of its server: `make test` runs it"]
fn restic_through_rest_server() {
    require_host();
    let rest = rest_server();
    let _turn = take_turn();
    let tool = restic("restic", "rest:{repo_url}", &[]);
    let (lab, plan, record) = passes_through("rest", &rest, REST_SERVER_VERSION, tool);
    assert_eq!(record.address, "10.250.0.2:8000");
    let version = record.server_version.clone().unwrap_or_default();
    assert!(version.contains("rest-server 0.14.0"), "{record:?}");
    // The server's binary is pinned and listed like the tools'.
    let listing = std::fs::read_to_string(lab.evidence().join("binary-sha256.txt")).unwrap();
    assert!(
        listing.contains(&format!("{}  {}", sha256(&rest), rest.display())),
        "{listing}"
    );
    assert_nothing_left(&lab);

    // A binary that is not the pinned one: refused before anything starts.
    let lab = Lab::new();
    let mut bad = plan.clone();
    bad["storage"]["binary_sha256"] = json!("0".repeat(64));
    let out = lab.run(&bad);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("storage server"), "{}", stderr(&out));
    assert_nothing_left(&lab);
}

#[test]
#[ignore = "needs root, a network namespace and a Go build of its server: `make test` runs it"]
fn restic_through_an_s3_server() {
    require_host();
    let s3 = s3_server();
    let _turn = take_turn();
    let mut tool = restic("restic", "s3:{repo_url}", &[]);
    // restic reads S3 credentials from the environment; they are the run's.
    tool["env"]["AWS_ACCESS_KEY_ID"] = json!("{s3_access_key}");
    tool["env"]["AWS_SECRET_ACCESS_KEY"] = json!("{s3_secret_key}");
    let (lab, _, record) = passes_through("s3", &s3, VERSITYGW_VERSION, tool);
    assert_eq!(record.address, "10.250.0.2:7070");
    // The objects went through the gateway (its log names each request)
    // into the tool cycle's folder, where the size was measured.
    let log = std::fs::read_to_string(lab.evidence().join("logs/storage/server.out"))
        .unwrap_or_default()
        + &std::fs::read_to_string(lab.evidence().join("logs/storage/server.err"))
            .unwrap_or_default();
    assert!(
        log.contains("PUT") && log.contains("/c1-restic/repo/data/"),
        "{log}"
    );
    let records = lab.records();
    let full = records
        .iter()
        .find(|r| r.tool == "restic" && r.step == Step::BACKUP_FULL)
        .expect("a full backup record");
    assert!(
        full.repo_size_bytes.unwrap_or(0) > 100_000,
        "the repository folder holds the objects: {:?}",
        full.repo_size_bytes
    );
    assert_nothing_left(&lab);
}

/// Whether this kernel has sch_netem (the VM's Debian kernel does; many
/// container hosts do not).
fn host_has_netem() -> bool {
    let dev = "lrsnetemprobe";
    let run = |args: &[&str]| Command::new(args[0]).args(&args[1..]).output().unwrap();
    // A veth pair: the kind the agent shapes (and there by default, unlike
    // dummy).
    let made = run(&[
        "ip",
        "link",
        "add",
        dev,
        "type",
        "veth",
        "peer",
        "name",
        "lrsnetemprobe1",
    ]);
    assert!(made.status.success(), "{}", stderr(&made));
    let tc = run(&[
        "tc", "qdisc", "add", "dev", dev, "root", "netem", "delay", "1ms",
    ]);
    run(&["ip", "link", "del", dev]);
    if !tc.status.success() {
        let why = stderr(&tc);
        assert!(why.contains("qdisc kind is unknown"), "{why}");
    }
    tc.status.success()
}

#[test]
#[ignore = "needs root and a network namespace: `make test` runs it"]
fn a_shaped_network_is_netem_or_a_clear_error() {
    require_host();
    let _turn = take_turn();
    let netem = host_has_netem();
    let lab = Lab::new();
    let plan = with_storage(
        base_plan(
            "netem",
            1,
            vec![restic(
                "restic",
                "sftp:{repo_user}@{repo_host}:{repo_path}",
                &["-o", SFTP_COMMAND],
            )],
        ),
        json!({"server": "sftp", "network": {"rtt_ms": 20, "rate_bits_per_sec": 100_000_000}}),
    );
    let out = lab.run(&plan);
    if netem {
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let record = storage_record(&lab);
        for q in &record.qdiscs {
            assert!(q.contains("netem") && q.contains("delay 10"), "{q}");
        }
        let median = record.median_rtt_ms().unwrap();
        assert!(median >= 16.0, "{record:?}");
    } else {
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("no netem")
                && err.contains("labrun's VM")
                && err.contains("storage.network"),
            "{err}"
        );
        // Before any step, the dataset's included.
        assert!(lab.records().is_empty(), "{:?}", lab.records());
    }
    assert_nothing_left(&lab);
}

#[test]
#[ignore = "needs root and a network namespace: `make test` runs it"]
fn sigterm_takes_the_network_down() {
    require_host();
    let _turn = take_turn();
    let lab = Lab::new();
    let marker = lab.path("backup-started");
    let script = format!("touch {}; sleep 60", marker.display());
    let stuck = sh_tool(
        "stuck",
        json!({"backup": {"argv": ["{bin}", "-c", script], "cwd": "{source}"}}),
    );
    let mut plan = with_storage(
        base_plan("sigterm", 1, vec![stuck]),
        json!({"server": "sftp"}),
    );
    plan["drop_caches"] = json!(false);
    lab.write_plan(&plan);
    let mut child = lab
        .command()
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !marker.exists() {
        assert!(Instant::now() < deadline, "the backup never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        storage_namespaces(),
        vec![format!("labrun-store-{}", child.id())]
    );
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert_eq!(child.wait().unwrap().code(), Some(128 + libc::SIGTERM));
    assert_nothing_left(&lab);
}

#[test]
#[ignore = "needs root and a network namespace: `make test` runs it"]
fn a_killed_agents_network_is_removed_by_the_next() {
    require_host();
    let _turn = take_turn();
    // A pid that no longer runs: a child already reaped.
    let mut gone = Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    let name = format!("labrun-store-{}", gone.id());
    let made = Command::new("ip")
        .args(["netns", "add", &name])
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", stderr(&made));
    // What its server left running in there.
    let mut orphan = Command::new("ip")
        .args(["netns", "exec", &name, "sleep", "300"])
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let pids = Command::new("ip")
            .args(["netns", "pids", &name])
            .output()
            .unwrap();
        if !pids.stdout.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "sleep never ran in {name}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let lab = Lab::new();
    let mut plan = base_plan("leftover", 1, vec![sh_tool("fine", json!({}))]);
    plan["drop_caches"] = json!(false);
    let out = lab.run(&plan);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        lab.warnings()
            .iter()
            .any(|w| w.contains(&name) && w.contains("removed")),
        "{:?}",
        lab.warnings()
    );
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(orphan.wait().unwrap().signal(), Some(libc::SIGKILL));
    assert_nothing_left(&lab);
}

#[test]
#[ignore = "needs root (runs the agent as nobody): `make test` runs it"]
fn without_root_or_ip_a_clear_error_before_anything() {
    require_host();
    let _turn = take_turn();
    let plan = || {
        let mut plan = with_storage(
            base_plan("noroot", 1, vec![sh_tool("fine", json!({}))]),
            json!({"server": "sftp"}),
        );
        plan["drop_caches"] = json!(false);
        plan
    };

    // Not root: nobody, in a lab folder nobody may write.
    let lab = Lab::new();
    lab.write_plan(&plan());
    let open_up = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777)).unwrap();
    };
    open_up(lab.dir.path());
    open_up(&lab.plan_path());
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .args(lab.command().get_program().to_str())
        .args(lab.command().get_args())
        .output()
        .expect("setpriv (util-linux) runs the agent as nobody");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("run labrun-agent as root"),
        "{}",
        stderr(&out)
    );
    assert!(!lab.evidence().join("records.jsonl").exists());
    assert_nothing_left(&lab);

    // No `ip` on the PATH.
    let lab = Lab::new();
    lab.write_plan(&plan());
    let out = lab
        .command()
        .env_clear()
        .env("PATH", lab.dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("`ip`") && err.contains("iproute2"), "{err}");
    assert!(!lab.evidence().join("records.jsonl").exists());
    assert_nothing_left(&lab);
}

#[test]
#[ignore = "needs root and a network namespace: `make test` runs it"]
fn a_server_that_ends_at_once_is_an_error_with_its_log() {
    require_host();
    let _turn = take_turn();
    let lab = Lab::new();
    let script = lab.path("broken-server");
    std::fs::write(
        &script,
        "#!/bin/sh\necho 'cannot bind: no such luck' >&2\nexit 7\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut plan = with_storage(
        base_plan("broken", 1, vec![sh_tool("fine", json!({}))]),
        json!({"server": "rest", "binary": script.to_string_lossy()}),
    );
    plan["drop_caches"] = json!(false);
    let out = lab.run(&plan);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("ended before it accepted a connection") && err.contains("no such luck"),
        "{err}"
    );
    assert!(lab.records().is_empty(), "{:?}", lab.records());
    assert_nothing_left(&lab);
}
