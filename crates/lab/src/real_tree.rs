//! The datasets that are not generated (issue 31): a folder of the user's,
//! a pinned archive, and a series of such trees. Their lab-file form, their
//! checks and their plan.
//!
//! ```yaml
//! dataset:
//!   kind: files
//!   path: /srv/photos            # on the host (relative to the lab file), or
//!                                # on the `target:` machine when the lab has one
//!   public: false                # the default: no path of the tree in the evidence
//!   sample: {fraction: 0.1}      # optional: a seeded tenth of the files
//!   change: {fraction: 0.05, seed: 2}
//! # or
//! dataset:
//!   kind: archive
//!   artifact: {apt: {package: linux-source-6.1, version: 6.1.170-1}, sha256: ...,
//!              extract: {deb-member: usr/src/linux-source-6.1.tar.xz}}
//!   unpacked_size: 1.6GB
//! # or
//! dataset:
//!   kind: trees                  # the history study over real trees
//!   trees:
//!     - files: /srv/v1
//!     - archive: {artifact: {...}, unpacked_size: 2GB}
//! ```
//!
//! The host makes each tree reachable in the guest (it pushes a folder, it
//! fetches, checks and copies an archive) and fills in where it put it: the
//! plan made here names the host's side only.

use crate::error::Problem;
use crate::units::ByteSize;
use labrun_artifact::ArtifactSpec;
use labrun_evidence::{ArchiveFormat, ChangeSpec, Sample, TreePlan, TreeSource};
use serde::Deserialize;

/// `kind: files`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FolderDataset {
    pub path: String,
    /// The tree's paths may appear in the evidence. A user's folder is
    /// private unless its owner says otherwise.
    #[serde(default)]
    pub public: bool,
    #[serde(default)]
    pub sample: Option<Sample>,
    #[serde(default)]
    pub change: ChangeSpec,
}

/// `kind: archive`, and an archive of a series.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchiveDataset {
    pub artifact: ArtifactSpec,
    /// The archive's format; from its file name when absent.
    #[serde(default)]
    pub format: Option<ArchiveFormat>,
    /// The size the tree is declared to have once unpacked: unpacking stops
    /// past it (an archive bomb), and `check` sizes the guest's disk by it.
    /// Absent: [`DEFAULT_EXPANSION`] times the archive's size.
    #[serde(default)]
    pub unpacked_size: Option<ByteSize>,
    /// Published archives are public data; say `public: false` for one
    /// that is not.
    #[serde(default = "yes")]
    pub public: bool,
    #[serde(default)]
    pub sample: Option<Sample>,
    #[serde(default)]
    pub change: ChangeSpec,
}

fn yes() -> bool {
    true
}

/// An archive that unpacks to more than this many times its size without
/// an `unpacked_size:` is taken for a bomb (xz-compressed source code is
/// about 8x).
pub const DEFAULT_EXPANSION: u64 = 20;

/// `kind: trees`: the history study over real trees, oldest first.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreesDataset {
    pub trees: Vec<TreeSpec>,
    /// As [`FolderDataset::public`]: private unless said.
    #[serde(default)]
    pub public: bool,
    /// A quick look at a series of big trees: the same seeded subset of
    /// paths in each (see `labrun_dataset::sample`), so the growth from one
    /// tree to the next is the growth of the files sampled.
    #[serde(default)]
    pub sample: Option<Sample>,
}

/// One tree of a series.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub enum TreeSpec {
    Files(String),
    Archive(Box<SeriesArchive>),
}

/// An archive in a series: its own `public`, `sample` and `change` would
/// mean nothing there (the next tree is the change).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeriesArchive {
    pub artifact: ArtifactSpec,
    #[serde(default)]
    pub format: Option<ArchiveFormat>,
    #[serde(default)]
    pub unpacked_size: Option<ByteSize>,
}

/// A series shorter than this is no series.
const MIN_TREES: usize = 2;
/// The plan walks every tree in every tool cycle: a bound that keeps a
/// mistake from becoming a week-long run.
pub const MAX_TREES: usize = 64;

pub(crate) fn validate_folder(d: &FolderDataset, out: &mut Vec<Problem>) {
    check_path(&d.path, "dataset.path", out);
    check_sample(d.sample.as_ref(), "dataset.sample", out);
    check_change(&d.change, "dataset.change", out);
}

pub(crate) fn validate_archive(d: &ArchiveDataset, out: &mut Vec<Problem>) {
    check_archive(
        &d.artifact,
        d.format,
        d.unpacked_size,
        "dataset.artifact",
        out,
    );
    check_sample(d.sample.as_ref(), "dataset.sample", out);
    check_change(&d.change, "dataset.change", out);
}

pub(crate) fn validate_trees(d: &TreesDataset, out: &mut Vec<Problem>) {
    if !(MIN_TREES..=MAX_TREES).contains(&d.trees.len()) {
        out.push(Problem::new(
            "dataset.trees",
            format!(
                "a series needs {MIN_TREES} to {MAX_TREES} trees, oldest first (it has {}): for one tree use `kind: files` or `kind: archive`",
                d.trees.len()
            ),
        ));
    }
    for (i, t) in d.trees.iter().enumerate() {
        match t {
            TreeSpec::Files(path) => check_path(path, &format!("dataset.trees[{i}].files"), out),
            TreeSpec::Archive(a) => check_archive(
                &a.artifact,
                a.format,
                a.unpacked_size,
                &format!("dataset.trees[{i}].archive.artifact"),
                out,
            ),
        }
    }
    check_sample(d.sample.as_ref(), "dataset.sample", out);
}

fn check_path(path: &str, at: &str, out: &mut Vec<Problem>) {
    if path.trim().is_empty() {
        out.push(Problem::new(
            at,
            "expected the folder to back up, e.g. `/srv/photos` (relative paths are read from the lab file's folder)",
        ));
    }
}

fn check_sample(sample: Option<&Sample>, at: &str, out: &mut Vec<Problem>) {
    if let Some(s) = sample
        && !(s.fraction > 0.0 && s.fraction <= 1.0)
    {
        out.push(Problem::new(
            format!("{at}.fraction"),
            format!(
                "{} is not a share of the files: give one above 0 and at most 1, e.g. 0.1",
                s.fraction
            ),
        ));
    }
}

fn check_change(change: &ChangeSpec, at: &str, out: &mut Vec<Problem>) {
    if let Err(message) = change.validate() {
        out.push(Problem::new(format!("{at}.fraction"), message));
    }
}

fn check_archive(
    artifact: &ArtifactSpec,
    format: Option<ArchiveFormat>,
    unpacked_size: Option<ByteSize>,
    at: &str,
    out: &mut Vec<Problem>,
) {
    out.extend(crate::artifact_check::validate_artifact(
        artifact,
        at,
        crate::artifact_check::ArtifactUse::Dataset,
    ));
    if format.is_none() && archive_format(artifact, None).is_none() {
        let parent = at.trim_end_matches(".artifact");
        out.push(Problem::new(
            format!("{parent}.format"),
            "the archive's format cannot be told from its file name: add `format:` (tar, tar-gz, tar-xz, tar-zst, zip or deb)",
        ));
    }
    if unpacked_size.is_some_and(|s| s.bytes() == 0) {
        let parent = at.trim_end_matches(".artifact");
        out.push(Problem::new(
            format!("{parent}.unpacked_size"),
            "an archive that unpacks to nothing is no dataset: give its unpacked size, e.g. `1.6GB`",
        ));
    }
}

/// The format of the file the host copies into the guest: the member a
/// `.deb` is reduced to, else the downloaded file.
pub fn archive_format(
    artifact: &ArtifactSpec,
    declared: Option<ArchiveFormat>,
) -> Option<ArchiveFormat> {
    if declared.is_some() {
        return declared;
    }
    let name = match &artifact.extract {
        labrun_artifact::Extract::Tar(member) | labrun_artifact::Extract::DebMember(member) => {
            member.rsplit('/').next().unwrap_or(member).to_string()
        }
        // A .deb's name ends in `.deb` whatever its version: its data.
        _ => artifact.file_name().ok()?.to_string(),
    };
    ArchiveFormat::from_file_name(&name)
}

impl FolderDataset {
    /// The plan, naming the folder as the lab wrote it: the host replaces
    /// it with the guest's copy when it pushes one.
    pub fn plan(&self) -> TreePlan {
        TreePlan {
            source: TreeSource::Folder {
                path: self.path.clone(),
                manifest_sha256: None,
            },
            change: self.change,
            sample: self.sample,
            public: self.public,
        }
    }
}

impl ArchiveDataset {
    /// The plan; the archive's place in the guest, digest and bound are
    /// filled in by the host when it copies it there.
    pub fn plan(&self) -> TreePlan {
        TreePlan {
            source: pending_archive(&self.artifact, self.format),
            change: self.change,
            sample: self.sample,
            public: self.public,
        }
    }
}

impl TreesDataset {
    /// The history study's source: the trees, oldest first.
    pub fn history_source(&self) -> labrun_evidence::HistorySource {
        labrun_evidence::HistorySource::Trees {
            trees: self.sources(),
            public: self.public,
            sample: self.sample,
        }
    }

    pub fn sources(&self) -> Vec<TreeSource> {
        self.trees
            .iter()
            .map(|t| match t {
                TreeSpec::Files(path) => TreeSource::Folder {
                    path: path.clone(),
                    manifest_sha256: None,
                },
                TreeSpec::Archive(a) => pending_archive(&a.artifact, a.format),
            })
            .collect()
    }
}

/// An archive the host has not copied yet: no path, no digest, no bound.
fn pending_archive(artifact: &ArtifactSpec, format: Option<ArchiveFormat>) -> TreeSource {
    TreeSource::Archive {
        path: String::new(),
        format: archive_format(artifact, format).unwrap_or(ArchiveFormat::Tar),
        sha256: String::new(),
        max_bytes: 0,
    }
}

/// "private: no path of it in the evidence" or "public".
pub fn privacy_words(public: bool) -> &'static str {
    if public {
        "public: its paths may appear in the evidence"
    } else {
        "private: no path of it in the evidence, counts and digests only"
    }
}

/// One tree's source in words, for `check`.
pub fn source_words(source: &TreeSource) -> String {
    match source {
        TreeSource::Folder { path, .. } => format!("folder {path}"),
        TreeSource::Archive { format, .. } => format!("{format} archive"),
    }
}

/// ", a seeded 10% of {files} (seed 1)", or nothing without a sample.
pub fn sample_words(sample: Option<Sample>, files: &str) -> String {
    sample.map_or(String::new(), |s| {
        format!(
            ", a seeded {}% of {files} (seed {})",
            s.fraction * 100.0,
            s.seed
        )
    })
}

/// A single tree's dataset in one line, for `check`.
pub fn describe_plan(plan: &TreePlan) -> String {
    let sample = sample_words(plan.sample, "its files");
    format!(
        "{}{sample} ({}); each change step rewrites {}% of its bytes (seed {})",
        source_words(&plan.source),
        privacy_words(plan.public),
        plan.change.fraction * 100.0,
        plan.change.seed
    )
}
