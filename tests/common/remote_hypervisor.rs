//! A second libvirt hypervisor on this machine, reachable only the way a
//! remote one is: over SSH, through libvirt's remote protocol.
//!
//! ```text
//! #[path = "common/remote_hypervisor.rs"]
//! mod remote_hypervisor;
//! let rhv = remote_hypervisor::RemoteHypervisor::start()?;
//! virsh -c rhv.uri() list --all            // or virt::Connect::open(&rhv.uri())
//! rhv.stop()?;                             // or let it drop
//! ```
//!
//! What [`RemoteHypervisor::start`] builds (all named after the test's pid
//! and a serial, `<pid>-<n>`):
//! - a network namespace `labrun-rhv-<pid>-<n>` with `lo` up and one veth
//!   pair, `rhv<pid>-<n>h` (root namespace, `10.251.X.1/30`) and
//!   `rhv<pid>-<n>n` (namespace, `10.251.X.2/30`); no other address, no
//!   default route on either side, IPv6 off on both ends. X is the first
//!   free one from `pid % 256`, chosen under a lock file
//!   (`/run/lock/labrun-rhv.lock`) so concurrent fixtures never share it;
//! - a system user `labrun-rhv<pid>-<n>` (password `*`: no password, but not
//!   "locked", which sshd without PAM would refuse even for a key), home
//!   `/var/tmp/labrun-rhv<pid>-<n>`, in group `kvm` when the host has one and
//!   `/dev/kvm` exists (so `<domain type='kvm'>` works; TCG works without);
//! - an ed25519 host key and client key made by `labrun_ssh::generate_ed25519`
//!   (root's side, `/var/tmp/labrun-rhv-<pid>-<n>.d`, 0700), the client key
//!   in the user's `~/.ssh/authorized_keys`, and a `known_hosts` pinning the
//!   host key for `10.251.X.2`;
//! - `/usr/sbin/sshd -D -e` run with `ip netns exec`, listening on
//!   `10.251.X.2:22` (and on the namespace's own `127.0.0.1:22`, so a test
//!   can see a tunnel reach that loopback without a guest OS), letting in
//!   only that user, by key only, with local TCP forwarding allowed
//!   (labrun's direct-tcpip tunnel to a guest's forwarded port on the
//!   host's 127.0.0.1);
//! - and then it connects once with `virsh -c URI version`, which starts the
//!   user's session daemon, so a started fixture is known to work.
//!
//! # The URI
//!
//! ```text
//! qemu+libssh://USER@10.251.X.2/session?keyfile=KEY&known_hosts=FILE&sshauth=privkey
//! ```
//!
//! This is what works with Debian 12's libvirt 9.0 (client and server):
//! - `keyfile` is the OpenSSH-format ed25519 private key (libssh 0.10 reads
//!   it; no `.pub` beside it is needed); `sshauth=privkey` tries nothing else
//!   (no agent, no password prompt).
//! - `known_hosts` is an OpenSSH known_hosts file; for port 22 its line is
//!   `10.251.X.2 ssh-ed25519 AAAA...` (another port would need
//!   `[10.251.X.2]:PORT`). `known_hosts_verify` is left at its default,
//!   `normal`: a key that differs from the file is refused ("SSH HOST KEY
//!   VERIFICATION FAILED ... differs from stored identity"); a host missing
//!   from the file is put to the auth callback, which virsh turns into a
//!   y/n prompt on its stdin (refused when stdin is empty). labrun's client
//!   (`virt::Connect::open`, no auth callback) refuses it at once: "libssh
//!   transport error: No user interaction callback provided: Can't verify
//!   the session host key". So the known_hosts line must be there first.
//! - The same URI works in `virsh -c` and in labrun's
//!   `labrun_vm::hypervisor::Hypervisor::open` (the test uses both).
//! - `/session` without `socket=` makes libvirt (>= 8.x) run
//!   `virt-ssh-helper qemu:///session` on the remote side (the `proxy=native`
//!   default for session URIs; no netcat needed). virt-ssh-helper (package
//!   libvirt-daemon) starts `libvirtd --timeout=120` for the user when none
//!   runs; that daemon starts the user's `virtlogd` and QEMU. All of them
//!   run as the user, inside the namespace (they descend from its sshd).
//! - The root namespace needs no libvirtd or virtlogd for this.
//!
//! # Pitfalls found
//!
//! - `XDG_RUNTIME_DIR` is not needed: sshd without PAM does not set it, and
//!   libvirt then keeps the session's sockets and runtime state under
//!   `~/.cache/libvirt` (`libvirt-sock`, `qemu/run/...`), config and domain
//!   state under `~/.config/libvirt`. (A *set* XDG_RUNTIME_DIR that does not
//!   exist would break it.) Keep the home path short: the socket path must
//!   fit in 108 bytes.
//! - The session daemon's first start probes QEMU's capabilities (cached in
//!   `~/.cache/libvirt/qemu/capabilities`): a fresh user's first connection
//!   takes seconds (measured here: about 4 s under TCG-only; about 9 s once
//!   the user could open /dev/kvm, as both accelerators are probed). See
//!   [`RemoteHypervisor::daemon_start_time`].
//! - QEMU runs as the user: it reads disks, kernels and seeds with the
//!   user's rights. Files labrun uploads over SSH as that user (e.g. into the
//!   home) are fine; files elsewhere must be readable by the user. /dev/kvm
//!   must be accessible to the user (group `kvm`, mode 0660 on the node).
//! - A domain's `<qemu:commandline>` `-device virtio-net-pci` needs an
//!   explicit `bus=pcie.0,addr=...` on q35, or QEMU refuses it (slot 1 is
//!   where libvirt puts its own root ports), as labrun's own XML does.
//! - The daemon outlives the SSH connection (until 120 s idle with no
//!   running domain); teardown therefore kills every process of the user and
//!   of the namespace, by pid.
//! - Killed processes here are reaped by init only after a while: their
//!   zombies (uid still the user's) may linger for a moment; teardown waits
//!   up to 5 s for them and counts only live processes.
//!
//! Teardown ([`RemoteHypervisor::stop`], or Drop): destroys and undefines
//! every domain of the session through the URI, kills every process of the
//! user and of the namespace (session libvirtd, virtlogd, QEMU, sshd),
//! deletes the namespace (and with it the veth pair), the user, its group,
//! its home and root's directory. Leftovers of an earlier run that was killed
//! (its pid is dead) are removed by the next `start`.
//!
//! Needs root, `ip`, `useradd`, `setpriv`, sshd, virsh, virt-ssh-helper,
//! libvirtd and QEMU: `scripts/host-setup.sh` installs them. Without them
//! `start` fails saying what is missing; it never skips.

// Each test that includes this file uses part of it.
#![allow(dead_code)]

#[path = "remote_hypervisor/host.rs"]
mod host;

pub use host::Process;
use host::{Names, run, run_ok};

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

const SSHD: &str = "/usr/sbin/sshd";
const SSH_PORT: u16 = 22;
/// The /16 the fixtures' /30s come from.
const NET_PREFIX: &str = "10.251";
const LOCK_FILE: &str = "/run/lock/labrun-rhv.lock";
const SSHD_START_TIMEOUT: Duration = Duration::from_secs(15);
/// For every virsh call: a wedged session must fail the test, not hang it.
const VIRSH_TIMEOUT_SECS: &str = "120";

/// What must be installed (path, Debian package).
const NEEDED: &[(&str, &str)] = &[
    ("/usr/bin/virsh", "libvirt-clients"),
    ("/usr/bin/virt-ssh-helper", "libvirt-daemon"),
    ("/usr/sbin/libvirtd", "libvirt-daemon"),
    ("/usr/bin/qemu-system-x86_64", "qemu-system-x86"),
    (SSHD, "openssh-server"),
    // Not used by the fixture itself: its test's tunnel check runs `ssh -W`.
    ("/usr/bin/ssh", "openssh-client"),
    ("/usr/bin/kill", "procps"),
    ("/usr/sbin/ip", "iproute2"),
    ("/usr/sbin/useradd", "passwd"),
    ("/usr/bin/setpriv", "util-linux"),
    ("/usr/bin/timeout", "coreutils"),
];

/// Fixtures started by this process so far (the serial in their names).
static SERIAL: AtomicU32 = AtomicU32::new(0);

/// A running remote hypervisor: see the module docs.
pub struct RemoteHypervisor {
    names: Names,
    /// X in 10.251.X.0/30.
    subnet: u8,
    uid: u32,
    gid: u32,
    host_key_line: String,
    client_key: PathBuf,
    known_hosts: PathBuf,
    sshd: Option<Child>,
    sshd_log: Arc<Mutex<String>>,
    daemon_start: Duration,
    stopped: bool,
}

impl RemoteHypervisor {
    /// Builds and starts everything; returns once the URI works (a
    /// `virsh version` through it succeeded). On failure, whatever was made
    /// is removed again.
    pub fn start() -> Result<RemoteHypervisor, String> {
        preflight()?;
        let mut rhv = RemoteHypervisor {
            names: Names {
                pid: std::process::id(),
                serial: SERIAL.fetch_add(1, Ordering::SeqCst),
            },
            subnet: 0,
            uid: 0,
            gid: 0,
            host_key_line: String::new(),
            client_key: PathBuf::new(),
            known_hosts: PathBuf::new(),
            sshd: None,
            sshd_log: Arc::new(Mutex::new(String::new())),
            daemon_start: Duration::ZERO,
            stopped: false,
        };
        // On an error `rhv` is dropped, which removes what was made.
        rhv.make_network()?;
        rhv.make_user()?;
        rhv.make_keys()?;
        rhv.start_sshd()?;
        rhv.first_connection()?;
        Ok(rhv)
    }

    /// `qemu+libssh://USER@10.251.X.2/session?keyfile=...&known_hosts=...&sshauth=privkey`
    pub fn uri(&self) -> String {
        self.uri_with_known_hosts(&self.known_hosts)
    }

    /// The URI with another known_hosts file (to see a wrong key refused).
    pub fn uri_with_known_hosts(&self, known_hosts: &Path) -> String {
        format!(
            "qemu+libssh://{user}@{addr}/session?keyfile={key}&known_hosts={kh}&sshauth=privkey",
            user = self.user(),
            addr = self.address(),
            key = self.client_key.display(),
            kh = known_hosts.display(),
        )
    }

    /// The hypervisor host's address, 10.251.X.2 (inside the namespace).
    pub fn address(&self) -> String {
        format!("{NET_PREFIX}.{}.2", self.subnet)
    }

    /// The root namespace's end of the veth, 10.251.X.1: where connections
    /// to the hypervisor come from.
    pub fn peer_address(&self) -> String {
        format!("{NET_PREFIX}.{}.1", self.subnet)
    }

    pub fn ssh_port(&self) -> u16 {
        SSH_PORT
    }

    pub fn user(&self) -> String {
        self.names.user()
    }

    pub fn uid(&self) -> u32 {
        self.uid
    }

    /// The client key (OpenSSH format, ed25519) the user's
    /// authorized_keys holds; owned by root, 0600.
    pub fn client_key(&self) -> &Path {
        &self.client_key
    }

    /// The sshd's host key, as an OpenSSH public line (`ssh-ed25519 AAAA... comment`).
    pub fn host_key_line(&self) -> &str {
        &self.host_key_line
    }

    /// The known_hosts file the URI names (pins [`Self::host_key_line`]).
    pub fn known_hosts(&self) -> &Path {
        &self.known_hosts
    }

    /// The user's home on the hypervisor host (where uploads can go).
    pub fn home(&self) -> PathBuf {
        self.names.home()
    }

    /// The network namespace's name (`ip netns`).
    pub fn namespace(&self) -> String {
        self.names.namespace()
    }

    /// The hypervisor host's SSH, as labrun's SSH client takes it.
    pub fn ssh_target(&self) -> labrun_ssh::Target {
        labrun_ssh::Target {
            host: self.address(),
            port: SSH_PORT,
            user: self.user(),
            client_key: self.client_key.clone(),
            host_key: self.host_key_line.clone(),
            via: None,
        }
    }

    /// How long the first connection took: sshd, virt-ssh-helper, the
    /// session libvirtd's start and its QEMU capabilities probe.
    pub fn daemon_start_time(&self) -> Duration {
        self.daemon_start
    }

    /// What sshd logged so far (for assertion messages).
    pub fn sshd_log(&self) -> String {
        self.sshd_log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Runs `script` with `/bin/sh -c` as the user, inside the namespace,
    /// with the user's groups and a login-like environment (HOME, USER,
    /// PATH), not through SSH: for assertions that must not depend on the
    /// path under test.
    pub fn run_as_user(&self, script: &str) -> Result<Output, String> {
        let ns = self.namespace();
        let (uid, gid) = (self.uid.to_string(), self.gid.to_string());
        run(
            "ip",
            &[
                "netns",
                "exec",
                &ns,
                "setpriv",
                "--reuid",
                &uid,
                "--regid",
                &gid,
                "--init-groups",
                "--reset-env",
                "--",
                "/bin/sh",
                "-c",
                script,
            ],
        )
    }

    /// `virsh -c URI ARGS...` from the root namespace (through the veth and
    /// the fixture's sshd), stopped after 120 s.
    pub fn virsh(&self, args: &[&str]) -> Result<Output, String> {
        self.virsh_with_uri(&self.uri(), args)
    }

    /// `virsh -c URI ARGS...` with any URI, stopped after 120 s; stdin is
    /// empty (a host-key prompt is answered with end-of-file).
    pub fn virsh_with_uri(&self, uri: &str, args: &[&str]) -> Result<Output, String> {
        let mut all = vec![VIRSH_TIMEOUT_SECS, "virsh", "-c", uri];
        all.extend_from_slice(args);
        run("timeout", &all)
    }

    /// The user's live processes (zombies left out).
    pub fn processes(&self) -> Vec<Process> {
        processes_of(self.uid)
    }

    /// Cuts every SSH connection to the host at once, as a failing network
    /// or host would: each connection's sshd processes are killed, so the
    /// clients' sockets close. The listener stays, so the host answers new
    /// connections afterwards. Returns how many processes it killed.
    pub fn cut_connections(&self) -> usize {
        let listener = self.sshd.as_ref().map(Child::id);
        let pids: Vec<String> = self
            .fixture_processes_in_namespace()
            .into_iter()
            .filter(|p| Some(p.pid) != listener && p.cmdline.starts_with("sshd"))
            .map(|p| p.pid.to_string())
            .collect();
        if !pids.is_empty() {
            let mut args = vec!["-KILL", "--"];
            args.extend(pids.iter().map(String::as_str));
            let _ = run("kill", &args);
        }
        pids.len()
    }

    fn fixture_processes_in_namespace(&self) -> Vec<Process> {
        host::processes()
            .into_iter()
            .filter(|p| !p.zombie && self.in_namespace(p))
            .collect()
    }

    /// Whether a process lives in the fixture's network namespace.
    pub fn in_namespace(&self, p: &Process) -> bool {
        host::namespace_id(&self.namespace()).is_some_and(|id| p.net_ns == id)
    }

    /// Tears everything down (see the module docs), then checks that nothing
    /// is left: no live process of the user, no namespace, veth, user, group,
    /// home or directory. Errors name what is left.
    pub fn stop(mut self) -> Result<(), String> {
        let mut failed = self.teardown();
        failed.extend(self.left_over());
        if failed.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "remote hypervisor {} not fully removed:\n  {}",
                self.namespace(),
                failed.join("\n  ")
            ))
        }
    }

    /// What of this fixture still exists.
    fn left_over(&self) -> Vec<String> {
        let mut left = Vec::new();
        let live: Vec<String> = processes_left_by(&self.user(), self.uid)
            .into_iter()
            .map(|p| format!("{} {}", p.pid, p.cmdline))
            .collect();
        if self.uid != 0 && !live.is_empty() {
            left.push(format!(
                "processes of uid {}: {}",
                self.uid,
                live.join("; ")
            ));
        }
        if host::namespaces().contains(&self.namespace()) {
            left.push(format!("namespace {}", self.namespace()));
        }
        if host::link_exists(&self.names.veth_host()) {
            left.push(format!("link {}", self.names.veth_host()));
        }
        if host::user_ids(&self.user()).is_some() {
            left.push(format!("user {}", self.user()));
        }
        if run("getent", &["group", &self.user()]).is_ok_and(|o| o.status.success()) {
            left.push(format!("group {}", self.user()));
        }
        for dir in [self.names.home(), self.names.dir()] {
            if dir.exists() {
                left.push(format!("directory {}", dir.display()));
            }
        }
        left
    }

    /// Removes everything; what failed. Runs once (stop, then Drop).
    fn teardown(&mut self) -> Vec<String> {
        if self.stopped {
            return Vec::new();
        }
        self.stopped = true;
        self.destroy_domains();
        // sshd is our child: reaped here, or its zombie would sit in the
        // namespace until remove_fixture gave up waiting for it.
        if let Some(mut child) = self.sshd.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        host::remove_fixture(&self.names)
    }

    /// Destroys and undefines the session's domains through the URI, the
    /// way a client would, while sshd and the daemon still run. Only when a
    /// session daemon runs (else virsh would start one just to find
    /// nothing). The kill that follows ends any QEMU this missed; failures
    /// are only printed.
    fn destroy_domains(&self) {
        let daemon_runs = self.uid != 0
            && self
                .processes()
                .iter()
                .any(|p| p.cmdline.starts_with("/usr/sbin/libvirtd"));
        if self.sshd.is_none() || !daemon_runs {
            return;
        }
        let names = match self.virsh(&["list", "--all", "--name"]) {
            Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
            Ok(out) => {
                eprintln!(
                    "remote hypervisor: cannot list its domains: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
                return;
            }
            Err(e) => {
                eprintln!("remote hypervisor: cannot list its domains: {e}");
                return;
            }
        };
        // One connection for all (each costs about a second): virsh runs
        // `;`-separated commands in turn. A shut-off domain refuses destroy
        // and a transient one undefine: both are fine, so the status is not.
        let commands: Vec<String> = names
            .lines()
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(|n| format!("destroy '{n}'; undefine --nvram '{n}'"))
            .collect();
        if !commands.is_empty() {
            let _ = self.virsh(&[&commands.join("; ")]);
        }
    }

    /// The namespace, the veth pair and their addresses.
    fn make_network(&mut self) -> Result<(), String> {
        let lock = std::fs::File::create(LOCK_FILE)
            .map_err(|e| format!("cannot create {LOCK_FILE}: {e}"))?;
        // Held while leftovers are removed and a subnet is chosen and taken:
        // two fixtures picking the same free /30 at once would both get it.
        lock.lock()
            .map_err(|e| format!("cannot lock {LOCK_FILE}: {e}"))?;
        // Our own names first: a killed run of an earlier process with our pid.
        let mut failed = host::remove_fixture(&self.names);
        for old in host::leftovers() {
            eprintln!(
                "remote hypervisor: removing leftovers of {}",
                old.namespace()
            );
            failed.extend(host::remove_fixture(&old));
        }
        if !failed.is_empty() {
            return Err(format!(
                "cannot remove an earlier run's leftovers: {}",
                failed.join("; ")
            ));
        }
        self.subnet = free_subnet(self.names.pid)?;
        let ns = self.namespace();
        let (h, n) = (self.names.veth_host(), self.names.veth_ns());
        let host_cidr = format!("{}/30", self.peer_address());
        let ns_cidr = format!("{}/30", self.address());
        run_ok("ip", &["netns", "add", &ns])?;
        run_ok(
            "ip",
            &[
                "link", "add", &h, "type", "veth", "peer", "name", &n, "netns", &ns,
            ],
        )?;
        // IPv6 off on both ends: no link-local addresses or routes either.
        disable_ipv6(&format!("/proc/sys/net/ipv6/conf/{h}/disable_ipv6"))?;
        run_ok(
            "ip",
            &[
                "netns",
                "exec",
                &ns,
                "sh",
                "-c",
                "f=/proc/sys/net/ipv6/conf/all/disable_ipv6; [ ! -e $f ] || echo 1 > $f",
            ],
        )?;
        run_ok("ip", &["addr", "add", &host_cidr, "dev", &h])?;
        run_ok("ip", &["link", "set", &h, "up"])?;
        run_ok("ip", &["-n", &ns, "addr", "add", &ns_cidr, "dev", &n])?;
        run_ok("ip", &["-n", &ns, "link", "set", &n, "up"])?;
        run_ok("ip", &["-n", &ns, "link", "set", "lo", "up"])?;
        drop(lock);
        Ok(())
    }

    /// The throw-away user, its home, and its group.
    fn make_user(&mut self) -> Result<(), String> {
        let user = self.user();
        let home = self.home();
        let home_arg = home.to_string_lossy().into_owned();
        let mut args = vec![
            "--system",
            "--user-group",
            "--create-home",
            "--home-dir",
            &home_arg,
            "--shell",
            "/bin/sh",
            // No password, yet not locked ('!'): sshd without PAM refuses
            // locked accounts even for key logins.
            "--password",
            "*",
        ];
        let kvm = Path::new("/dev/kvm").exists()
            && run("getent", &["group", "kvm"]).is_ok_and(|o| o.status.success());
        if kvm {
            args.extend(["--groups", "kvm"]);
        }
        args.push(&user);
        run_ok("useradd", &args)?;
        let (uid, gid) =
            host::user_ids(&user).ok_or_else(|| format!("useradd made no user {user}"))?;
        self.uid = uid;
        self.gid = gid;
        Ok(())
    }

    /// Host key, client key, authorized_keys and known_hosts.
    fn make_keys(&mut self) -> Result<(), String> {
        let dir = self.names.dir();
        std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)))
            .map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        let host_key = dir.join("ssh_host_ed25519_key");
        self.host_key_line = labrun_ssh::generate_ed25519(&host_key, "labrun-rhv-host")
            .map_err(|e| format!("host key: {e}"))?;
        self.client_key = dir.join("client_ed25519");
        let client_line = labrun_ssh::generate_ed25519(&self.client_key, "labrun-rhv-client")
            .map_err(|e| format!("client key: {e}"))?;

        // sshd's StrictModes: ~/.ssh and the file owned by the user, not
        // writable by others.
        let ssh_dir = self.home().join(".ssh");
        let authorized = ssh_dir.join("authorized_keys");
        let owned = |path: &Path, mode: u32| -> std::io::Result<()> {
            std::os::unix::fs::chown(path, Some(self.uid), Some(self.gid))?;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        };
        std::fs::create_dir_all(&ssh_dir)
            .and_then(|()| owned(&ssh_dir, 0o700))
            .and_then(|()| std::fs::write(&authorized, format!("{client_line}\n")))
            .and_then(|()| owned(&authorized, 0o600))
            .map_err(|e| format!("cannot write {}: {e}", authorized.display()))?;

        // Port 22: a plain host name; another port would be `[host]:port`.
        self.known_hosts = dir.join("known_hosts");
        std::fs::write(
            &self.known_hosts,
            format!("{} {}\n", self.address(), self.host_key_line),
        )
        .map_err(|e| format!("cannot write {}: {e}", self.known_hosts.display()))?;
        std::fs::write(dir.join("sshd_config"), self.sshd_config(&host_key))
            .map_err(|e| format!("cannot write sshd_config: {e}"))
    }

    fn sshd_config(&self, host_key: &Path) -> String {
        let dir = self.names.dir();
        format!(
            "# written by labrun's remote-hypervisor test fixture\n\
             ListenAddress {addr}:{SSH_PORT}\n\
             # the namespace's own loopback: lets a test prove a direct-tcpip\n\
             # tunnel reaches 127.0.0.1 there (where guests' forwards listen)\n\
             # without a guest OS: this sshd's banner answers\n\
             ListenAddress 127.0.0.1:{SSH_PORT}\n\
             HostKey {host_key}\n\
             PidFile {dir}/sshd.pid\n\
             AllowUsers {user}\n\
             PermitRootLogin no\n\
             UsePAM no\n\
             PubkeyAuthentication yes\n\
             PasswordAuthentication no\n\
             KbdInteractiveAuthentication no\n\
             # labrun reaches a guest's forwarded port on 127.0.0.1 with direct-tcpip\n\
             AllowTcpForwarding local\n\
             AllowStreamLocalForwarding no\n\
             AllowAgentForwarding no\n\
             X11Forwarding no\n\
             PermitTunnel no\n\
             UseDNS no\n\
             PrintMotd no\n\
             PrintLastLog no\n\
             LogLevel VERBOSE\n\
             Subsystem sftp internal-sftp\n",
            addr = self.address(),
            host_key = host_key.display(),
            dir = dir.display(),
            user = self.user(),
        )
    }

    /// sshd inside the namespace; returns once it logs that it listens.
    fn start_sshd(&mut self) -> Result<(), String> {
        // sshd running as root insists on its privilege-separation directory.
        let _ = std::fs::create_dir_all("/run/sshd");
        let config = self.names.dir().join("sshd_config");
        let mut child = Command::new("ip")
            .args(["netns", "exec", &self.namespace(), SSHD, "-D", "-e", "-f"])
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            // Not in the test's process group: a ^C to the test is not its.
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot run ip netns exec {SSHD}: {e}"))?;
        let (ready_tx, ready_rx) = mpsc::channel();
        if let Some(stderr) = child.stderr.take() {
            let log = Arc::clone(&self.sshd_log);
            let wanted = format!("Server listening on {} port {SSH_PORT}", self.address());
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if line.contains(&wanted) {
                        let _ = ready_tx.send(());
                    }
                    if let Ok(mut log) = log.lock() {
                        log.push_str(&line);
                        log.push('\n');
                    }
                }
            });
        }
        self.sshd = Some(child);
        // An sshd that cannot start exits: its log pipe closes, recv fails.
        ready_rx.recv_timeout(SSHD_START_TIMEOUT).map_err(|_| {
            format!(
                "sshd did not start listening on {}:{SSH_PORT}; its log:\n{}",
                self.address(),
                self.sshd_log()
            )
        })
    }

    /// `virsh version` through the URI: starts the session daemon, proves
    /// the chain, and measures how long a cold start takes.
    fn first_connection(&mut self) -> Result<(), String> {
        let started = Instant::now();
        let out = self.virsh(&["version"])?;
        self.daemon_start = started.elapsed();
        if out.status.success() {
            return Ok(());
        }
        Err(format!(
            "virsh -c {} version failed ({}): {}\nsshd log:\n{}",
            self.uri(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim(),
            self.sshd_log()
        ))
    }
}

impl Drop for RemoteHypervisor {
    fn drop(&mut self) {
        let failed = self.teardown();
        if !failed.is_empty() {
            eprintln!(
                "remote hypervisor {}: teardown failed:\n  {}",
                self.namespace(),
                failed.join("\n  ")
            );
        }
    }
}

/// The live processes (zombies left out) whose real or effective uid is
/// `uid`: after [`RemoteHypervisor::stop`], to see none is left.
pub fn processes_of(uid: u32) -> Vec<Process> {
    host::processes()
        .into_iter()
        .filter(|p| !p.zombie && (p.uids.0 == uid || p.uids.1 == uid))
        .collect()
}

/// The live processes a deleted `user` whose uid was `uid` left behind.
/// None when the uid already belongs to another user: useradd hands a freed
/// system uid out again, e.g. to a fixture that starts meanwhile.
pub fn processes_left_by(user: &str, uid: u32) -> Vec<Process> {
    let owner = run("getent", &["passwd", &uid.to_string()])
        .ok()
        .filter(|o| o.status.success())
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split(':')
                .next()
                .unwrap_or("")
                .to_string()
        });
    match owner {
        Some(name) if name != user => Vec::new(),
        _ => processes_of(uid),
    }
}

/// Root, and the programs the fixture runs.
fn preflight() -> Result<(), String> {
    let uid = host::current_uid()?;
    if uid != 0 {
        return Err(format!(
            "the remote-hypervisor fixture needs root (it makes a network namespace and a \
             user); this test runs as uid {uid}: run it as root, as CI does"
        ));
    }
    let missing: Vec<String> = NEEDED
        .iter()
        .filter(|(path, _)| !Path::new(path).exists())
        .map(|(path, package)| format!("{path} (package {package})"))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the remote-hypervisor fixture needs {}: run scripts/host-setup.sh as root",
            missing.join(", ")
        ))
    }
}

/// A 10.251.X.0/30 no address or route of the root namespace uses, from
/// `pid % 256` on. Called under the lock.
fn free_subnet(pid: u32) -> Result<u8, String> {
    let addrs = run_ok("ip", &["-o", "-4", "addr", "show"])?;
    let routes = run_ok("ip", &["-4", "route", "show", "table", "all"])?;
    let used = format!(
        "{}\n{}",
        String::from_utf8_lossy(&addrs.stdout),
        String::from_utf8_lossy(&routes.stdout)
    );
    // Word by word: "110.251.1.5" does not use 10.251.1.0/30.
    let taken = |x: u8| {
        let prefix = format!("{NET_PREFIX}.{x}.");
        used.split_whitespace().any(|w| w.starts_with(&prefix))
    };
    (0..256u32)
        .map(|i| ((pid + i) % 256) as u8)
        .find(|&x| !taken(x))
        .ok_or_else(|| format!("no free {NET_PREFIX}.X.0/30 left: remove stale veths"))
}

fn disable_ipv6(knob: &str) -> Result<(), String> {
    if !Path::new(knob).exists() {
        return Ok(()); // no IPv6 in this kernel
    }
    std::fs::write(knob, "1").map_err(|e| format!("cannot write {knob}: {e}"))
}
