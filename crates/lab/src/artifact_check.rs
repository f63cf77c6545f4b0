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
    // A dataset's archive is used whole unless a member is taken out.
    let problems = if usage == ArtifactUse::Dataset {
        spec.whole_archive_problems()
    } else {
        spec.problems()
    };
    let mut out: Vec<Problem> = problems
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

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> ArtifactSpec {
        serde_saphyr::from_str(yaml).expect("an artifact block")
    }

    #[test]
    fn a_whole_archive_is_a_dataset_not_a_tool_binary() {
        let sha = "a".repeat(64);
        for file in ["/data/tree.tar.gz", "/data/pkg.deb"] {
            let whole = spec(&format!("{{file: {file}, sha256: {sha}}}"));
            assert_eq!(
                validate_artifact(&whole, "dataset.artifact", ArtifactUse::Dataset),
                [],
                "{file}"
            );
            let problems = validate_artifact(&whole, "tools[0].artifact", ArtifactUse::ToolBinary);
            assert!(
                problems
                    .iter()
                    .any(|p| p.to_string().contains("does not fit")),
                "{file}: {problems:?}"
            );
        }
    }
}
