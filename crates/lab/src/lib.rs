//! Lab files: everything a run needs, as data. A lab names the machine (a
//! VM or an existing host), the dataset, the cycles and timeouts, and each
//! tool under test with its pinned artifact, environment and commands.
//! Adding a backup tool means editing a lab file, never writing Rust.
//!
//! ```no_run
//! # fn main() -> Result<(), labrun_lab::LabError> {
//! let lab = labrun_lab::Lab::load(std::path::Path::new("lab.yaml"))?;
//! println!("{}", lab.describe(None));
//! let plan = lab.to_plan(&lab.run_id("20261129T1851Z"), &Default::default())?;
//! # Ok(()) }
//! ```

mod artifact_check;
mod describe;
mod error;
mod history;
mod load;
mod locate;
pub mod noise_floor;
mod plan;
mod python_suite;
pub mod real_tree;
mod redact;
mod schema;
pub mod series;
pub mod storage;
mod suggest;
mod units;
mod validate;
mod validate_storage;
mod validate_uri;
pub mod variant;

pub use artifact_check::{ArtifactUse, validate_artifact};
pub use error::{LabError, Problem};
pub use labrun_evidence::{CommandTemplate, ProtocolStep, ToolCommands};
// The words the lab shares with the VM and the report (`labrun_vocab`).
pub use labrun_vocab::{Accel, CpuPinning, DiskCache, DiskProfile, IoTune};
pub use load::{LabSource, MAX_LAB_BYTES};
pub use plan::PlanOverrides;
pub use redact::{REDACTED, redact};
pub use schema::{
    CompareSpec, DatasetSpec, EverySpec, HostExpect, HostSpec, ImageSpec, Lab, Machine, TargetSpec,
    Timeouts, ToolSpec, VmSpec,
};
pub use units::{ByteSize, Duration};
pub use validate::{check_scale, placeholders};
pub use variant::{ExtraArgs, Variant, VariantSpec};
