//! Everything that can go wrong with the VM, each with what to do about it.

use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum VmError {
    #[error("invalid VM setting `{field}`: {reason}")]
    Config { field: &'static str, reason: String },

    #[error("`{program}` is not installed: install it with `apt-get install {package}`")]
    MissingProgram {
        program: &'static str,
        package: &'static str,
    },
    #[error(
        "cannot reach libvirt at {uri}: {reason} (start it as root: `libvirtd -d`, then retry)"
    )]
    Libvirtd { uri: String, reason: String },
    #[error(
        "no libvirt daemon here lets you in: the system daemon's socket {socket} said `{system}`; your own session daemon (qemu:///session) said `{session}`; {fix}"
    )]
    NoLibvirtAccess {
        socket: PathBuf,
        system: String,
        session: String,
        fix: &'static str,
    },
    /// [`VmError::NoLibvirtAccess`] as first decided in this process.
    #[error("{0}")]
    NoAccess(String),
    #[error(
        "cannot reach the remote libvirt at {uri}: {reason} (check the URI's user, `keyfile` and `known_hosts` (a line `HOST ssh-ed25519 AAAA...` for that host), and that libvirt is installed there)"
    )]
    RemoteLibvirtd { uri: String, reason: String },
    #[error(
        "virtlogd is not running (nothing answers on {socket}: {reason}), so libvirt cannot start a domain: start it as root with `virtlogd -d`"
    )]
    Virtlogd { socket: PathBuf, reason: String },
    #[error(
        "only {free_mib} MiB free under {path}, {need_mib} MiB needed for {what}: free some space or pass another --cache/--state folder"
    )]
    DiskSpace {
        path: PathBuf,
        free_mib: u64,
        need_mib: u64,
        what: &'static str,
    },
    #[error(
        "{path} cannot be entered by the system daemon's QEMU user libvirt-qemu ({ancestor} has mode {mode:o}): put labrun's cache and state where it can read them, e.g. `--cache /var/cache/labrun --state /var/lib/labrun` as root, or folders of yours outside a private home (`--cache`/`--state`, LABRUN_CACHE/LABRUN_STATE); as an ordinary user, `uri: qemu:///session` runs QEMU as you instead"
    )]
    NotTraversable {
        path: PathBuf,
        ancestor: PathBuf,
        mode: u32,
    },
    #[error("{what} {path} cannot be used: {why}")]
    NotWritable {
        what: &'static str,
        path: PathBuf,
        why: String,
    },
    #[error(
        "the lab asks for `accel: kvm`, but KVM cannot run a stock guest kernel here: {reason}; use `accel: auto` or `accel: tcg`"
    )]
    KvmUnusable { reason: String },

    #[error(
        "the base image {cache}/images/... is not built yet, and building it from the recipe needs root (mmdebstrap installs the packages as root; the recipe gives its files to root): build it once as root into your cache, `sudo labrun image build --cache {cache} && sudo chown -R $USER {cache}`, or give the lab a pinned cloud image (`vm.image.cloud`), which needs no build"
    )]
    ImageBuildNeedsRoot { cache: PathBuf },
    #[error("cannot read the host's apt sources: {0}")]
    AptSources(String),
    #[error(
        "building the base image failed ({reason}); last output:\n{tail}\nfix the cause and rerun `labrun image build --force`"
    )]
    ImageBuild { reason: String, tail: String },
    #[error("`{command}` failed: {reason}")]
    Command { command: String, reason: String },
    #[error("the cloud image {path} cannot be used: {reason}")]
    CloudImage { path: PathBuf, reason: String },

    #[error(
        "lab `{lab}` is locked by another labrun ({holder}); wait for it to finish or stop it first"
    )]
    Locked { lab: String, holder: String },
    #[error(
        "a domain named {name} already exists and belongs to {owner}, not to this lab: run `labrun down` in that lab first (or `labrun down --all`)"
    )]
    NameTaken { name: String, owner: String },
    #[error("state file {path} is unreadable: {reason}; `labrun down` removes it")]
    State { path: PathBuf, reason: String },
    #[error("no free port on 127.0.0.1 for SSH forwarding after {attempts} attempts: {reason}")]
    NoPort { attempts: u32, reason: String },
    #[error("libvirt: {0}")]
    Libvirt(String),
    #[error(
        "the guest did not answer SSH within {timeout:?} (raise the lab's `vm.ssh_timeout` if the host is busy); last console lines:\n{console}"
    )]
    SshTimeout { timeout: Duration, console: String },
    #[error(
        "the guest's kernel crashed {after:.1?} into its boot: {line}\nlast console lines:\n{console}"
    )]
    GuestCrashed {
        after: Duration,
        line: String,
        console: String,
    },
    #[error(
        "the guest's kernel crashed while booting, twice (labrun booted it again after the first crash: {first}); the second boot: {second}\nwhat to do: run `labrun up` again; if it keeps crashing, the image's kernel does not boot on this host's {accel} (`labrun doctor` checks the host; a lab's `vm.accel` and `vm.vcpus` change how it boots)"
    )]
    GuestCrashedTwice {
        first: String,
        second: Box<VmError>,
        accel: &'static str,
    },
    #[error(transparent)]
    Ssh(#[from] labrun_ssh::SshError),
    #[error(
        "tool {name}: the guest computed SHA-256 {guest}, the host expected {expected}: the upload was damaged, run `labrun down` and `labrun up` again"
    )]
    ToolDigest {
        name: String,
        expected: String,
        guest: String,
    },
    #[error("tool {name}: `{command}` failed in the guest with exit {code:?}: {stderr}")]
    ToolInstall {
        name: String,
        command: String,
        code: Option<u32>,
        stderr: String,
    },
    #[error(
        "cannot use hypervisor host `{host}` ({login}): {reason}; check its entry in the lab's `hosts:` (address, user, key, pinned host key) and that its sshd runs"
    )]
    RemoteHost {
        host: String,
        login: String,
        reason: String,
    },
    #[error("on hypervisor host `{host}`, {what} failed: {reason}")]
    RemoteCommand {
        host: String,
        what: String,
        reason: String,
    },
    #[error("interrupted; everything `up` had made was removed")]
    Cancelled,
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl VmError {
    /// Wraps an I/O error with the path it concerns, so the user sees which file.
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> VmError {
        let path = path.into();
        move |source| VmError::Io { path, source }
    }
}

impl From<virt::error::Error> for VmError {
    fn from(e: virt::error::Error) -> Self {
        VmError::Libvirt(e.message().to_string())
    }
}
