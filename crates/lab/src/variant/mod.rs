//! `variants:` and `matrix:`: one lab, run under several settings. Each
//! variant overrides part of the lab (the VM's shape, the dataset, a tool's
//! flags or environment) and becomes a complete lab of its own
//! ([`Lab::variants`]), validated like any other: the runner runs labs and
//! never learns what a variant is.
//!
//! ```yaml
//! variants:                       # a list...
//!   - name: hdd
//!     vm: {disk_profile: hdd}
//!   - name: unthrottled
//! matrix:                         # ...or axes whose product is the variants
//!   memory:
//!     - {name: 512m, vm: {memory: 512MiB}}
//!     - {name: 3g}
//!   restore:
//!     - {name: default}
//!     - {name: parallel8, tools: {kopia: {args: {restore: [--parallel=8]}}}}
//! ```

mod apply;
mod expand;
mod matrix;

pub use expand::{MAX_VARIANT_NAME, MAX_VARIANTS, Variant, boots};
pub use matrix::{Axis, Matrix};

use crate::units::ByteSize;
use labrun_vocab::DiskCache;
use serde::Deserialize;
use std::collections::BTreeMap;

/// Extra arguments appended to a tool's commands, by command key
/// (`restore: [--parallel=8]`): a tuned setting, on a tool or in a variant.
pub type ExtraArgs = BTreeMap<String, Vec<String>>;

/// One variant, or one value of a matrix axis.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantSpec {
    /// Unique in the lab (in a matrix: on its axis); `[a-z0-9._-]`.
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub vm: VmOverride,
    #[serde(default)]
    pub dataset: DatasetOverride,
    /// By tool name: flags and environment this variant adds.
    #[serde(default)]
    pub tools: BTreeMap<String, ToolOverride>,
    /// Where the repositories live: another server, another network. A
    /// tool with no `repository:` form for the variant's server is left out
    /// of the variant (and the variant says so).
    #[serde(default)]
    pub storage: StorageOverride,
}

/// The storage settings a variant may change.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StorageOverride {
    pub server: Option<labrun_evidence::Server>,
    pub network: Option<crate::storage::NetworkSpec>,
}

/// The VM settings a variant may change: its shape. A variant whose VM
/// differs from another's gets a boot of its own.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VmOverride {
    pub vcpus: Option<u32>,
    pub memory: Option<ByteSize>,
    pub disk_cache: Option<DiskCache>,
    pub disk_profile: Option<labrun_vocab::DiskProfile>,
}

/// The synthetic dataset's settings a variant may change.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DatasetOverride {
    pub seed: Option<u64>,
    pub scale: Option<f64>,
    pub change_seed: Option<u64>,
    /// Another shape of data (`tiny-files`, `media`, `vm-image`).
    pub profile: Option<labrun_evidence::DatasetProfile>,
}

/// What a variant adds to one tool.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ToolOverride {
    /// Appended after the tool's own `args` for the same command.
    pub args: ExtraArgs,
    /// Set in the tool's environment (a secret the tool names stays one).
    pub env: BTreeMap<String, String>,
}

impl VariantSpec {
    /// True when the variant changes nothing (the lab as written).
    pub fn is_baseline(&self) -> bool {
        self.vm == VmOverride::default()
            && self.dataset == DatasetOverride::default()
            && self.tools.is_empty()
            && self.storage == StorageOverride::default()
    }
}
