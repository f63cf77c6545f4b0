//! An `artifact:` block's problems at their lab-file paths. The block's own
//! rules are labrun-artifact's ([`ArtifactSpec::problems`], each written
//! once there); this file adds the block's path and the rules of where the
//! lab uses it. Pure: nothing is fetched or read.

use crate::error::Problem;
use labrun_artifact::ArtifactSpec;

/// What the artifact is for: a tool's binary, or a VM's disk image (which
/// is used as it is, or decompressed, never installed from a `.deb`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArtifactUse {
    ToolBinary,
    DiskImage,
    /// The archive a dataset unpacks ([`crate::real_tree`]).
    Dataset,
}

/// Every problem of `spec`, with paths under `at` (e.g. `tools[1].artifact`).
pub fn validate_artifact(spec: &ArtifactSpec, at: &str, usage: ArtifactUse) -> Vec<Problem> {
    let path = |field: &str| {
        if field.is_empty() {
            at.to_string()
        } else {
            format!("{at}.{field}")
        }
    };
    let mut out: Vec<Problem> = spec
        .problems()
        .into_iter()
        .map(|p| Problem::new(path(&p.field), p.message))
        .collect();
    if usage == ArtifactUse::DiskImage {
        if spec.source.is_build() {
            out.push(Problem::new(
                path(spec.source.key()),
                "a disk image cannot be built from source: give a `url` or `file`",
            ));
        }
        if spec.extract.is_deb() {
            out.push(Problem::new(
                path("extract"),
                "a disk image cannot come out of a .deb: use `raw`, `gz`, `bz2` or `tar: MEMBER`",
            ));
        }
    }
    if usage == ArtifactUse::Dataset {
        if spec.source.is_build() {
            out.push(Problem::new(
                path(spec.source.key()),
                "a dataset archive is fetched, not built: give a `url`, `file` or `apt` package",
            ));
        }
        if matches!(spec.extract, labrun_artifact::Extract::DebInstall(_)) {
            out.push(Problem::new(
                path("extract"),
                "a dataset archive is unpacked, not installed: leave `extract` out to unpack the package's data, or take the archive inside it with `deb-member: PATH`",
            ));
        }
    }
    out
}
