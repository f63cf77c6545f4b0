//! The typed lab file. Every struct refuses unknown keys: a typo must never
//! silently change an experiment. Defaults are the protocol's (SPEC 1-4).
//! Checks that need more than a type live in `validate.rs`.

use crate::units::{ByteSize, Duration};
use labrun_artifact::ArtifactSpec;
use labrun_evidence::{ProtocolStep, ToolCommands};
use labrun_vocab::{Accel, CpuPinning, DiskCache, DiskProfile};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lab {
    /// Short name used in run ids and state folders (`[a-z0-9._-]`).
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The VM to create. The default when neither `vm` nor `target` is given.
    #[serde(default)]
    pub vm: Option<VmSpec>,
    /// An existing machine to run on instead of a VM.
    #[serde(default)]
    pub target: Option<TargetSpec>,
    /// The hypervisors the lab's VMs may run on (a pool). Absent: this
    /// host, at `vm.uri`. `--host NAME` picks one; variants are spread over
    /// them.
    #[serde(default)]
    pub hosts: Vec<HostSpec>,
    #[serde(default)]
    pub dataset: DatasetSpec,
    /// Each cycle starts from scratch (SPEC 4).
    #[serde(default = "default_cycles")]
    pub cycles: u32,
    #[serde(default)]
    pub timeouts: Timeouts,
    /// A pause before every timed step, after the cache drop and the
    /// disk's trim, so heat and the host's writeback from the step before
    /// settle (BorgBase's cool-down); absent, none.
    #[serde(default)]
    pub cooldown: Option<Duration>,
    /// The steps of each tool cycle (`labrun_evidence::protocol`). When
    /// absent (or empty), the dataset's default, filled in as the lab is
    /// read: the published cycle, or for a git history SPEC 6's study.
    #[serde(default)]
    pub protocol: Vec<ProtocolStep>,
    pub tools: Vec<ToolSpec>,
    /// Where the repositories live: the machine's own disk (the default),
    /// or a storage server behind a network of a set latency and bandwidth
    /// ([`crate::storage`]).
    #[serde(default)]
    pub storage: crate::storage::StorageSpec,
    /// The binaries of the servers labrun installs (`rest`), pinned like a
    /// tool's; installed with the tools whatever server a run uses, so that
    /// variants sharing a machine find them.
    #[serde(default)]
    pub servers: BTreeMap<labrun_evidence::Server, crate::storage::ServerSpec>,
    /// The lab under several settings, each a complete run
    /// ([`crate::variant`]).
    #[serde(default)]
    pub variants: Vec<crate::variant::VariantSpec>,
    /// Or: axes whose product is the variants.
    #[serde(default)]
    pub matrix: crate::variant::Matrix,
    /// Verdicts to reach at the end of each run: pairs of this lab's tools
    /// (a release and the next, a default and a tuned setting), run
    /// interleaved in every cycle.
    #[serde(default)]
    pub compare: Option<CompareSpec>,
    /// An A/A copy of one tool in every cycle, compared with it: the
    /// machine's measured noise floor ([`crate::noise_floor`]). Absent: none.
    #[serde(default)]
    pub noise_floor: Option<crate::noise_floor::NoiseFloorSpec>,
    /// Whether the floor's copy and pair are in `tools` and `compare` yet
    /// (not a YAML key).
    #[serde(skip)]
    pub(crate) floor_state: crate::noise_floor::FloorState,
    /// The release series the tools' `versions:` expanded into (not a
    /// YAML key; [`crate::series`]).
    #[serde(skip)]
    pub(crate) series: Vec<crate::series::Series>,
    /// The file this lab was read from (not a YAML key).
    #[serde(skip)]
    pub source: crate::load::LabSource,
}

fn default_cycles() -> u32 {
    3
}

/// The longest `cooldown`: beyond it a run of many steps takes days idle.
pub const MAX_COOLDOWN: Duration = Duration::secs(3600);

/// Where the experiment runs, once `vm`/`target` defaults are applied.
#[derive(Debug, Clone, PartialEq)]
pub enum Machine {
    Vm(VmSpec),
    Target(TargetSpec),
}

impl Lab {
    /// The machine under test: the `target` when given, else the `vm`
    /// (defaults included). A lab naming both is refused by `validate()`.
    pub fn machine(&self) -> Machine {
        match (&self.target, &self.vm) {
            (Some(t), None) => Machine::Target(t.clone()),
            (_, Some(v)) => Machine::Vm(v.clone()),
            (None, None) => Machine::Vm(VmSpec::default()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VmSpec {
    /// libvirt connection URI; a remote hypervisor works the same way.
    pub uri: String,
    pub vcpus: u32,
    pub memory: ByteSize,
    /// Size of the qcow2 overlay the guest sees.
    pub disk: ByteSize,
    pub image: ImageSpec,
    pub accel: Accel,
    /// QEMU disk cache mode. `none` (O_DIRECT on the host) keeps the host's
    /// page cache from hiding the guest's cold-cache reads.
    pub disk_cache: DiskCache,
    /// How fast the guest's disk may go: `unthrottled` (the default),
    /// `hdd`, `ssd`, or libvirt's iotune fields (`labrun_vocab::disk_profile`).
    pub disk_profile: DiskProfile,
    /// Where the vCPUs run on the host: `auto` (a core each, the emulator
    /// threads on another), a list of host CPUs (one per vCPU), or
    /// `{vcpus: [...], emulator: N}`; absent, they float
    /// (`labrun_vocab::cpu_pinning`).
    pub cpu_pinning: Option<CpuPinning>,
    /// How long `up` waits for the guest's sshd.
    pub ssh_timeout: Duration,
    /// Extra Debian packages the base image must hold, e.g. the dependencies
    /// of a tool installed from its `.deb` (`deb-install`). Part of the
    /// image's cache key.
    pub packages: Vec<String>,
}

impl Default for VmSpec {
    fn default() -> VmSpec {
        VmSpec {
            uri: "qemu:///system".into(),
            vcpus: 4,
            memory: ByteSize::gib(3),
            disk: ByteSize::gib(40),
            image: ImageSpec::Debian12,
            accel: Accel::Auto,
            disk_cache: DiskCache::NoCache,
            disk_profile: DiskProfile::Unthrottled,
            cpu_pinning: None,
            ssh_timeout: Duration::secs(300),
            packages: Vec::new(),
        }
    }
}

/// `image: debian12` (built from the host's apt sources, the default),
/// `image: {debian: sid}` (the same recipe, another suite of the host's
/// archive) or `image: {cloud: {url: ..., sha256: ...}}`.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ImageSpec {
    #[default]
    Debian12,
    /// labrun's Debian recipe for this suite (`bookworm`, `trixie`, `sid`).
    Debian(String),
    /// A pinned cloud image booted with a cloud-init NoCloud seed.
    Cloud(Box<ArtifactSpec>),
}

impl ImageSpec {
    /// The Debian suite labrun builds the image from; None for a cloud image.
    pub fn suite(&self) -> Option<&str> {
        match self {
            ImageSpec::Debian12 => Some("bookworm"),
            ImageSpec::Debian(suite) => Some(suite),
            ImageSpec::Cloud(_) => None,
        }
    }
}

/// `compare: {margin: 5%, pairs: [{baseline: borg, candidate: borg@zstd22}]}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompareSpec {
    /// The difference that matters (`5%`, the default).
    #[serde(default)]
    pub margin: Option<String>,
    pub pairs: Vec<labrun_evidence::compare::ComparePair>,
    /// The pair of `pairs` that `noise_floor:` added (not a YAML key).
    #[serde(skip)]
    pub noise_floor: Option<labrun_evidence::compare::ComparePair>,
}

impl CompareSpec {
    /// The request as the evidence keeps it; None for an invalid margin
    /// (`validate()` says why).
    pub fn to_plan(&self) -> Option<labrun_evidence::compare::ComparePlan> {
        let margin = match &self.margin {
            Some(m) => Some(labrun_evidence::compare::parse_fraction(m).ok()?),
            None => None,
        };
        Some(labrun_evidence::compare::ComparePlan {
            pairs: self.pairs.clone(),
            margin,
            noise_floor: self.noise_floor.clone(),
            series: Vec::new(),
        })
    }
}

/// An existing machine reached over SSH, its host key pinned.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSpec {
    pub host: String,
    #[serde(default = "default_ssh_port")]
    pub port: u16,
    pub user: String,
    /// Private key file for the user (relative paths are from the lab file).
    pub key: PathBuf,
    /// The server's public host key as one `known_hosts`-style line without
    /// the host name: `ssh-ed25519 AAAA...`.
    pub host_key: String,
    /// Absolute folder on the machine where labrun keeps its agent, the
    /// dataset, repositories and evidence of each run. It needs room for the
    /// dataset, every repository and a restore.
    #[serde(default = "default_target_workdir")]
    pub workdir: String,
}

/// One hypervisor of a lab's pool.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    /// The pool's name for it (`[a-z0-9._-]`): in `--host`, state folders,
    /// progress and evidence.
    pub name: String,
    /// libvirt's URI for it: `qemu:///system` here, or a remote one such as
    /// `qemu+libssh://user@host/session?keyfile=...&known_hosts=...`.
    #[serde(default = "default_host_uri")]
    pub uri: String,
    /// How labrun reaches the host itself (absent: it is this host): files
    /// go there over SSH into `workdir`, and the guest is reached through
    /// its sshd. The host key is pinned as for a target.
    #[serde(default)]
    pub ssh: Option<TargetSpec>,
    /// What the host must be: `up` refuses another machine (unless
    /// `--force-host`), so a pool's figures come from the hosts the lab was
    /// written for.
    #[serde(default)]
    pub expect: HostExpect,
}

/// The facts a host is checked against; each one given must hold.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HostExpect {
    /// Part of the CPU model (`/proc/cpuinfo`), e.g. `EPYC 7543`.
    pub cpu_model: Option<String>,
    /// Exactly this many CPUs (`nproc`).
    pub cpus: Option<u32>,
    /// At least this much memory.
    pub memory: Option<ByteSize>,
    /// The kernel release begins with this (`uname -r`), e.g. `6.1.`.
    pub kernel: Option<String>,
}

fn default_host_uri() -> String {
    "qemu:///system".into()
}

fn default_target_workdir() -> String {
    "/var/tmp/labrun".into()
}

fn default_ssh_port() -> u16 {
    22
}

/// The data the tools back up. Tagged by `kind` so the git-history dataset
/// of the second study can be added beside it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "kebab-case")]
pub enum DatasetSpec {
    /// The seeded synthetic dataset of SPEC 3.
    Synthetic {
        #[serde(default = "default_seed")]
        seed: u64,
        /// 1.0 = the published 6.10 GB; from 0.0001 to 100 (the agent's range).
        #[serde(default = "default_scale")]
        scale: f64,
        /// Seed of the 5% change; `seed + 1` when absent.
        #[serde(default)]
        change_seed: Option<u64>,
        /// The dataset's shape: published (default), tiny-files, media or
        /// vm-image.
        #[serde(default)]
        profile: labrun_evidence::DatasetProfile,
    },
    /// The second study (SPEC 6): one code base at successive commits.
    /// Either `generate:` (a seeded synthetic history the agent writes
    /// itself: runs anywhere, no git needed), or `repository:` (a git
    /// repository or bundle on the machine under test, read with its git)
    /// with `commits:` or `every:`.
    GitHistory {
        #[serde(default)]
        generate: Option<labrun_evidence::HistoryGenerator>,
        /// Absolute path, on the machine under test, of a repository or of
        /// a file made with `git bundle create FILE --all`.
        #[serde(default)]
        repository: Option<String>,
        /// The commits to back up, oldest first (anything `git rev-parse`
        /// takes: ids, tags, `v6.1~100`).
        #[serde(default)]
        commits: Option<Vec<String>>,
        /// Or: `from`, then every `commits`th first-parent commit up to `to`.
        #[serde(default)]
        every: Option<EverySpec>,
    },
    /// A folder of the user's ([`crate::real_tree`]).
    Files(crate::real_tree::FolderDataset),
    /// A pinned archive, unpacked in the guest.
    Archive(Box<crate::real_tree::ArchiveDataset>),
    /// The history study over a series of real trees.
    Trees(crate::real_tree::TreesDataset),
}

impl DatasetSpec {
    /// Whether the lab runs the history study (a backup per commit or tree).
    pub fn is_history(&self) -> bool {
        matches!(self, DatasetSpec::GitHistory { .. } | DatasetSpec::Trees(_))
    }

    /// Whether the data is the user's or an archive's, not generated.
    pub fn is_real(&self) -> bool {
        matches!(
            self,
            DatasetSpec::Files(_) | DatasetSpec::Archive(_) | DatasetSpec::Trees(_)
        )
    }
}

/// `every: {commits: 1000, from: v6.0, to: v6.1}`: every 1000th commit.
/// (Not `n:`: YAML 1.1 reads a bare `n` as the boolean false.)
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EverySpec {
    pub commits: u32,
    pub from: String,
    pub to: String,
}

fn default_seed() -> u64 {
    1
}

fn default_scale() -> f64 {
    1.0
}

impl Default for DatasetSpec {
    fn default() -> DatasetSpec {
        DatasetSpec::Synthetic {
            seed: default_seed(),
            scale: default_scale(),
            change_seed: None,
            profile: Default::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Timeouts {
    /// A timed step running longer is stopped and recorded as failed.
    pub step: Duration,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            step: Duration::secs(2 * 3600),
        }
    }
}

/// One tool under test: adding a tool means adding one of these.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    /// Unique in the lab; used in paths and records (`[a-z0-9._-]`).
    pub name: String,
    pub version: String,
    pub artifact: ArtifactSpec,
    /// Absolute path of the binary in the guest. Default:
    /// `/usr/local/bin/<name>`, or the path a `deb-install` artifact names.
    #[serde(default)]
    pub install: Option<String>,
    /// Environment of every command of this tool.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Names of `env` entries that are secrets (repository passwords): they
    /// reach the tool only through its environment, and are redacted from
    /// every log, record and printout.
    #[serde(default)]
    pub secret_env: Vec<String>,
    /// By key: the protocol's steps run them by key (`init`, `backup`,
    /// `restore`, or any a lab's own steps name); `version`, `snapshot_id`,
    /// `repo_size` and `snapshots` have a role besides
    /// (`labrun_evidence::command::roles`).
    pub commands: ToolCommands,
    /// Extra arguments appended to the named commands: a setting under test
    /// (`restore: [--parallel=8]`), so a tuned variant of a tool reuses its
    /// commands instead of restating them.
    #[serde(default)]
    pub args: crate::variant::ExtraArgs,
    /// A regular expression with one capture group: where a backup prints
    /// the id of the snapshot it made (`labrun_evidence::snapshot_id`),
    /// read from its output instead of a `snapshot_id` command.
    #[serde(default)]
    pub snapshot_id_pattern: Option<String>,
    /// How the tool names its repository on each kind of storage server
    /// (`sftp`, `rest`, `s3`): a lab whose `storage.server` is one of them uses
    /// that form ([`crate::storage::RepoForm`]).
    #[serde(default)]
    pub repository: BTreeMap<labrun_evidence::Server, crate::storage::RepoForm>,
    /// A release series: the tool at each of these versions, its artifact
    /// templated by `{version}` ([`crate::series`]).
    #[serde(default)]
    pub versions: Vec<crate::series::SeriesVersion>,
    /// The version of `versions:` every run includes and every ratio is
    /// taken against; the last (newest) by default.
    #[serde(default)]
    pub anchor: Option<String>,
}
