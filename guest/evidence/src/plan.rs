//! The plan: what the agent must run. Written by the host from a lab file,
//! read by the agent. Unknown fields are refused: a typo in a plan must not
//! silently change an experiment.

use crate::command::CommandTemplate;
use crate::dataset_profile::DatasetProfile;
use crate::protocol::ProtocolStep;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    pub schema_version: u32,
    /// Names the run in every record, e.g. `default-20261129T1851Z-3fa2c1`.
    pub run_id: String,
    /// Each cycle starts from scratch: fresh repository, pristine source.
    pub cycles: u32,
    /// The number of the first cycle (1). A later one continues a run whose
    /// evidence already holds the cycles before it (`bench
    /// --until-conclusive` adding pairs): the agent appends to it.
    #[serde(default = "first", skip_serializing_if = "is_first")]
    pub first_cycle: u32,
    pub dataset: DatasetPlan,
    pub tools: Vec<ToolPlan>,
    /// The steps of every tool cycle, in order. Plans labrun writes always
    /// hold them; when absent (or empty), the dataset's default
    /// ([`crate::protocol::default_for`]), filled in as the agent reads it.
    #[serde(default)]
    pub protocol: Vec<ProtocolStep>,
    /// `sync` and drop the page cache before every step that asks for it
    /// (off: none does, whatever the protocol says).
    #[serde(default = "yes")]
    pub drop_caches: bool,
    /// Rotate the tool order from cycle to cycle, so no tool always runs first.
    #[serde(default = "yes")]
    pub rotate_tools: bool,
    /// A timed step running longer than this is stopped and recorded as failed.
    #[serde(default)]
    pub step_timeout_secs: Option<u64>,
    /// `fstrim` the work file system after every cache drop. Plans labrun
    /// writes ask for it; absent (a hand-made plan, the agent's own tests
    /// on a host's disk, where a trim can take many seconds), off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trim: bool,
    /// Seconds to wait before every timed step, after the cache drop and
    /// the trim (the lab's `cooldown`); absent, none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown_secs: Option<u64>,
    /// Where the repositories live: absent, on the machine's own disk; else
    /// on a storage server behind a network of the agent's
    /// ([`crate::storage`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<crate::storage::StoragePlan>,
    /// Set when this plan is one round of a run interleaved, cycle by cycle,
    /// with other runs on the same machine (a lab's variants): absent, the
    /// plan is the whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<Round>,
}

/// One round of an interleaved run: the plan's `first_cycle` and `cycles`
/// are this round's; the run has more, run by later plans.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Round {
    /// The cycles of the whole run.
    pub run_cycles: u32,
    /// Names the interleaved runs as one (the host's run id): a dataset one
    /// round generated waits under this name in the agent's work folder for
    /// a later round of the group that asks for the same dataset, so each is
    /// generated once per group, not once per round.
    pub group: String,
    /// Keep this round's dataset for a later round (the last round to use
    /// it says no, and it is removed with the round's work tree).
    pub keep_dataset: bool,
}

fn yes() -> bool {
    true
}

fn first() -> u32 {
    1
}

fn is_first(n: &u32) -> bool {
    *n == 1
}

impl Plan {
    /// The cycles this plan runs, by number.
    pub fn cycle_numbers(&self) -> std::ops::RangeInclusive<u32> {
        self.first_cycle
            ..=self
                .first_cycle
                .saturating_add(self.cycles)
                .saturating_sub(1)
    }

    /// Whether it continues a run already in its evidence folder.
    pub fn continues(&self) -> bool {
        self.first_cycle > 1
    }

    /// The plan of one round of this run: its cycle `cycle` alone, the run
    /// being interleaved with others of `group`; `keep_dataset` when a later
    /// round of the group uses the same dataset.
    pub fn round_of(&self, cycle: u32, group: &str, keep_dataset: bool) -> Plan {
        Plan {
            first_cycle: cycle,
            cycles: 1,
            round: Some(Round {
                run_cycles: self.run_cycles(),
                group: group.to_string(),
                keep_dataset,
            }),
            ..self.clone()
        }
    }

    /// The cycles of the whole run this plan is part of: its own, or the
    /// run's when it is one round of several.
    pub fn run_cycles(&self) -> u32 {
        self.round.as_ref().map_or(
            self.first_cycle
                .saturating_sub(1)
                .saturating_add(self.cycles),
            |r| r.run_cycles,
        )
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "kebab-case")]
pub enum DatasetPlan {
    /// The seeded synthetic dataset of SPEC section 3.
    Synthetic {
        seed: u64,
        /// Shrinks every size and count proportionally (1.0 = 6.10 GB).
        scale: f64,
        /// Seed of the 5% change; defaults to `seed + 1` when absent.
        #[serde(default)]
        change_seed: Option<u64>,
        /// The dataset's shape; left out of a plan (and read as) `published`.
        #[serde(default, skip_serializing_if = "DatasetProfile::is_published")]
        profile: DatasetProfile,
    },
    /// The second study (SPEC 6): one code base at successive commits, a
    /// backup after each move of the work tree, then a restore of every
    /// snapshot. See [`HistorySource`].
    GitHistory { source: HistorySource },
    /// A tree that is not generated: a user's folder or an unpacked archive
    /// (issue 31), with the published cycle's change made for any tree.
    Tree(TreePlan),
}

impl DatasetPlan {
    /// Whether the plan runs the history study (a backup per commit or
    /// tree, then every snapshot restored).
    pub fn is_history(&self) -> bool {
        matches!(self, DatasetPlan::GitHistory { .. })
    }
}

/// A real tree as the published cycle's dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreePlan {
    pub source: TreeSource,
    /// What each change step does to it (a seeded share of its bytes).
    #[serde(default)]
    pub change: crate::ChangeSpec,
    /// A seeded subset of the tree's files, for a quick look at a big tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<Sample>,
    /// Whether the tree's paths may appear in the evidence. False: the
    /// manifests, logs and summaries keep no path of it ([`TreePlan::private`]).
    #[serde(default)]
    pub public: bool,
}

impl TreePlan {
    /// The tree's paths stay out of the evidence.
    pub fn private(&self) -> bool {
        !self.public
    }
}

/// `sample: {fraction: 0.1, seed: 1}`: the same subset every time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sample {
    pub fraction: f64,
    #[serde(default = "Sample::default_seed")]
    pub seed: u64,
}

impl Sample {
    pub fn default_seed() -> u64 {
        1
    }
}

/// Where a real tree is on the machine under test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub enum TreeSource {
    /// A folder, read in place and never written: a user's folder on a
    /// `target:` machine, or the copy the host pushed into the guest.
    Folder {
        /// Absolute path on the machine under test.
        path: String,
        /// SHA-256 of the tree's manifest as the host scanned it, when the
        /// host pushed it: the agent refuses a tree that differs (it changed
        /// while it was pushed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        manifest_sha256: Option<String>,
    },
    /// An archive file on the machine under test, unpacked by the agent.
    Archive {
        /// Absolute path on the machine under test.
        path: String,
        format: crate::ArchiveFormat,
        /// The archive's SHA-256, checked by the host before it was copied.
        sha256: String,
        /// Unpacking stops past this many bytes (an archive bomb).
        max_bytes: u64,
    },
}

impl TreeSource {
    /// How the tree is named in messages and evidence: never a path of a
    /// private tree's content, only where it was read from.
    pub fn path(&self) -> &str {
        match self {
            TreeSource::Folder { path, .. } | TreeSource::Archive { path, .. } => path,
        }
    }
}

/// Where the commits of a git-history dataset come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub enum HistorySource {
    /// A synthetic history the agent computes from a seed and writes into
    /// the work tree itself, exactly as `git checkout` of each commit would
    /// (no git needed on the machine under test).
    Generate(HistoryGenerator),
    /// A git repository or bundle already on the machine under test, read
    /// with its `git`; the work tree is moved with `git checkout`.
    Repository {
        /// Absolute path of the repository or `.bundle` file.
        path: String,
        commits: CommitSelection,
    },
    /// A series of real trees, oldest first, each the next commit: the
    /// study over real versions of a code base without git.
    Trees {
        trees: Vec<TreeSource>,
        /// As [`TreePlan::public`].
        #[serde(default)]
        public: bool,
        /// The same seeded subset of every tree: the sample is chosen by
        /// path, so the files two trees share are in or out of both.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sample: Option<Sample>,
    },
}

/// The parameters of a synthetic history: same values, same commits, same
/// bytes, on any machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryGenerator {
    pub seed: u64,
    /// Commits (= snapshots), the first one included.
    pub commits: u32,
    /// Files in the first commit.
    pub files: u32,
    /// Mean size of a source file, in bytes.
    #[serde(default = "HistoryGenerator::default_mean_file_bytes")]
    pub mean_file_bytes: u32,
    /// Share of the files touched by each commit (edited, renamed, removed,
    /// plus as many added), e.g. 0.02.
    #[serde(default = "HistoryGenerator::default_churn")]
    pub churn: f64,
}

impl HistoryGenerator {
    pub fn default_mean_file_bytes() -> u32 {
        12_000
    }
    pub fn default_churn() -> f64 {
        0.02
    }
}

/// Which commits of a repository become snapshots, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub enum CommitSelection {
    /// These commits (anything `git rev-parse` takes), in this order.
    List(Vec<String>),
    /// `from`, then every `n`th first-parent commit after it up to `to`
    /// (`to` itself always included).
    Every { n: u32, from: String, to: String },
}

/// One tool under test, as the agent needs it: no download details, those
/// stayed on the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolPlan {
    pub name: String,
    pub version: String,
    /// Absolute path of the installed binary (checked to exist before a run).
    pub binary: String,
    /// Expected SHA-256 of `binary`, checked by the agent before the first cycle.
    #[serde(default)]
    pub binary_sha256: Option<String>,
    /// Environment for every command of this tool (passwords live here and
    /// only here: never on a command line, never in evidence).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Names of `env` entries whose values must never be written anywhere.
    #[serde(default)]
    pub secret_env: Vec<String>,
    pub commands: ToolCommands,
    /// Where a backup prints the id of the snapshot it made: read from its
    /// output ([`crate::snapshot_id`]) instead of a `snapshot_id` command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_id_pattern: Option<String>,
    /// What `{repo}` stands for when the repository is on a storage server:
    /// the tool's own way of naming it, from the storage placeholders
    /// (`sftp:{repo_user}@{repo_host}:{repo_path}`). Absent: the folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
}

impl ToolPlan {
    /// The tool with secret values replaced, for writing into evidence.
    pub fn redacted(&self) -> ToolPlan {
        let mut t = self.clone();
        for (k, v) in t.env.iter_mut() {
            if self.secret_env.iter().any(|s| s == k) {
                *v = "<redacted>".to_string();
            }
        }
        t
    }
}

/// A tool's commands by key: the protocol's steps run them by key (`init`,
/// `backup`, `restore`, `check`, ...); a few keys have a role besides
/// ([`crate::command::roles`]).
pub type ToolCommands = BTreeMap<String, CommandTemplate>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_refuses_unknown_fields() {
        let json = r#"{"schema_version":1,"run_id":"r","cycles":1,
            "dataset":{"kind":"synthetic","seed":1,"scale":0.001},
            "tools":[],"cycels":3}"#;
        let err = serde_json::from_str::<Plan>(json).unwrap_err();
        assert!(err.to_string().contains("cycels"), "{err}");
    }

    #[test]
    fn redaction_hides_only_secrets() {
        let mut env = BTreeMap::new();
        env.insert("RESTIC_PASSWORD".into(), "hunter2".into());
        env.insert("TMPDIR".into(), "/tmp".into());
        let t = ToolPlan {
            name: "restic".into(),
            version: "0.14".into(),
            binary: "/usr/bin/restic".into(),
            binary_sha256: None,
            env,
            secret_env: vec!["RESTIC_PASSWORD".into()],
            commands: ToolCommands::from([(
                "init".to_string(),
                CommandTemplate {
                    argv: vec!["{bin}".into()],
                    cwd: None,
                },
            )]),
            snapshot_id_pattern: None,
            repo: None,
        };
        let r = t.redacted();
        assert_eq!(r.env["RESTIC_PASSWORD"], "<redacted>");
        assert_eq!(r.env["TMPDIR"], "/tmp");
    }
}
